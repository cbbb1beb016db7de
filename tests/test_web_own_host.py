"""SSRF is a URL whose scheme or host the request picks. A URL joined from
the code's own base (a configured API address) and a path the request
gives stays on that host: PowerDNS-Admin's ``urljoin(pdns_api_url,
request.full_path)`` (Werkzeug's path starts with exactly one ``/``),
``base + "/api/" + name``. Their real twins stay: a relative part that can
be absolute (``urljoin(API, request.args["u"])``: ``//evil`` or
``http://evil`` replaces the host), ``base + "/" + name`` (``//evil.com``),
and Django's ``request.path``, which keeps a raw ``//evil.com``
(qe/roles/_web_flow_sinks.py ``_own_host``)."""

from __future__ import annotations

import ast

from superqode_ls.qe.roles._web import web_patterns


def _ssrf(source: str) -> set[int]:
    return {node.lineno for node, rule, *_ in web_patterns(ast.parse(source), "app.py", source)
            if rule == "ssrf"}


FLASK = '''import requests
from urllib.parse import urljoin
from flask import Flask, request

app = Flask(__name__)
API = "http://pdns:8081"


def forward(base):
    url = urljoin(base, request.full_path)
    return requests.request(request.method, url, timeout=5)


@app.route("/proxy")
def proxy():
    url = urljoin(API, request.args["u"])
    return requests.get(url, timeout=5).json()


@app.route("/named")
def named():
    return requests.get(API + "/api/" + request.args["name"], timeout=5).json()


@app.route("/slash")
def slash():
    return requests.get(API + "/" + request.args["name"], timeout=5).json()


@app.route("/path")
def path():
    return requests.get(f"{API}{request.path}", timeout=5).json()


@app.route("/base")
def base():
    return requests.get(urljoin(request.args["base"], "/api/zones"), timeout=5).json()
'''


def test_a_path_under_the_codes_own_host_is_no_ssrf():
    hits = _ssrf(FLASK)
    assert not hits & {11, 22, 32}, hits


def test_a_request_part_that_can_be_absolute_or_pick_the_host_stays():
    assert {17, 27, 37} <= _ssrf(FLASK)


DJANGO = FLASK.replace("from flask import Flask, request\n\napp = Flask(__name__)",
                       "from django.http import HttpRequest as request\n\napp = None")


def test_djangos_request_path_is_not_proved_to_start_with_one_slash():
    assert 11 in _ssrf(DJANGO.replace("def forward(base):", "def forward(request, base):"))
