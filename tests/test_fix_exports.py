"""A fix that removes a name other code reads from its module is never
verified (verify_exports.py): a name another module imports from there, a
stub's re-export, a name only a string type alias uses. Real ruff, real
pytest, real git repositories; the fixes applied with ``superqe suggestions
apply --all`` and the project's tests run after them."""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys

import pytest

from superqode_ls.qe import verify_exports
from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.qe.roles._patches import unified_diff
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.verify_exports import ExportReads, drops_export
from tests.cli_helpers import superqe

needs_ruff = pytest.mark.skipif(not tool_path("ruff"), reason="needs ruff")

PYPROJECT = ('[project]\nname = "pkg"\nversion = "0"\nrequires-python = ">=3.10"\n\n'
             '[tool.ruff.lint]\nselect = ["F401"]\n')


def _run(repo):
    report = asyncio.run(QESession(QERequest(repo, roles=["lint_tester"], trusted=True)).run())
    patches = {p.id: p for p in report.patches}
    return {f.file: patches[f.fix_patch_id] for f in report.findings if f.fix_patch_id}


def _pytest(repo) -> int:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                          check=False, cwd=repo, capture_output=True, text=True).returncode


@needs_ruff
def test_an_import_another_module_takes_from_here_is_never_verified(make_repo, capsys):
    # requests' compat.py shape: the module's own tests pass without the
    # import; the module that imports it from there breaks.
    repo = make_repo({
        "pyproject.toml": PYPROJECT,
        "pkg/__init__.py": "",
        "pkg/compat.py": "from json import dumps, loads\n\n\ndef to_text(obj):\n    return dumps(obj)\n",
        "pkg/client.py": "from .compat import loads\n\n\ndef parse(text):\n    return loads(text)\n",
        # An unused import no module takes from here: its fix is still verified.
        "pkg/util.py": "import os\n\n\ndef twice(x):\n    return 2 * x\n",
        "tests/test_compat.py": "from pkg.compat import to_text\n\n\n"
                                "def test_to_text():\n    assert to_text([1]) == '[1]'\n",
        "tests/test_util.py": "from pkg.util import twice\n\n\ndef test_twice():\n    assert twice(2) == 4\n",
        "tests/test_client.py": "from pkg.client import parse\n\n\n"
                                "def test_parse():\n    assert parse('[1]') == [1]\n",
    })
    fixes = _run(repo)
    compat, util = fixes["pkg/compat.py"], fixes["pkg/util.py"]
    # Before: "verified: ... covering tests pass: tests/test_compat.py".
    assert not compat.verified and compat.verified_by is None
    assert compat.verification.startswith("re-export (ruff): not verified")
    assert "pkg/client.py imports loads" in compat.verification
    # verified by its covering test, or by the tool alone where pytest was
    # slow to start within the budget: either way offered to apply --all
    assert util.verified_by in ("tests", "tool"), util.verification
    code, _, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", "--all")
    assert code == 0, err
    assert "import os" not in (repo / "pkg/util.py").read_text()
    assert "loads" in (repo / "pkg/compat.py").read_text()
    assert _pytest(repo) == 0  # the project's tests pass after apply --all


@needs_ruff
def test_a_stubs_imports_are_never_verified(make_repo):
    # ruff calls F401's fix safe in an __init__.pyi; `from . import auth`
    # there is how type checkers learn of pkg.auth.
    repo = make_repo({
        "pyproject.toml": PYPROJECT,
        "pkg/__init__.py": "from . import auth\n",
        "pkg/__init__.pyi": "from . import auth\nimport os\n",
        "pkg/auth.py": "def login(user):\n    return bool(user)\n",
        "pkg/shapes.pyi": "from collections import OrderedDict\n\ndef area(x: int) -> int: ...\n",
        "tests/test_auth.py": "import pkg\n\n\ndef test_login():\n    assert pkg.auth.login('a')\n",
    })
    fixes = _run(repo)
    init, shapes = fixes["pkg/__init__.pyi"], fixes["pkg/shapes.pyi"]
    # Before: both "tool-verified only", so apply --all applied them.
    for p in (init, shapes):
        assert not p.verified and p.verified_by is None, p.verification
        assert p.verification.startswith("re-export (ruff): not verified")
    assert "stub" in shapes.verification


@needs_ruff
def test_an_import_only_a_string_type_alias_names_is_never_verified(make_repo):
    # ruff reads `Num: TypeAlias = "..."` but not a quoted "TypeAlias":
    # it calls the three imports unused; mypy reads the alias and fails.
    numbers = ("from typing import TYPE_CHECKING, Union\nfrom decimal import Decimal\n"
               "from fractions import Fraction\n\nif TYPE_CHECKING:\n"
               "    from typing_extensions import TypeAlias\n\n"
               'Num: "TypeAlias" = "Union[Decimal, Fraction]"\n\n\n'
               'def half(x: "Num") -> "Num":\n    return x / 2\n')
    repo = make_repo({
        "pyproject.toml": PYPROJECT,
        "pkg/__init__.py": "",
        "pkg/numbers.py": numbers,
        "tests/test_numbers.py": "from decimal import Decimal\n\nfrom pkg.numbers import half\n\n\n"
                                 "def test_half():\n    assert half(Decimal(2)) == 1\n",
    })
    report = asyncio.run(QESession(QERequest(repo, roles=["lint_tester"], trusted=True)).run())
    mine = [p for p in report.patches if p.files == ["pkg/numbers.py"]]
    # The lint role's noise rule withdraws these fixes (noise_aliases); any still
    # offered is never verified. Before: all three "verified" (the covering
    # test passes; the string is never evaluated).
    assert len(mine) in (0, 3)
    for p in mine:
        assert not p.verified and p.verified_by is None, p.verification
        assert "named in the string 'Union[Decimal, Fraction]'" in p.verification


def _why(tmp_path, rel: str, old: str, new: str, others: dict[str, str] | None = None) -> str | None:
    for name, text in {rel: old, **(others or {})}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return drops_export(tmp_path, rel, unified_diff(rel, old, new), ExportReads())


def test_what_counts_as_removing_an_export(tmp_path):
    body = "\n\ndef f():\n    return 1\n"
    # explicit re-export, __all__, a star import, a package's __init__
    assert "explicit re-export" in _why(tmp_path / "a", "m.py", "import os as os\n" + body, body)
    assert "__all__" in _why(tmp_path / "b", "m.py", "import os\n__all__ = ['os']\n" + body,
                             "__all__ = ['os']\n" + body)
    assert "star import" in _why(tmp_path / "c", "m.py", "from os import *\n" + body, body)
    assert "__init__" in _why(tmp_path / "d", "p/__init__.py", "import os\n" + body, body)
    # another module reads it as an attribute of the imported module
    assert "p/use.py imports os" in _why(
        tmp_path / "e", "p/m.py", "import os\n" + body, body,
        {"p/use.py": "from . import m\n\nprint(m.os.sep)\n", "p/__init__.py": ""})
    # not an export: the import gives way to a def of the name (F811), an
    # import still there, a plain unused import, a diff that removes no import
    assert _why(tmp_path / "f", "m.py", "import os\n\n\ndef os():\n    pass\n",
                "\n\ndef os():\n    pass\n") is None
    assert _why(tmp_path / "g", "m.py", "import os\nimport os\n" + body, "import os\n" + body) is None
    assert _why(tmp_path / "h", "m.py", "import os\n" + body,
                body, {"other.py": "'the os module'\nfrom json import os\n"}) is None
    assert _why(tmp_path / "i", "m.py", "x = 1\n" + body, "x = 2\n" + body) is None


def test_a_project_too_large_to_read_fails_closed(tmp_path, monkeypatch):
    monkeypatch.setattr(verify_exports, "MAX_FILES", 2)
    others = {f"o{i}.py": "x = 1\n" for i in range(3)}
    why = _why(tmp_path, "m.py", "import os\n\n\ndef f():\n    pass\n", "\n\ndef f():\n    pass\n", others)
    assert why is not None and "more than 2 modules" in why
    ast.parse((tmp_path / "m.py").read_text())  # the file itself left as it was


def test_a_fallback_import_is_its_own_binding(tmp_path):
    # requests' compat.py: `import json` in the except branch is what binds
    # json where simplejson is missing; the try branch's does not stand for it.
    old = ("try:\n    import simplejson as json\nexcept ImportError:\n    import json\n\n"
           "x = 1\n")
    new = old.replace("    import json\n", "    pass\n")
    assert "p/models.py imports json" in _why(
        tmp_path, "p/compat.py", old, new,
        {"p/__init__.py": "", "p/models.py": "from .compat import json as complexjson\n"})
