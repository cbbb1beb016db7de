"""type_tester on small real packages: mypy errors at the right place, the
project's packages found, no cache written into the sandbox."""

from __future__ import annotations

import asyncio

from superqode_ls.qe.roles.types import TypeTester, _parse_text, find_targets
from tests.role_helpers import at, make_ctx, run_role, tree_state

PKG = {
    "pyproject.toml": "[project]\nname = 'pkg'\n",
    "pkg/__init__.py": "",
    "pkg/core.py": (
        "import requests_not_installed\n"
        "\n"
        "def name(x: int) -> str:\n"
        "    return x\n"
        "\n"
        "def use() -> int:\n"
        "    return name('a') + 1\n"
    ),
    "pkg/ok.py": "def f(a: int) -> int:\n    return a\n",
    "tests/test_core.py": "def test_x() -> None:\n    y: int = 'no'\n",
}


def test_mypy_findings(make_repo):
    repo = make_repo(PKG)
    before = tree_state(repo)
    out = run_role(TypeTester(), make_ctx(repo))
    assert out.status == "ok" and out.tool == "mypy"
    assert tree_state(repo) == before  # no .mypy_cache in the sandbox
    (ret,) = at(out.findings, "return-value", "pkg/core.py", 4)
    assert ret.range.start_col == 12 and ret.range.end_col == 13
    assert ret.snippet == "    return x" and ret.severity.value == "medium"
    assert at(out.findings, "arg-type", "pkg/core.py", 7)
    assert at(out.findings, "operator", "pkg/core.py", 7)
    # third-party imports are not installed here: not reported
    assert not [f for f in out.findings if f.rule_id.startswith("import")]
    # tests/ is not a package: only the package is checked
    assert {f.file for f in out.findings} == {"pkg/core.py"}
    assert len({f.id for f in out.findings}) == len(out.findings)


def test_files_restrict_and_recheck(make_repo):
    repo = make_repo(PKG)
    out = run_role(TypeTester(), make_ctx(repo, files=["pkg/ok.py"]))
    assert out.status == "ok" and out.findings == []
    (repo / "pkg/core.py").write_text("def name(x: int) -> str:\n    return str(x)\n")
    assert asyncio.run(TypeTester().recheck(make_ctx(repo), ["pkg/core.py"])) == []


def test_targets_and_skip(make_repo):
    repo = make_repo({"src/lib/__init__.py": "", "tests/__init__.py": "", "tool.py": ""})
    assert find_targets(repo) == ["src/lib"]
    flat = make_repo({"script.py": "x: int = 'a'\n", "setup.py": ""})
    assert find_targets(flat) == ["script.py"]
    out = run_role(TypeTester(), make_ctx(flat))
    assert [f.rule_id for f in out.findings] == ["assignment"]
    empty = make_repo({"README.md": "hi\n"})
    out = run_role(TypeTester(), make_ctx(empty))
    assert out.status == "skipped" and "no Python package" in out.reason


def test_text_output_parser():
    text = (
        'pkg/a.py:4:12:4:12: error: Incompatible return value type (got "int", expected "str")'
        "  [return-value]\n"
        "pkg/a.py:9: note: See https://example.invalid\n"
        "pkg/b.py:1: error: Name 'x' is not defined  [name-defined]\n"
        "garbage line\n"
    )
    recs = _parse_text(text)
    assert [(r["file"], r["line"], r["column"], r["code"], r["severity"]) for r in recs] == [
        ("pkg/a.py", 4, 11, "return-value", "error"),
        ("pkg/a.py", 9, -1, None, "note"),
        ("pkg/b.py", 1, -1, "name-defined", "error"),
    ]


def test_missing_mypy_is_skipped(make_repo, monkeypatch):
    from superqode_ls.qe.roles import types

    monkeypatch.setattr(types, "tool_path", lambda name: None)
    repo = make_repo(PKG)
    out = run_role(TypeTester(), make_ctx(repo))
    assert out.status == "skipped" and out.reason == "needs mypy: pip install 'superqode-ls[deep]'"
