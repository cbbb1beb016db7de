"""PLE0704 (a bare ``raise`` outside ``except``) in a helper that the whole
project calls only from ``except`` handlers (celery's
``handle_remote_command_error`` in ``bin/base.py``, called from
``bin/control.py``): info noise with the reason said; the same helper also
called outside a handler, or passed on as a callback, stays shown. Real
ruff output on real files."""

from __future__ import annotations

from superqode_ls.qe.roles.lint import LintTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_rules_tools import _at, _filtered, needs_ruff

BASE = '''def handle_remote_command_error(command, exc):
    if isinstance(exc, KeyError):
        raise
    raise RuntimeError(f"{command} failed: {exc}")
'''

CONTROL = '''from .base import handle_remote_command_error


def status(app):
    try:
        return app.ping()
    except Exception as exc:
        handle_remote_command_error("status", exc)
'''

ELSEWHERE = '''from . import base


def graph(app):
    if app is None:
        base.handle_remote_command_error("graph", ValueError("no app"))
'''

CALLBACK = '''from .base import handle_remote_command_error

HANDLERS = [handle_remote_command_error]
'''


@needs_ruff
def test_a_helper_called_only_in_handlers_across_modules_is_noise(make_repo):
    repo = make_repo({"pkg/__init__.py": "", "pkg/base.py": BASE, "pkg/control.py": CONTROL})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    (bare,) = _at(found, "pkg/base.py", 3, "PLE0704")
    assert bare.noise and "called only from except handlers across the project" in bare.noise
    assert "pkg/control.py:8" in bare.noise and bare.severity.value == "info"


@needs_ruff
def test_the_helper_called_outside_a_handler_stays_shown(make_repo):
    repo = make_repo({"pkg/__init__.py": "", "pkg/base.py": BASE, "pkg/control.py": CONTROL,
                      "pkg/graph.py": ELSEWHERE})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    (bare,) = _at(found, "pkg/base.py", 3, "PLE0704")
    assert bare.noise is None and bare.severity.value == "high"


@needs_ruff
def test_the_helper_kept_as_a_callback_stays_shown(make_repo):
    repo = make_repo({"pkg/__init__.py": "", "pkg/base.py": BASE, "pkg/control.py": CONTROL,
                      "pkg/hooks.py": CALLBACK})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    (bare,) = _at(found, "pkg/base.py", 3, "PLE0704")
    assert bare.noise is None
