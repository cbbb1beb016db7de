"""A git submodule the tests read (tomlkit's ``tests/toml-test``): in a
clone made without ``--recurse-submodules`` its folder is empty, the module
reading it cannot be collected, and that is the checkout's state, not the
code's: one setup line naming the submodule and the command that fetches
it, no finding. Checked out by the user, it is carried into the sandbox and
the tests that read it run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from superqode_ls.qe.roles._unit_env import environment_problem, missing_submodule
from tests.conftest import run_git
from tests.pyenv_helpers import run_unit_cli

READER = '''from pathlib import Path

CASES = (Path(__file__).parent / "cases" / "list.txt").read_text().split()


def test_cases():
    assert CASES == ["a", "b"]
'''
OTHER = "def test_other():\n    assert 1 + 1 == 2\n"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=cwd, check=True,
                   capture_output=True)


def _clone_without_submodule(make_repo, tmp_path: Path) -> Path:
    cases = make_repo({"list.txt": "a b\n"}, name="cases")
    upstream = make_repo({"tests/test_reader.py": READER, "tests/test_other.py": OTHER},
                         name="upstream")
    _git(upstream, "submodule", "add", "-q", str(cases), "tests/cases")
    run_git(upstream, "commit", "-q", "-m", "cases as a submodule")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(upstream), str(clone))
    assert (clone / "tests" / "cases").is_dir() and not any((clone / "tests" / "cases").iterdir())
    return clone


def test_a_submodule_not_checked_out_is_one_setup_line(make_repo, tmp_path):
    clone = _clone_without_submodule(make_repo, tmp_path)
    proc, report, unit = run_unit_cli(clone)
    assert "git submodule update --init tests/cases" in (unit["reason"] or ""), unit
    assert "1 passed" in unit["reason"], unit  # the rest of the suite still ran
    shown = [f for f in report["findings"] if f["role"] == "unit_tester" and not f["noise"]]
    assert not shown, shown
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The words pytest gives, checked against the checkout's state: a path
    # outside every submodule, or a submodule that is there, is the code's.
    said = f"FileNotFoundError: [Errno 2] No such file or directory: '{clone}/tests/cases/list.txt'"
    assert environment_problem({"message": said}, clone).startswith(
        "the tests need tests/cases, a git submodule that is not checked out")
    assert missing_submodule(said.replace("tests/cases", "tests/other"), clone) is None
    _git(clone, "submodule", "update", "-q", "--init", "tests/cases")
    assert missing_submodule(said, clone) is None


def test_a_checked_out_submodule_is_in_the_sandbox(make_repo, tmp_path):
    clone = _clone_without_submodule(make_repo, tmp_path)
    _git(clone, "submodule", "update", "-q", "--init", "tests/cases")
    proc, report, unit = run_unit_cli(clone)
    assert unit["status"] == "ok" and "2 passed" in (unit["reason"] or ""), unit
    assert not [f for f in report["findings"] if f["role"] == "unit_tester"], report["findings"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
