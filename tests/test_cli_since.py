"""``superqe run --since REF`` and ``superqe run FILE...``: real git
repositories, real sandboxes (the base in its own worktree at the merge-base)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import qe_testroles
from tests.cli_helpers import superqe
from tests.conftest import run_git, write_files

OLD = "def old():\n    return 'PLANTED old'\n"
OTHER = "def g():\n    return 1\n"


@pytest.fixture(autouse=True)
def toy_roles(monkeypatch):
    qe_testroles.register(monkeypatch)



def _branch_repo(make_repo) -> Path:
    """main has one old problem; the feature branch adds one new problem and
    moves the old one down the file (new code above it)."""
    repo = make_repo({"app.py": OLD, "other.py": OTHER})
    run_git(repo, "branch", "-M", "main")
    run_git(repo, "checkout", "-q", "-b", "feature")
    write_files(repo, {"app.py": "import os\n\n\ndef new():\n    return 'PLANTED new'\n\n\n" + OLD})
    run_git(repo, "commit", "-qam", "feature: a new problem above the moved old one")
    return repo


def test_since_reports_only_the_introduced_finding(make_repo, capsys, tmp_path):
    repo = _branch_repo(make_repo)
    sarif = tmp_path / "out.sarif"
    code, out, err = superqe(capsys, "run", str(repo), "-r", "toy_tester", "--since", "main",
                             "--sarif", str(sarif))
    assert code == 1, err
    base = run_git(repo, "merge-base", "HEAD", "main").strip()
    reports = sorted((repo / ".superqode" / "qe-artifacts").rglob("qr-*.json"))
    heads = [json.loads(p.read_text()) for p in reports]
    report = next(r for r in heads if r.get("since"))
    assert [f["snippet"] for f in report["findings"]] == ["    return 'PLANTED new'"]
    assert report["baseline_filtered"] == 1  # the moved old one: same id, not new
    assert report["since"]["ref"] == "main" and report["since"]["merge_base"] == base
    assert report["since"]["introduced"] == 1 and report["since"]["base_complete"] is True
    assert report["since"]["files"] == 1  # only app.py changed: other.py was not looked at
    assert f"since main (merge-base {base[:12]}): 1 finding(s) introduced" in out
    doc = json.loads(sarif.read_text())
    run = doc["runs"][0]
    assert len(run["results"]) == 1
    assert run["properties"]["since"]["mergeBase"] == base
    # The user's checkout was never switched to the base.
    assert run_git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "feature"
    assert run_git(repo, "status", "--porcelain", "--untracked-files=no") == ""


def test_since_uncommitted_change_counts(make_repo, capsys):
    repo = _branch_repo(make_repo)
    write_files(repo, {"other.py": OTHER + "X = 'PLANTED here too'\n"})
    code, out, _ = superqe(capsys, "run", str(repo), "-r", "toy_tester", "--since", "main",
                           "--jsonl")
    done = json.loads(out.splitlines()[-1])["data"]
    report = json.loads(Path(done["report"]).read_text())
    assert code == 1
    assert sorted(f["file"] for f in report["findings"]) == ["app.py", "other.py"]


def test_since_without_merge_base_is_one_line_exit_2(make_repo, capsys):
    repo = make_repo({"app.py": OLD})
    branch = run_git(repo, "symbolic-ref", "--short", "HEAD").strip()
    run_git(repo, "checkout", "-q", "--orphan", "lonely")
    run_git(repo, "commit", "-qm", "unrelated")
    run_git(repo, "checkout", "-q", branch)
    before = sorted(p.name for p in repo.iterdir())
    code, out, err = superqe(capsys, "run", str(repo), "-r", "toy_tester", "--since", "lonely")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == ["superqe: --since lonely: no merge-base with HEAD "
                                        "(unrelated histories?)"]
    assert sorted(p.name for p in repo.iterdir()) == before  # nothing created


def test_since_unknown_ref_exit_2(make_repo, capsys):
    repo = make_repo({"app.py": OLD})
    code, _, err = superqe(capsys, "run", str(repo), "-r", "toy_tester", "--since", "nope")
    assert code == 2 and err.strip() == "superqe: --since: unknown revision 'nope'"


def test_run_on_files_looks_at_those_only(make_repo, capsys, monkeypatch):
    repo = make_repo({"a.py": "A = 'PLANTED a'\n", "b.py": "B = 'PLANTED b'\n",
                      "pkg/c.py": "C = 'PLANTED c'\n", "pkg/d.py": "D = 1\n"})
    monkeypatch.chdir(repo)
    code, out, err = superqe(capsys, "run", "a.py", "pkg", "-r", "toy_tester", "--jsonl")
    assert code == 1, err
    start = json.loads(out.splitlines()[0])["data"]
    assert start["files"] == ["a.py", "pkg/c.py", "pkg/d.py"]
    report = json.loads(Path(json.loads(out.splitlines()[-1])["data"]["report"]).read_text())
    assert sorted(f["file"] for f in report["findings"]) == ["a.py", "pkg/c.py"]


def test_run_on_files_from_outside_the_repository(make_repo, capsys):
    repo = make_repo({"a.py": "A = 'PLANTED a'\n", "b.py": "B = 1\n"})
    code, out, _ = superqe(capsys, "run", str(repo / "b.py"), "-r", "toy_tester")
    assert code == 0 and "0 finding(s)" in out and "a.py" not in out


def test_run_on_a_missing_file_is_one_line(make_repo, capsys, monkeypatch):
    repo = make_repo({"a.py": "A = 1\n"})
    monkeypatch.chdir(repo)
    code, out, err = superqe(capsys, "run", "a.py", "gone.py", "-r", "toy_tester")
    assert code == 2 and out == "" and err.strip() == "superqe: no such file or folder: gone.py"


def test_timings_say_where_the_time_went(make_repo, capsys):
    repo = make_repo({"a.py": "A = 'PLANTED a'\n"})
    code, out, _ = superqe(capsys, "run", str(repo), "-r", "toy_tester", "--timings")
    assert code == 1
    line = next(x for x in out.splitlines() if x.startswith("timings: "))
    for step in ("sandbox", "roles", "filter", "verify", "revert", "report", "save", "role:toy_tester"):
        assert f"{step} " in line
    reports = list((repo / ".superqode" / "qe-artifacts").rglob("qr-*.json"))
    saved = json.loads(reports[0].read_text())["timings"]
    assert {"sandbox", "roles", "verify", "revert"} <= set(saved)


def test_since_with_nothing_changed_reports_nothing(make_repo, capsys):
    repo = make_repo({"app.py": OLD})
    branch = run_git(repo, "symbolic-ref", "--short", "HEAD").strip()
    code, out, err = superqe(capsys, "run", str(repo), "-r", "toy_tester", "--since", branch)
    assert code == 0, err
    assert "0 finding(s) introduced in 0 changed file(s)" in out


def test_since_lines_are_the_added_and_modified_lines(make_repo):
    """What roles that target code (mutants, generated tests) stay inside."""
    from superqode_ls.qe.delta import resolve_since

    repo = _branch_repo(make_repo)
    write_files(repo, {"other.py": "def g():\n    return 2\n", "new file.py": "a = 1\nb = 2\n"})
    since = resolve_since(repo, "main")
    # app.py: five lines added above the old function, which only moved.
    assert since.lines["app.py"] == frozenset({1, 2, 3, 4, 5, 6, 7})
    assert since.lines["other.py"] == frozenset({2})  # the uncommitted edit
    assert since.lines["new file.py"] == frozenset({1, 2})  # untracked: all of it
