"""A fix's verdict on an unchanged tree kept between runs (qe/verify_cache.py):
the next run of the same project takes it without writing a copy or re-running
the tool, and only where nothing it was reached on changed. Real ruff, real
repositories, the real pipeline."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from superqode_ls.config import superqode_home
from superqode_ls.qe import verify_cache, verify_kept
from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.verify_early import SandboxReads
from superqode_ls.qe.verify_step import never_verifiable
from tests.test_verify_early import FILES
from tests.test_verify_early import _run as _run_early

pytestmark = pytest.mark.skipif(not tool_path("ruff"), reason="needs ruff")


@pytest.fixture(autouse=True)
def _no_step_verdicts(monkeypatch):
    """These are the early verdicts' cache's tests: the verification step's
    own kept verdicts (verify_kept.py) would answer the second run first."""
    monkeypatch.setattr(verify_kept.StepKey, "read", lambda self: {})


def _run(repo):
    events = []
    session = QESession(QERequest(repo, roles=["lint_tester"], trusted=False))
    session.bus.subscribe(events.append)
    report = asyncio.run(session.run())
    ruff = sum(1 for e in events if e.type == "tool_call" and e.data.get("tool") == "ruff")
    return report, ruff


def _verdicts(report) -> list[tuple]:
    return sorted((p.id, p.verified, p.verified_by, p.verification) for p in report.patches)


def test_an_unchanged_project_takes_the_verdicts_of_its_last_run(make_repo):
    repo = make_repo(FILES)
    first, ruff_first = _run(repo)
    path = verify_cache.cache_file(repo)
    assert path.is_file() and not path.is_relative_to(superqode_home() / "cache")
    second, ruff_second = _run(repo)
    # The first run re-ran ruff on the copies; the second ran it once, for
    # the findings, and judged no fix again.
    assert ruff_first >= 2 and ruff_second == 1
    assert any(p.verified_by == "tool" for p in second.patches)
    assert _verdicts(second) == _verdicts(first)


def test_a_changed_fixed_file_is_judged_again(make_repo):
    repo = make_repo(FILES)
    _run(repo)
    (repo / "pkg" / "many.py").write_text(FILES["pkg/many.py"].replace("import re\n", "import re\nimport abc\n"))
    report, ruff = _run(repo)
    assert ruff >= 2  # re-run on the copies: the tree is another one
    assert any("abc" in (p.description or "") or "-f401-" in p.id for p in report.patches
               if p.files == ["pkg/many.py"])
    # Two entries now, one for each tree; the next run of the changed tree takes its own.
    entries = json.loads(verify_cache.cache_file(repo).read_bytes())["entries"]
    assert len(entries) == 2
    again, ruff_again = _run(repo)
    assert ruff_again == 1 and _verdicts(again) == _verdicts(report)


def test_a_changed_configuration_is_judged_again(make_repo):
    repo = make_repo(FILES)
    first, _ = _run(repo)
    # The per-file ignore gone: pkg/quiet.py's F401 is a finding and its fix verified anew.
    (repo / "pyproject.toml").write_text(FILES["pyproject.toml"].replace('"pkg/quiet.py" = ["F401"]\n', ""))
    report, ruff = _run(repo)
    assert ruff >= 2
    assert _verdicts(report) != _verdicts(first)
    assert any("-f401-" in p.id for p in report.patches if p.files == ["pkg/quiet.py"])


@pytest.mark.parametrize("bad", ["shape", "code", "link", "fifo"])
def test_a_kept_file_of_another_shape_or_a_link_reads_as_nothing(make_repo, tmp_path, bad):
    repo = make_repo(FILES)
    first, _ = _run(repo)
    path = verify_cache.cache_file(repo)
    data = json.loads(path.read_bytes())
    path.unlink()
    if bad == "shape":  # a verdict that is not one: every result's verdict a string
        for entry in data["entries"].values():
            for r in entry["results"]:
                r["verified"] = "yes"
        path.write_text(json.dumps(data))
    elif bad == "code":  # another version of SuperQode's
        data["code"] = "0" * 64
        path.write_text(json.dumps(data))
    elif bad == "link":  # the right content, through a link: never followed
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text(json.dumps(data))
        path.symlink_to(elsewhere)
    else:
        os.mkfifo(path)
    report, ruff = _run(repo)
    assert ruff >= 2  # judged again, nothing taken (and a FIFO did not block the run)
    assert _verdicts(report) == _verdicts(first)


def test_the_early_verification_takes_the_kept_verdicts(make_repo, monkeypatch):
    """Second run of the same project: the early verification (verify_early.py)
    answers from the kept verdicts, with no tree made and no re-run."""
    repo = make_repo(FILES)
    first, _, seen_first = _run_early(repo, monkeypatch, trusted=False)
    assert seen_first["early_ran"] is True and not seen_first["session"].role_runs.early_verify.kept
    second, events, seen = _run_early(repo, monkeypatch, trusted=False)
    early = seen["session"].role_runs.early_verify
    assert seen["early_ran"] is True and early.kept and early.taken
    assert sum(1 for e in events if e.type == "tool_call" and e.data.get("tool") == "ruff") == 1
    assert _verdicts(second) == _verdicts(first)


def test_the_verdicts_are_not_kept_when_the_tree_changed_meanwhile(tmp_path):
    """A file changed (and put back) while the tool read the tree: only its
    change time tells, and nothing is kept."""
    from superqode_ls.qe.roles.lint import LintTester
    from superqode_ls.qe.verify_cache import Kept, VerdictKey

    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    other = root / "pkg" / "other.py"
    other.write_text("X = 1\n")
    (root / "pkg" / "m.py").write_text("import os\n")

    class Ctx:
        config, mode, files, folder, trusted, lines = None, "quick", None, "", False, None

    from superqode_ls.models import Patch

    todo = [Patch(id="p", description="", role="lint_tester", diff="", files=["pkg/m.py"])]
    key = VerdictKey.make(tmp_path / "project", root, LintTester(), Ctx(), [], todo)
    assert key is not None
    st = other.stat()
    other.write_text("X = 2\n")
    other.write_text("X = 1\n")
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert not key.keep(Kept([], {"pkg/m.py": "no tests import the changed code"}))
    assert not verify_cache.cache_file(tmp_path / "project").exists()
    # The same key on a still tree is kept, and read back.
    key = VerdictKey.make(tmp_path / "project", root, LintTester(), Ctx(), [], todo)
    assert key.keep(Kept([], {"pkg/m.py": "no tests import the changed code"}))
    assert key.read() is not None


def test_never_verifiable_reads_a_module_once_a_run(tmp_path):
    """The run's reads (SandboxReads) are shared by the early pick and the
    step: the second call reads no file again."""
    from superqode_ls.models import Finding, Patch, Range, Severity

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.11"\n')
    (tmp_path / "api.py").write_text('"""Facade."""\nfrom os import path\n')
    f = Finding(role="lint_tester", tool="ruff", rule_id="F401", title="unused", message="unused",
                severity=Severity.low, file="api.py", range=Range(start_line=2, end_line=2),
                fix_patch_id="fix-1")
    patches = {"fix-1": Patch(id="fix-1", description="", role="lint_tester", diff="", files=["api.py"])}
    reads = SandboxReads()
    first = never_verifiable(patches, [f], tmp_path, reads)
    assert "fix-1" in first and reads.facades == {"api.py": True}
    (tmp_path / "api.py").unlink()  # read again, it would be no facade
    assert never_verifiable(patches, [f], tmp_path, reads) == first
    assert never_verifiable(patches, [f], tmp_path) == {}
    # Another tree's reads are not taken for this one.
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.11"\n')
    (other / "api.py").write_text("from os import path\n\nX = path\n")
    assert never_verifiable(patches, [f], other, reads) == {}
