"""Harmless twins of the web checks' flaws, told apart by the code around
them, each beside its real twin that stays shown: a redirect whose target
the request does not pick (a fixed login URL with ``?next=``, this site's
route then a path, this site's origin cut from the request's URL), a custom
``X-`` header put into a page, a double-submit CSRF cookie, SockJS's
JSESSIONID, SQL formatted with ``%d``, a JWT's claims peeked at before the
same token is verified, ``check_hostname = False`` because CERT_NONE was
asked for or to fetch a peer's certificate. Each was a false finding on a
real project (django-wiki, OctoPrint, babybuddy, lemur, social-core,
tornado)."""

from __future__ import annotations

import ast

from superqode_ls.qe.roles._patterns import patterns
from superqode_ls.qe.roles._web import web_patterns
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role


def _web(source: str, rel: str = "app.py") -> set[tuple[str, int]]:
    return {(rule, node.lineno) for node, rule, *_ in web_patterns(ast.parse(source), rel, source)}


def _own(source: str) -> set[tuple[str, int]]:
    return {(rule, node.lineno) for node, rule, *_ in patterns(ast.parse(source))}


def _shown(repo) -> set[tuple[str, int, str]]:
    out = run_role(SecurityTester(), make_ctx(repo))
    return {(f.file, f.range.start_line, f.rule_id.split("+")[0])
            for f in out.findings if f.tool == "superqode-patterns"}


REDIRECTS = """from django.conf import settings
from django.shortcuts import redirect
from flask import Flask, url_for

app = Flask(__name__)


def forbidden(request):
    return redirect(settings.LOGIN_URL + "?next=" + request.path)


def forbidden_f(request):
    return redirect(f"{settings.LOGIN_URL}?next={request.path}")


@app.route("/logs/<path:filename>")
def logs(filename):
    return redirect(url_for("index") + "downloads/logs/" + filename)


def after_login(request):
    return redirect(request.GET["next"])


def slashes(request):
    return redirect(request.path.rstrip("/"))


@app.route("/go/<path:name>")
def route_then_name(name):
    return redirect(url_for("index") + name)


def param_then_query(request):
    target = request.GET["to"]
    return redirect(target + "?next=" + request.path)


def add_slash(request):
    return redirect(request.path + "/")


def add_slash_checked(request):
    if request.path.startswith("//"):
        raise ValueError("a protocol-relative URL")
    return redirect(request.path + "/")
"""


def test_a_redirect_whose_target_the_request_does_not_pick_is_quiet_a_real_one_stays():
    found = {line for rule, line in _web(REDIRECTS) if rule == "open-redirect"}
    # the login URL with ?next= (django-wiki), this site's route then a path
    # (OctoPrint), its own path tested for a leading // (tornado's StaticFileHandler)
    assert not found & {9, 13, 18, 46}
    # the request's next=, its own path with the slashes changed (//evil.com/ ->
    # //evil.com), a route followed by the request's text, a request target then a
    # query, its own path then a slash (//evil.com -> //evil.com/)
    assert {22, 26, 31, 36, 40} <= found


HELPERS = {
    "app/util.py": """import flask
from django.conf import settings
from django.shortcuts import redirect


def response_forbidden(request):
    return redirect(settings.LOGIN_URL + "?next=" + request.path)


def redirect_to_app(request, target):
    url = request.url
    base = url[: url.find(flask.url_for("index") + "api")]
    return flask.redirect(base + target)
""",
    "app/views.py": """from django.views.generic import FormView
from flask import Flask, request, url_for

from .util import redirect_to_app, response_forbidden

app = Flask(__name__)


class Upload(FormView):
    def form_valid(self, form):
        return response_forbidden(self.request)


@app.route("/download/<path:filename>")
def download(filename):
    return redirect_to_app(request, url_for("index") + "downloads/" + filename)


@app.route("/forward")
def forward():
    return redirect_to_app(request, request.args["to"])
""",
}


def test_a_helper_that_redirects_to_this_sites_url_is_quiet_at_its_callers(make_repo):
    found = {(f, line) for f, line, rule in _shown(make_repo(HELPERS)) if rule == "open-redirect"}
    # the helpers themselves: a fixed login URL; this site's origin cut from
    # request.url plus what the caller gives
    assert ("app/util.py", 7) not in found and ("app/util.py", 13) not in found
    assert ("app/views.py", 11) not in found and ("app/views.py", 16) not in found
    # a caller handing the helper the request's own target: base + "@evil.com"
    assert ("app/views.py", 21) in found


HEADERS = """from flask import Flask, make_response, request

app = Flask(__name__)


@app.route("/ingress")
def ingress():
    prefix = request.headers.get("X-Ingress-Path")
    page = "<a href='PREFIX/static/x.css'>"
    page = page.replace("PREFIX", prefix)
    return make_response(page)


@app.route("/meta")
def meta():
    return make_response("<p>" + request.environ["HTTP_X_FORWARDED_HOST"] + "</p>")


@app.route("/query")
def query():
    prefix = request.args.get("p")
    page = "<a href='PREFIX/static/x.css'>"
    page = page.replace("PREFIX", prefix)
    return make_response(page)


@app.route("/agent")
def agent():
    return make_response("<p>" + request.headers["Referer"] + "</p>")


@app.route("/both")
def both():
    prefix = request.headers.get("X-Ingress-Path")
    prefix += request.args.get("p")
    return make_response("<a href='" + prefix + "'>")
"""


def test_a_custom_x_header_in_a_page_is_no_reflected_xss_a_query_parameter_is():
    found = {line for rule, line in _web(HEADERS) if rule == "reflected-xss"}
    assert not found & {11, 16}  # babybuddy's Home Assistant ingress prefix
    assert {24, 29, 36} <= found  # a link sets the query and the Referer; both mixed


COOKIES = """def csrf(response, token):
    response.set_cookie("csrf_token", token, httponly=False)


def angular(response):
    response.set_cookie("XSRF-TOKEN", value=generate_csrf(), httponly=False)


def sticky(handler, cv):
    handler.set_cookie("JSESSIONID", cv)


def login(response, sid):
    response.set_cookie("session", sid, httponly=False)


def remember(response, sid):
    response.set_cookie("auth", sid, httponly=False)


def own_session(response, sid):
    response.set_cookie("sessionid", sid)
"""


def test_a_csrf_cookie_scripts_must_read_and_sockjs_stickiness_are_quiet_a_session_is_not():
    found = {line for rule, line in _web(COOKIES) if rule == "insecure-cookie"}
    assert not found & {2, 6, 10}  # OctoPrint's csrf_token; its vendored SockJS
    assert {14, 18, 22} <= found


SETTINGS = """CSRF_COOKIE_NAME = "pretalx_csrftoken"
CSRF_COOKIE_HTTPONLY = False
SESSION_COOKIE_HTTPONLY = False
"""


def test_django_csrf_cookie_readable_by_scripts_is_quiet_the_session_cookie_is_not():
    found = {line for rule, line in _web(SETTINGS, "app/settings.py") if rule == "insecure-cookie"}
    assert found == {3}  # pretalx: the CSRF line is Django's default, meant for the page's script


SQL = """import sqlalchemy


def windowed(q, size, name, cur):
    q.filter(sqlalchemy.text("rownum %% %d=1" % size))
    cur.execute("SELECT * FROM t WHERE id = %(id)d AND n > %.2f" % {"id": size, "n": 1.5})
    cur.execute("SELECT * FROM t WHERE name = '%s'" % name)
    cur.execute("SELECT * FROM t WHERE id = %d AND name = '%s'" % (size, name))
    q.filter(sqlalchemy.text("initial = '%c'" % name))
"""


def test_sql_formatted_only_with_numeric_conversions_is_quiet_s_and_c_stay():
    found = {line for rule, line in _web(SQL) if rule == "sql-injection"}
    assert not found & {5, 6}  # lemur's windowed_query: %d takes nothing but a number
    assert {7, 8, 9} <= found


JWT = """import jwt


class AzureAD:
    def get_unverified_claims(self, id_token):
        return jwt.decode(id_token, options={"verify_signature": False})

    def validate(self, id_token):
        claims = self.get_unverified_claims(id_token)
        return jwt.decode(id_token, key=self.key(claims), algorithms=["RS256"],
                          audience=self.aud)


def inline(token, key):
    header = jwt.decode(token, options={"verify_signature": False})
    return jwt.decode(token, key, algorithms=[header["alg"]])


class Trusting:
    def peek(self, token):
        return jwt.decode(token, options={"verify_signature": False})

    def user(self, token):
        return self.peek(token)["sub"]


def other_token(token, refresh, key):
    claims = jwt.decode(token, options={"verify_signature": False})
    jwt.decode(refresh, key, algorithms=["HS256"])
    return claims
"""


def test_jwt_claims_peeked_at_before_the_same_token_is_verified_are_quiet():
    found = {line for rule, line in _own(JWT) if rule == "jwt-no-verify"}
    assert not found & {6, 15}  # social-core's azuread: its caller verifies the token
    assert {21, 28} <= found  # never verified; another token verified


TLS = """import hashlib
import socket
import ssl


def to_context(options):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if options["cert_reqs"] == ssl.CERT_NONE:
        context.check_hostname = False
    context.verify_mode = options["cert_reqs"]
    return context


def certificate_of(host, port):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    sock = context.wrap_socket(socket.create_connection((host, port)), server_hostname=host)
    try:
        der = sock.getpeercert(True)
    finally:
        sock.close()
    return ssl.DER_cert_to_PEM_cert(der)


def client(host, port):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context.wrap_socket(socket.create_connection((host, port)), server_hostname=host)


def post(host, body):
    context = ssl.create_default_context()
    context.check_hostname = False
    sock = context.wrap_socket(socket.create_connection((host, 443)))
    peer = sock.getpeercert(True)
    sock.sendall(body)
    return peer


def fingerprint(sock, host, digest):
    context = ssl.create_default_context()
    context.check_hostname = False
    ssl_sock = ssl_wrap_socket(sock, context, server_hostname=host)
    if hashlib.sha256(ssl_sock.getpeercert(binary_form=True)).hexdigest() != digest:
        raise ssl.SSLError("fingerprint")
    return Verified(socket=ssl_sock)


def unless_none(options):
    context = ssl.create_default_context()
    if options["cert_reqs"] != ssl.CERT_NONE:
        pass
    else:
        context.check_hostname = False
    return context
"""


def test_hostname_check_off_for_cert_none_or_to_fetch_a_certificate_is_quiet():
    found = {line for rule, line in _own(TLS) if rule == "tls-no-hostname-check"}
    assert not found & {9, 16}  # tornado's ssl_options_to_context; lemur's get_certificate_via_tls
    # a connection handed on; data sent over it; a fingerprint checked on a
    # connection handed on (urllib3); the else of a != test
    assert {28, 35, 44, 56} <= found
