"""What the flagged module proves about where a value comes from or how long
an object lives (qe/noise_trusted.py). Each case comes from a project judged
by hand (isso, WeasyPrint, mopidy, pipx, django-debug-toolbar, twine), with
the dangerous shape beside it that must stay shown."""

from __future__ import annotations

from pathlib import Path

from superqode_ls.qe.noise import FileLines, filter_findings
from tests.role_helpers import lint_finding


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _sec(rule, file, line, **kw):
    return lint_finding(rule, file, line, role="security_tester", tool="bandit",
                        category="security", **kw)


def _noise(root: Path, findings) -> dict[tuple[str, int], str | None]:
    found = filter_findings(findings, read_line=FileLines(root), threshold=0.7).findings
    return {(f.file, f.range.start_line): f.noise for f in found}


ANONYMIZE = '''import ipaddress


def anonymize(remote_addr):
    try:
        ipv4 = ipaddress.IPv4Address(remote_addr)
        return u''.join(ipv4.exploded.rsplit('.', 1)[0]) + '.' + '0'
    except ipaddress.AddressValueError:
        return "0.0.0.0"


def migrate(ip):
    return {"remote_addr": anonymize(ip if ip is not None else "0.0.0.0")}


def ticket(environ, include_ip):
    if include_ip:
        remote_addr = environ["REMOTE_ADDR"]
    else:
        remote_addr = "0.0.0.0"
    return remote_addr
'''

SERVER = '''import socket
from http.server import HTTPServer


def listen_all():
    sock = socket.socket()
    sock.bind(("0.0.0.0", 8080))
    return sock


def defaults():
    return {"host": "0.0.0.0"}
'''

CONFIG = '''HOST = "0.0.0.0"
SETTINGS = {"bind": "0.0.0.0"}
'''


def test_an_all_interfaces_address_used_as_a_value_is_noise_a_bind_stays(tmp_path):
    _write(tmp_path, {"isso/utils.py": ANONYMIZE, "app/server.py": SERVER,
                      "app/config.py": CONFIG,
                      "app/main.py": "from aiohttp import web\n\n\ndef main(app):\n"
                                     "    web.run_app(app, \"0.0.0.0\", 8080)\n"})
    got = _noise(tmp_path, [_sec("B104", "isso/utils.py", 9), _sec("B104", "isso/utils.py", 13),
                            _sec("B104", "isso/utils.py", 20),
                            _sec("B104", "app/server.py", 7), _sec("B104", "app/server.py", 12),
                            _sec("B104", "app/config.py", 1), _sec("B104", "app/config.py", 2),
                            _sec("B104", "app/main.py", 5)])
    assert "binds nothing" in got[("isso/utils.py", 9)]  # the anonymised IP it returns
    assert "binds nothing" in got[("isso/utils.py", 13)]  # passed on to anonymize()
    assert "binds nothing" in got[("isso/utils.py", 20)]  # the peer's address left out
    assert got[("app/server.py", 7)] is None  # sock.bind(("0.0.0.0", ...))
    assert got[("app/server.py", 12)] is None  # a host default in a server module
    assert got[("app/config.py", 1)] is None  # HOST = ...: read by whatever binds
    assert got[("app/config.py", 2)] is None  # {"bind": ...}
    assert got[("app/main.py", 5)] is None  # run_app(app, "0.0.0.0"): the host, by position


BLEED = '''from xml.etree import ElementTree


def draw_bleed(stream, width, height):
    with stream.artifact():
        svg = f\'\'\'<svg height="{height}" width="{width}">\'\'\'
        svg += f\'<path d="M0,0 h{width}" />\'
        svg += '</svg>'
        tree = ElementTree.fromstring(svg)
    return tree


def draw_glyph(svg):
    return ElementTree.fromstring(svg)
'''

IMAGES = '''from xml.etree import ElementTree

from .urls import fetch


def load(url):
    with fetch(url) as result:
        return ElementTree.fromstring(result["string"])
'''

VIEWS = '''from xml.etree import ElementTree

from flask import request


def upload():
    return ElementTree.fromstring(request.data)
'''

PLAYLIST = '''import io
import urllib.parse
from xml.etree import ElementTree as ET


def parse_xspf(data):
    for _event, element in ET.iterparse(io.BytesIO(data)):
        yield element.text
'''

LXML = '''from lxml import etree


def parse(path):
    return etree.parse(path)
'''


def test_stdlib_xml_on_its_own_text_or_own_files_is_noise_a_request_or_fetch_stays(tmp_path):
    _write(tmp_path, {"pkg/draw.py": BLEED, "pkg/images.py": IMAGES, "pkg/views.py": VIEWS,
                      "pkg/parsers.py": PLAYLIST, "pkg/lx.py": LXML})
    got = _noise(tmp_path, [_sec("B314", "pkg/draw.py", 9), _sec("B314", "pkg/draw.py", 14),
                            _sec("B314", "pkg/images.py", 8), _sec("B314", "pkg/views.py", 7),
                            _sec("B314", "pkg/parsers.py", 7), _sec("B405", "pkg/parsers.py", 3),
                            _sec("B320", "pkg/lx.py", 5)])
    assert "builds itself" in got[("pkg/draw.py", 9)]  # WeasyPrint's bleed marks
    assert "nothing from a request" in got[("pkg/draw.py", 14)]  # a font's SVG table
    assert "nothing from a request" in got[("pkg/parsers.py", 7)]  # mopidy's playlists
    assert got[("pkg/parsers.py", 3)] is not None  # the import: an advisory already
    assert got[("pkg/images.py", 8)] is None  # what fetch() brought from the network
    assert got[("pkg/views.py", 7)] is None  # a request's body
    assert got[("pkg/lx.py", 5)] is None  # lxml can resolve entities: not this rule's


URLS = '''from urllib.request import urlopen

GITHUB_API_URL = "https://api.github.com/repos/astral-sh/python-build-standalone/releases"
MIRROR = "ftp://example.org/index"


def releases():
    with urlopen(GITHUB_API_URL, timeout=30) as response:
        return response.read()


def mirror():
    return urlopen(MIRROR)


def anything(url):
    return urlopen(url)
'''


def test_urlopen_of_a_constant_https_url_is_noise_a_variable_or_other_scheme_stays(tmp_path):
    _write(tmp_path, {"pipx/standalone.py": URLS})
    got = _noise(tmp_path, [_sec("B310", "pipx/standalone.py", 8),
                            _sec("B310", "pipx/standalone.py", 13),
                            _sec("B310", "pipx/standalone.py", 17)])
    assert "GITHUB_API_URL" in got[("pipx/standalone.py", 8)]
    assert got[("pipx/standalone.py", 13)] is None  # ftp://: not http(s)
    assert got[("pipx/standalone.py", 17)] is None  # whatever the caller passes


def test_all_annotated_as_strings_is_noise_objects_in_all_stay(tmp_path):
    _write(tmp_path, {
        "dt/history/__init__.py": "from dt.history.panel import HistoryPanel\n\n"
                                  "__all__: list[str] = [HistoryPanel.panel_id]\n",
        "dt/sql/__init__.py": "from dt.sql.panel import SQLPanel\n\n__all__ = [SQLPanel]\n"})
    got = _noise(tmp_path, [lint_finding("PLE0604", "dt/history/__init__.py", 3),
                            lint_finding("PLE0604", "dt/sql/__init__.py", 3)])
    assert "annotated as strings" in got[("dt/history/__init__.py", 3)]
    assert got[("dt/sql/__init__.py", 3)] is None  # a class in __all__: import * fails


def test_all_of_class_properties_declared_str_is_noise_another_attribute_stays(tmp_path):
    _write(tmp_path, {
        "dt/panels/__init__.py": "class classproperty(property):\n    pass\n\n\n"
                                 "class Panel:\n    @classproperty\n"
                                 "    def panel_id(cls) -> str:\n        return cls.__name__\n\n"
                                 "    @classproperty\n    def weight(cls) -> int:\n"
                                 "        return 1\n",
        "dt/panels/sql/__init__.py": "from dt.panels.sql.panel import SQLPanel\n\n"
                                     "__all__ = [SQLPanel.panel_id]\n",
        "dt/panels/timer/__init__.py": "from dt.panels.timer.panel import TimerPanel\n\n"
                                       "__all__ = [TimerPanel.weight]\n"})
    got = _noise(tmp_path, [lint_finding("PLE0604", "dt/panels/sql/__init__.py", 3),
                            lint_finding("PLE0604", "dt/panels/timer/__init__.py", 3)])
    assert "declares to return str" in got[("dt/panels/sql/__init__.py", 3)]
    assert got[("dt/panels/timer/__init__.py", 3)] is None  # an int property: import * fails


SINGLETON = '''import functools


class Registry:
    @functools.lru_cache()
    def lookup(self, name):
        return name.upper()


REGISTRY = Registry()


class PerCall:
    @functools.lru_cache()
    def lookup(self, name):
        return name.upper()


def handle(name):
    return PerCall().lookup(name)
'''


def test_a_method_cache_on_a_singleton_is_noise_one_made_per_call_stays(tmp_path):
    _write(tmp_path, {"pkg/reg.py": SINGLETON})
    got = _noise(tmp_path, [lint_finding("B019", "pkg/reg.py", 5),
                            lint_finding("B019", "pkg/reg.py", 14)])
    assert "singleton" in got[("pkg/reg.py", 5)]
    assert got[("pkg/reg.py", 14)] is None


RESOLVER = '''import functools


class Resolver:
    @functools.lru_cache()
    def username(self):
        return "me"
'''


def test_a_method_cache_in_a_command_line_tool_is_noise_in_a_web_app_it_stays(tmp_path):
    cli, web = tmp_path / "cli", tmp_path / "web"
    _write(cli, {"twine/auth.py": RESOLVER,
                 "pyproject.toml": '[project]\nname = "twine"\n\n[project.scripts]\n'
                                   'twine = "twine.__main__:main"\n'})
    _write(web, {"app/auth.py": RESOLVER, "app/views.py": "from flask import Flask\n",
                 "pyproject.toml": '[project]\nname = "app"\n\n[project.scripts]\n'
                                   'app = "app.cli:main"\n'})
    assert "command-line tool" in _noise(cli, [lint_finding("B019", "twine/auth.py", 5)])[
        ("twine/auth.py", 5)]
    assert _noise(web, [lint_finding("B019", "app/auth.py", 5)])[("app/auth.py", 5)] is None


HELPERS = '''from markupsafe import Markup


def highlight(code):
    return Markup(code)


def linkify(code):
    return Markup(code.replace("x", "<a>x</a>"))


def minify_css(css):
    return Markup(css.replace("<style", "<style"))


def link(spec, text=None):
    return Markup(f'<a href="{spec}">{text}</a>')
'''

RENDER = '''import jinja2

from pdoc.helpers import highlight, link, linkify, minify_css

env = jinja2.Environment(loader=jinja2.PackageLoader("pdoc"), autoescape=True)
env.filters["highlight"] = highlight
env.filters["linkify"] = linkify
env.filters["minify_css"] = minify_css
env.filters["link"] = link
'''

FRAME = '''<style>{% filter minify_css %}{% include "theme.css" %}{% endfilter %}</style>
<pre>{{ doc | highlight | linkify }}</pre>
<span>{{ var.annotation | escape | linkify }}</span>
<li>{{ submodule.taken_from | link(text=submodule.name) }}</li>
'''


def test_markup_in_a_filter_that_only_receives_markup_is_noise_on_a_bare_variable_it_stays(
        tmp_path):
    _write(tmp_path, {"pdoc/helpers.py": HELPERS, "pdoc/render.py": RENDER,
                      "pdoc/templates/frame.html.jinja2": FRAME})
    got = _noise(tmp_path, [_sec("B704", "pdoc/helpers.py", 9), _sec("B704", "pdoc/helpers.py", 13),
                            _sec("B704", "pdoc/helpers.py", 17)])
    assert "only receives markup" in got[("pdoc/helpers.py", 9)]  # after highlight or escape
    assert "only receives markup" in got[("pdoc/helpers.py", 13)]  # a {% filter %} block
    assert got[("pdoc/helpers.py", 17)] is None  # {{ spec | link }}: a bare variable
    # the same filters where autoescape is off: the blocks are not escaped
    _write(tmp_path, {"pdoc/render.py": RENDER.replace("autoescape=True", "autoescape=False")})
    got = _noise(tmp_path, [_sec("B704", "pdoc/helpers.py", 13)])
    assert got[("pdoc/helpers.py", 13)] is None


CHECKED = '''import urllib.parse
import urllib.request


def fetch(url):
    if not url.startswith(("http://", "https://")):
        raise ValueError(url)
    return urllib.request.urlopen(url)


def _get(url):
    return urllib.request.urlopen(url)


def read(spec):
    if urllib.parse.urlparse(spec).scheme in ("http", "https"):
        return _get(spec)
    return None


def _any(url):
    return urllib.request.urlopen(url)


def run(app):
    if urllib.parse.urlparse(app).scheme:
        return _any(app)
    return None


def _half(url):
    return urllib.request.urlopen(url)


def one(spec):
    if urllib.parse.urlparse(spec).scheme == "https":
        return _half(spec)


def other(spec):
    return _half(spec)
'''


def test_urlopen_after_a_scheme_check_here_or_in_every_caller_is_noise(tmp_path):
    _write(tmp_path, {"pkg/net.py": CHECKED})
    got = _noise(tmp_path, [_sec("B310", "pkg/net.py", n) for n in (8, 12, 22, 32)])
    assert "checked to be http(s)" in got[("pkg/net.py", 8)]  # the function's own check
    assert "every call of _get()" in got[("pkg/net.py", 12)]  # the caller's check
    assert got[("pkg/net.py", 22)] is None  # any scheme passes (pipx's run.py check)
    assert got[("pkg/net.py", 32)] is None  # one caller does not check
