"""reflected-xss only where a response can be HTML (qe/roles/_web_flows.py,
_web_flow_sinks.json_body, _web_taint's TLS scope): a dict a view returns or
hands to make_response() is sent as JSON, and the ALPN protocol the TLS
handshake settled is the server's choice; request text sent as a string,
a name also given text, and the client certificate's subject stay."""

from __future__ import annotations

import ast

from superqode_ls.qe.roles._web import web_patterns

APP = '''\
from quart import Quart, make_response, request, jsonify

app = Quart(__name__)


@app.route("/alpn")
async def alpn():
    proto = request.scope["extensions"]["tls"]["alpn_protocol"]
    return await make_response(proto)  # SAFE-tls-alpn


@app.route("/cert")
async def cert():
    subject = request.scope["extensions"]["tls"]["client_cert_name"]
    as_dict = dict(part.split("=") for part in subject.split(", "))
    return await make_response(as_dict)  # SAFE-dict-body


@app.route("/cert-text")
async def cert_text():
    subject = request.scope["extensions"]["tls"]["client_cert_name"]
    return await make_response(subject)  # BAD-client-cert-subject


@app.route("/echo")
async def echo():
    data = {"q": request.args.get("q")}
    return data  # SAFE-returned-dict


@app.route("/json")
async def as_json():
    return await make_response(jsonify(q=request.args.get("q")))  # SAFE-jsonify


@app.route("/text")
async def text():
    q = request.args.get("q")
    return await make_response(q)  # BAD-text


@app.route("/mixed")
async def mixed():
    body = {"q": 1}
    if request.args.get("raw"):
        body = request.args.get("q")
    return body  # BAD-name-also-given-text
'''


def test_json_and_tls_values_are_no_xss_request_text_stays():
    hits = {n.lineno for n, rule, *_ in web_patterns(ast.parse(APP), "app.py", APP)
            if rule == "reflected-xss"}
    marks = {i: line.split("# ")[-1] for i, line in enumerate(APP.splitlines(), 1) if "# " in line}
    assert {t for t in marks.values() if t.startswith("BAD")} == {marks[i] for i in hits}
