"""Generated tests never run a function that sends mail or reaches the
network, judged by what it calls through the project's own modules, however
deep and whatever the functions are named."""

from __future__ import annotations

import ast
import asyncio

from superqode_ls.qe.roles import _ghostwrite
from superqode_ls.qe.roles.testgen import TestGenerator

from .deep_helpers import make_ctx, shared_pycache  # noqa: F401 (autouse fixture)
from .test_testgen import generated_tests, log_text


def _why(tmp_path, files: dict[str, str], rel: str, name: str):
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    path = tmp_path / rel
    tree = ast.parse(path.read_text())
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    module = rel[:-3].replace("/", ".")
    sibling = _ghostwrite._Siblings().checker(tree, str(path), module)
    return _ghostwrite._side_effect(_ghostwrite._reachable(defs[name], defs),
                                    _ghostwrite._aliases(tree), sibling)


def test_mail_and_network_sends_are_seen_through_helpers(tmp_path):
    init = {"app/__init__.py": "", "app/api/__init__.py": ""}
    mailer = "import emails\n\ndef deliver(to, body):\n    emails.Message(html=body).send(to=to)\n"
    # Two modules deep, as in full-stack-fastapi-template's test_email route.
    files = {**init, "app/mailer.py": mailer,
             "app/utils.py": "from app.mailer import deliver\n\n"
                             "def send_email(to, body=''):\n    deliver(to, body)\n",
             "app/api/routes.py": "from app.utils import send_email\n\n"
                                  "def test_email(email_to: str):\n    send_email(email_to)\n\n"
                                  "def slug(title: str) -> str:\n    return title.lower()\n"}
    why = _why(tmp_path / "a", files, "app/api/routes.py", "test_email")
    assert why and "send_email" in why and "deliver" in why
    assert _why(tmp_path / "a", files, "app/api/routes.py", "slug") is None
    # Through a module imported by name, and a relative import.
    files = {**init, "app/mailer.py": mailer,
             "app/api/routes.py": "from app import mailer\n\n"
                                  "def notify(to: str):\n    mailer.deliver(to, 'hi')\n"}
    assert _why(tmp_path / "b", files, "app/api/routes.py", "notify")
    files = {**init, "app/net.py": "import httpx\n\ndef fetch(u):\n    return httpx.get(u).text\n",
             "app/api/routes.py": "from ..net import fetch\n\n"
                                  "def title(u: str):\n    return fetch(u)[:10]\n"}
    assert "httpx" in _why(tmp_path / "c", files, "app/api/routes.py", "title")
    # Sends judged by the call: an SMTP client, a socket, Django's mail.
    for src in ("import emails\n\ndef f(x: str):\n    return emails.Message(html=x)\n",
                "from django.core.mail import send_mail as m\n\ndef f(x: str):\n    m('s', x)\n",
                "def f(conn, x: str):\n    conn.sendmail('a', [x], 'body')\n",
                "def f(sock, x: bytes):\n    sock.sendto(x, ('h', 1))\n",
                "import requests as r\n\ndef f(u: str):\n    return r.get(u)\n"):
        assert _why(tmp_path / "d", {"m.py": src}, "m.py", "f"), src
    # A signal sent in-process (flask's template_rendered.send) is not a send.
    assert _why(tmp_path / "d", {"m.py": "def f(sig, x: int):\n    sig.send(x)\n    return x\n"},
                "m.py", "f") is None
    # Modules that import each other end without a loop.
    files = {"p/__init__.py": "", "p/a.py": "from p.b import g\n\ndef f(x: int):\n    return g(x)\n",
             "p/b.py": "from p.a import f\n\ndef g(x):\n    return f(x)\n"}
    assert _why(tmp_path / "e", files, "p/a.py", "f") is None


ROUTES = """\
from app.utils import send_email


def test_email(email_to: str) -> str:
    send_email(email_to=email_to)
    return "sent"


def slug(title: str) -> str:
    return "-".join(title.lower().split())
"""
UTILS = """\
from app.mailer import deliver

EMAILS_ENABLED = False


def send_email(*, email_to: str) -> None:
    assert EMAILS_ENABLED, "no provided configuration for email variables"
    deliver(email_to, "hello")
"""
MAILER = """\
import smtplib


def deliver(to, body):
    with smtplib.SMTP("localhost") as s:
        s.sendmail("app@example.com", [to], body)
"""


def test_a_route_that_mails_through_helpers_is_not_run_its_neighbour_is(make_repo):
    repo = make_repo({"app/__init__.py": "", "app/routes.py": ROUTES, "app/utils.py": UTILS,
                      "app/mailer.py": MAILER})
    out = asyncio.run(TestGenerator().run(make_ctx(repo)))
    assert out.status == "ok", out.reason
    # Before: test_email ran, hit the assert in send_email and was reported as a crash.
    assert out.findings == []
    assert "test_app_routes_slug.py" in generated_tests(repo)
    assert "test_app_routes_test_email.py" not in generated_tests(repo)
    log = log_text(repo)
    assert "app/routes.py::test_email: may have side effects (calls send_email(), which calls" \
        " deliver(), which calls sendmail())" in log, log
