"""F811 on a redefinition the module's structure proves deliberate
(urllib3's self-replacing ``wait_for_socket``, definitions in exclusive
branches, a fallback redefined under a feature test): noise with the reason
said; a plain redefinition of an unused name stays shown. Real ruff output
on real files."""

from __future__ import annotations

import ast

from superqode_ls.qe.noise_redefinition import deliberate
from superqode_ls.qe.roles.lint import LintTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_rules_tools import _at, _filtered, needs_ruff

# urllib3/util/wait.py: ruff says "Redefinition of unused `wait_for_socket`
# from line 14" at the def (line 10), the ``global`` being the other binding.
WAIT = '''import select


def poll_wait(sock):
    return sock


def select_wait(sock):
    return sock


def wait_for_socket(sock):
    # chosen at the first call, so monkeypatching select.poll still counts
    global wait_for_socket
    if hasattr(select, "poll"):
        wait_for_socket = poll_wait
    else:
        wait_for_socket = select_wait
    return wait_for_socket(sock)
'''

BRANCHES = '''import sys

try:
    from fast_json import dumps
except ImportError:
    def dumps(value):
        return repr(value)


def render(value):
    return str(value)


if sys.version_info >= (3, 12):
    def render(value):
        return format(value)


def show(value):
    return value


def show(value):
    return [value]
'''


@needs_ruff
def test_deliberate_redefinitions_are_noise_a_plain_one_stays(make_repo):
    repo = make_repo({"pkg/__init__.py": "", "pkg/wait.py": WAIT, "pkg/compat.py": BRANCHES})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    (lazy,) = _at(found, "pkg/wait.py", 12, "F811")
    assert lazy.noise and "replaces itself at its first call" in lazy.noise
    # ruff itself passes over the exclusive and version-guarded ones here
    assert not _at(found, "pkg/compat.py", 6, "F811") and not _at(found, "pkg/compat.py", 15,
                                                                   "F811")
    (plain,) = _at(found, "pkg/compat.py", 23, "F811")
    assert plain.noise is None


def _why(source: str, name: str, first: int, again: int) -> str | None:
    return deliberate(ast.parse(source), name, first, again)


def test_exclusive_arms_and_guards_are_judged_by_structure():
    # (for a tool that reports them: the rule reads the structure, not ruff)
    assert "try/except" in _why(BRANCHES, "dumps", 4, 6)
    assert "feature test (sys.version_info)" in _why(BRANCHES, "render", 10, 15)
    assert _why(BRANCHES, "show", 19, 23) is None
    exclusive = ("if FLAG:\n    def f(): pass\nelif OTHER:\n    def f(): pass\n"
                 "else:\n    f = None\n")
    assert "if/else" in _why(exclusive, "f", 2, 4)
    assert "if/else" in _why(exclusive, "f", 4, 6)
    # both in one arm: the first is dead whatever the flag says
    assert _why("if FLAG:\n    def f(): pass\n    def f(): pass\n", "f", 2, 3) is None
    # try body then its else: both run, the first is overwritten
    assert _why("try:\n    import x\nexcept ImportError:\n    pass\nelse:\n"
                "    def f(): pass\ndef g(): pass\n", "f", 2, 6) is None
    # a guarded first definition overridden unconditionally stays
    assert _why("import os\nif os.name == 'nt':\n    def f(): pass\ndef f(): pass\n",
                "f", 3, 4) is None
    assert "os.name" in _why("import os\ndef f(): pass\nif os.name == 'nt':\n"
                             "    def f(): pass\n", "f", 2, 4)
    # a flag that is not a feature test (an ordinary condition) stays
    assert _why("def f(): pass\nif is_ready():\n    def f(): pass\n", "f", 1, 3) is None
    # a function that rebinds its name without ``global`` binds a local: stays
    assert _why("def f():\n    f = 1\n    return f\ndef f(): pass\n", "f", 1, 4) is None
