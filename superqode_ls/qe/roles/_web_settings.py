"""A web application's cross-site settings (``_web``'s other checks), on
the syntax tree of one file:

- ``cors-credentials``: any origin allowed *with* credentials: flask-cors'
  ``CORS(app, supports_credentials=True)`` with no origins or ``"*"`` (it
  then echoes each caller's origin), Starlette/FastAPI's ``CORSMiddleware``
  with ``allow_origins=["*"]`` and ``allow_credentials=True``, django-cors-
  headers' ``CORS_ALLOW_ALL_ORIGINS`` with ``CORS_ALLOW_CREDENTIALS``, or a
  handler that sets ``Access-Control-Allow-Origin`` to ``*`` or to the
  request's own ``Origin`` beside ``Access-Control-Allow-Credentials:
  true``: any site the user visits reads their authenticated responses.
  Any origin without credentials is a public API (quiet), and so is a named
  list of origins with them;
- ``csrf-disabled``: ``WTF_CSRF_ENABLED = False`` (Flask-WTF), Django's
  ``MIDDLEWARE`` with sessions but without ``CsrfViewMiddleware``, and
  ``@csrf_exempt`` on a view that changes state (saves, deletes, creates,
  updates a queryset, runs SQL): another site's form acts as the
  logged-in user. An exempt view that only reads stays quiet.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ...models import Severity
from ._web_sinks import (
    Hit,
    Scopes,
    _const_str,
    _func_name,
    _is_false,
    _is_true,
    _keyword,
    _name_of,
    from_request,
)

CWE = {"cors-credentials": ("CWE-942",), "csrf-disabled": ("CWE-352",)}

_NEEDS = re.compile(r"WTF_CSRF|CSRF_ENABLED|csrf_exempt|MIDDLEWARE|CORS|Access-Control-Allow")
_CSRF_FLAGS = {"WTF_CSRF_ENABLED", "CSRF_ENABLED", "WTF_CSRF_CHECK_DEFAULT"}
_ALLOW_ALL = {"CORS_ORIGIN_ALLOW_ALL", "CORS_ALLOW_ALL_ORIGINS"}
_ORIGIN = "access-control-allow-origin"
_CREDENTIALS = "access-control-allow-credentials"
# what a view that changes state does
_WRITES = {"save", "delete", "create", "execute", "executemany", "commit", "bulk_create",
           "get_or_create", "update_or_create", "set_password"}
_SETTINGS_FILE = re.compile(r"(?i)(settings|config|conf)[^/]*\.py$")


def needs(text: str) -> bool:
    return bool(_NEEDS.search(text))


def _any_origin(node: ast.AST | None) -> bool:
    """``"*"``, ``["*"]``, or a resources dict whose origins are ``"*"``."""
    if node is None:
        return False
    if _const_str(node) in ("*", ".*", r".*"):
        return True
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return any(_any_origin(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(_any_origin(v) for k, v in zip(node.keys, node.values)
                   if k is None or _const_str(k) in (None, "origins") or isinstance(v, ast.Dict))
    return False


def _cors_call(node: ast.Call) -> bool:
    name = _func_name(node)
    if name in ("CORS", "cross_origin"):
        if not _is_true(_keyword(node, "supports_credentials")):
            return False
        origins = _keyword(node, "origins")
        resources = _keyword(node, "resources")
        if origins is not None:
            return _any_origin(origins)
        return resources is None or _any_origin(resources)
    if "CORSMiddleware" in {_name_of(a) for a in node.args} or name == "CORSMiddleware":
        return _is_true(_keyword(node, "allow_credentials")) and (
            _any_origin(_keyword(node, "allow_origins"))
            or _const_str(_keyword(node, "allow_origin_regex")) in (".*", ".+"))
    return False


def _headers(nodes: list[ast.AST]) -> Iterator[tuple[ast.AST, str, ast.AST]]:
    """Response headers a scope sets: ``resp.headers["X"] = v``, ``resp["X"] =
    v``, ``headers.add("X", v)``, ``{"X": v}``."""
    for n in nodes:
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Subscript) and (key := _const_str(t.slice)):
                    yield n, key.lower(), n.value
        elif isinstance(n, ast.Call) and _func_name(n) in ("add", "set", "setdefault", "append",
                                                           "add_header", "set_header") \
                and len(n.args) == 2 and (key := _const_str(n.args[0])):
            yield n, key.lower(), n.args[1]
        elif isinstance(n, ast.Dict):
            for k, v in zip(n.keys, n.values):
                if k is not None and (key := _const_str(k)):
                    yield n, key.lower(), v


def _cors(scope: ast.AST, nodes: list[ast.AST]) -> Iterator[Hit]:
    for n in nodes:
        if isinstance(n, ast.Call) and _cors_call(n):
            yield (n, "cors-credentials", "Any origin allowed with credentials",
                   (f"{_func_name(n)}() allows every origin and credentials together: the "
                    "library answers each caller with its own Origin, so any site the user "
                    "visits reads their authenticated responses. Name the allowed origins."),
                   Severity.high)
    # headers set together, unconditionally: the statements of the scope's
    # own body (a CORS library sets each under its own option's ``if``)
    body = getattr(scope, "body", [])
    direct = [n for n in nodes if isinstance(n, ast.Dict)] + [
        s.value if isinstance(s, ast.Expr) else s for s in body]
    headers = list(_headers(direct))
    credentials = any(key == _CREDENTIALS and (_is_true(v) or str(_const_str(v)).lower() == "true")
                      for _n, key, v in headers)
    if credentials:
        for n, key, v in headers:
            if key == _ORIGIN and (_const_str(v) == "*" or from_request(v, set())):
                yield (n, "cors-credentials", "Any origin allowed with credentials",
                       ("Access-Control-Allow-Origin is '*' or the caller's own Origin, with "
                        "Access-Control-Allow-Credentials: true: any site reads the user's "
                        "authenticated responses. Answer only origins from a fixed list."),
                       Severity.high)
    if scope is not None and isinstance(scope, ast.Module):
        flags = {t.id: a for a in nodes if isinstance(a, ast.Assign)
                 for t in a.targets if isinstance(t, ast.Name)}
        every = next((flags[k] for k in _ALLOW_ALL if k in flags and _is_true(flags[k].value)), None)
        if every is not None and "CORS_ALLOW_CREDENTIALS" in flags \
                and _is_true(flags["CORS_ALLOW_CREDENTIALS"].value):
            yield (every, "cors-credentials", "Any origin allowed with credentials",
                   ("CORS_ALLOW_ALL_ORIGINS with CORS_ALLOW_CREDENTIALS: every site reads the "
                    "user's authenticated responses. List the allowed origins instead."),
                   Severity.high)


def _for_tests(nodes: list[ast.AST]) -> list[tuple[int, int]]:
    """The lines of the scope's test configuration: a class named for tests
    (``class TestingConfig(BaseConfig)``), a call or dict that also sets
    ``TESTING=True``. Flask-WTF's own docs turn CSRF off there for the test
    client; the app's real configuration is elsewhere."""
    out = [(n.lineno, n.end_lineno or n.lineno) for n in nodes
           if isinstance(n, ast.ClassDef) and _TEST_CONFIG.search(n.name)]
    for n in nodes:
        pairs = [(kw.arg, kw.value) for kw in n.keywords] if isinstance(n, ast.Call) else (
            [(_const_str(k), v) for k, v in zip(n.keys, n.values) if k is not None]
            if isinstance(n, ast.Dict) else [])
        if any(k == "TESTING" and _is_true(v) for k, v in pairs):
            line = getattr(n, "lineno", 0)
            out.append((line, getattr(n, "end_lineno", None) or line))
    return out


def _csrf_off(nodes: list[ast.AST]) -> Iterator[Hit]:
    tests: list[tuple[int, int]] | None = None
    for n in nodes:
        pairs: list[tuple[ast.AST, str | None, ast.AST]] = []
        if isinstance(n, ast.Assign):
            for t in n.targets:
                key = _name_of(t) if isinstance(t, ast.Name | ast.Attribute) else (
                    _const_str(t.slice) if isinstance(t, ast.Subscript) else None)
                pairs.append((n, key, n.value))
        elif isinstance(n, ast.Call):
            pairs.extend((n, kw.arg, kw.value) for kw in n.keywords)
        elif isinstance(n, ast.Dict):
            pairs.extend((n, _const_str(k), v) for k, v in zip(n.keys, n.values) if k is not None)
        for node, key, value in pairs:
            if key in _CSRF_FLAGS and _is_false(value):
                if tests is None:
                    tests = _for_tests(nodes)
                if any(lo <= getattr(node, "lineno", 0) <= hi for lo, hi in tests):
                    continue
                yield (node, "csrf-disabled", "CSRF protection turned off",
                       (f"{key} = False turns off the forms' CSRF tokens: another site's page "
                        "can submit them as the logged-in user. Keep it on (exempt only "
                        "token-authenticated API views)."), Severity.medium)


def _middleware(nodes: list[ast.AST], rel: str) -> Iterator[Hit]:
    if not _SETTINGS_FILE.search(rel):
        return
    for n in nodes:
        if isinstance(n, ast.Assign) and any(_name_of(t) in ("MIDDLEWARE", "MIDDLEWARE_CLASSES")
                                             for t in n.targets) \
                and isinstance(n.value, ast.List | ast.Tuple):
            names = {_const_str(e) or "" for e in n.value.elts}
            if any(x.endswith("SessionMiddleware") for x in names) \
                    and not any(x.endswith("CsrfViewMiddleware") for x in names):
                yield (n, "csrf-disabled", "CSRF middleware missing",
                       ("MIDDLEWARE has sessions but no django.middleware.csrf."
                        "CsrfViewMiddleware: no form or POST view is protected against CSRF. "
                        "Put it back."), Severity.medium)


_TEST_CONFIG = re.compile(r"(?i)test")
# a signature checked by the view (``unsign``, ``unsign_bounce_id``, ``compare_digest``)
_SIGNED = re.compile(r"(?i)^unsign|compare_digest|^check_token$|^(verify|check)_?sig"
                     r"|constant_time_compare")


# what acts as the browser's logged-in user: CSRF rides on that cookie
_SESSION_NAMES = re.compile(r"(?i)login|authenticated|current_user|session|permission"
                            r"|user_passes|staff|superuser|admin")


def _session_user(scope: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST]) -> bool:
    """The view acts as the session's user: it reads ``request.user`` or
    ``request.session``, or a decorator or call names a login
    (``@login_required``, ``@staff_member_required``). A view that does
    neither (an API key in a header, a ping URL's key) gives another site's
    page nothing its own request could not do."""
    for d in scope.decorator_list:
        if _SESSION_NAMES.search(_name_of(d.func if isinstance(d, ast.Call) else d) or ""):
            return True
    return any(isinstance(n, ast.Attribute) and (n.attr in ("user", "session", "auth")
                                                 or _SESSION_NAMES.search(n.attr))
               or isinstance(n, ast.Name) and _SESSION_NAMES.search(n.id)
               for n in nodes)


_TOKEN_NAMES = re.compile(r"(?i)auth|api_?key|token|signature|hmac")


def _token_auth(scope: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST]) -> bool:
    """The view is authenticated by what the request itself carries: a
    decorator named for it (``@authorize``, ``@api_key_required``), a key or
    token in its URL (``ping_key``), or a header it reads. A view with no
    authentication at all stays: on an intranet, another site's page still
    reaches it through the user's browser."""
    if any(_TOKEN_NAMES.search(_name_of(d.func if isinstance(d, ast.Call) else d) or "")
           for d in scope.decorator_list):
        return True
    a = scope.args
    # a key in the URL, also an unguessable UUID (``<uuid:code>``, ``code: UUID``)
    if any(_TOKEN_NAMES.search(p.arg) or p.arg.endswith("key")
           or (p.annotation is not None and _name_of(p.annotation) == "UUID")
           for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)):
        return True
    return any(isinstance(n, ast.Attribute) and n.attr in ("headers", "META")
               and _name_of(n.value) == "request" for n in nodes)


_READ_SQL = re.compile(r"(?is)^\s*(select|with)\b(?!.*\b(insert|update|delete)\b)")


def _reads(call: ast.Call, constants: dict[str, str]) -> bool:
    """An ``execute()`` of a constant query that only reads (``SELECT``)."""
    if _func_name(call) not in ("execute", "executemany") or not call.args:
        return False
    sql = call.args[0]
    text = constants.get(sql.id) if isinstance(sql, ast.Name) else _const_str(sql)
    return bool(text and _READ_SQL.match(text))


def _exempt(scope: ast.AST, nodes: list[ast.AST]) -> Iterator[Hit]:
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        return
    mark = next((d for d in scope.decorator_list if _name_of(d) == "csrf_exempt"), None)
    if mark is None:
        return
    # reading the POST body alone changes nothing; a write does (also a
    # queryset's update(): ``User.objects.filter(...).update(...)``)
    constants = {t.id: text for n in nodes if isinstance(n, ast.Assign)
                 and (text := _const_str(n.value)) is not None
                 for t in n.targets if isinstance(t, ast.Name)}
    writes = any(isinstance(n, ast.Call) and ((_func_name(n) in _WRITES and not _reads(n, constants))
                                              or (
        _func_name(n) == "update" and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Call)
        and _func_name(n.func.value) in ("filter", "exclude", "all"))) for n in nodes)
    # a view that checks a signature of its own (an emailed link's signed
    # token, a webhook's HMAC) is authenticated by it, not by the cookie that
    # another site's page could send
    if writes and not any(isinstance(n, ast.Call) and _SIGNED.search(_func_name(n)) for n in nodes) \
            and (_session_user(scope, nodes) or not _token_auth(scope, nodes)):
        yield (mark, "csrf-disabled", "View that changes state exempt from CSRF",
               (f"@csrf_exempt on {scope.name}(), which changes state: another site's page "
                "can make the logged-in user's browser call it. Keep the CSRF check (send "
                "the token from scripts) unless the view authenticates by a token header."),
               Severity.medium)


def web_settings(scopes: Scopes, rel: str = "") -> Iterator[Hit]:
    for scope, nodes in scopes:
        yield from _cors(scope, nodes)
        yield from _csrf_off(nodes)
        yield from _exempt(scope, nodes)
        if isinstance(scope, ast.Module):
            yield from _middleware(nodes, rel)
