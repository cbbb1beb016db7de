"""The verification step's verdicts kept between runs (verify_kept.py): an
unchanged project's next run takes them and runs no covering test again; a
changed covering test, a changed fixed file, or a verdict that only says the
run could not judge the fix, is judged again. Real ruff, pytest and git."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from superqode_ls.config import superqode_home
from superqode_ls.qe import verify_kept
from superqode_ls.qe.covering import CoveringTests
from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.qe.roles.base import tool_path
from tests.test_verified_fixes import FILES

pytestmark = pytest.mark.skipif(not tool_path("ruff"), reason="needs ruff")


def _run(repo, monkeypatch):
    ran: list[list[str]] = []
    real = CoveringTests.run

    async def counted(self, tests):
        ran.append(list(tests))
        return await real(self, tests)

    monkeypatch.setattr(CoveringTests, "run", counted)
    session = QESession(QERequest(repo, roles=["lint_tester"], trusted=True))
    report = asyncio.run(session.run())
    fixes = {(f.file, f.rule_id): session.patches[f.fix_patch_id]
             for f in report.findings if f.fix_patch_id}
    return fixes, ran


def _verdicts(fixes) -> list[tuple]:
    return sorted((k, p.verified, p.verified_by, p.verification) for k, p in fixes.items())


def test_an_unchanged_project_takes_the_verdicts_and_runs_no_test_again(make_repo, monkeypatch):
    repo = make_repo(FILES)
    first, ran_first = _run(repo, monkeypatch)
    assert first[("pkg/calc.py", "F401")].verified_by == "tests", first[("pkg/calc.py", "F401")].verification
    assert "tests fail after the fix" in first[("pkg/fragile.py", "F401")].verification
    assert ran_first  # the covering tests judged the fixes
    path = verify_kept.cache_file(repo)
    assert path.is_file() and not path.is_relative_to(superqode_home() / "cache")
    second, ran_second = _run(repo, monkeypatch)
    assert ran_second == [] and _verdicts(second) == _verdicts(first)


def test_a_changed_covering_test_judges_the_fixes_again(make_repo, monkeypatch):
    """The real twin: the test that broke under the fix no longer reads the
    import, so the same fix of the same file is verified now."""
    repo = make_repo(FILES)
    first, _ = _run(repo, monkeypatch)
    assert not first[("pkg/fragile.py", "F401")].verified
    (repo / "tests" / "test_fragile.py").write_text(
        "from pkg import fragile\n\n\ndef test_one():\n    assert fragile.one() == 1\n")
    second, ran = _run(repo, monkeypatch)
    assert ran and second[("pkg/fragile.py", "F401")].verified_by == "tests"


def test_a_verdict_that_says_the_run_could_not_judge_is_not_kept(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    (root / "m.py").write_text("import os\n")
    key = verify_kept.StepKey.make(tmp_path, root, {}, {}, {}, [], None, {})
    assert key is not None
    transient = {"verified": False, "verified_by": None,
                 "verification": "not verified: no time left in the session budget"}
    assert not key.keep({"a": transient})
    assert not verify_kept.cache_file(tmp_path).exists()
    judged = {"verified": False, "verified_by": None,
              "verification": "not verified: tests fail after the fix (tests/test_m.py)"}
    # Tool-verified, its tests cut off at their limit: kept as it is (it claims
    # no more than the re-run showed); trying it again spent the same minutes.
    slow = {"verified": False, "verified_by": "tool",
            "verification": "tool-verified only: ...; the covering tests did not finish in 60 s"}
    assert key.keep({"a": transient, "b": judged, "c": slow})
    assert key.read() == {"b": judged, "c": slow}
    # A file the tests wrote as they ran (sqlalchemy's sqlite file): the
    # key's entries are as they were, kept.
    (root / "test_schema.db").write_bytes(b"sqlite")
    assert key.keep({"b": judged})
    # A file of the key's tree changed since the key was made: nothing kept.
    (root / "m.py").write_text("import sys\n")
    assert not key.keep({"c": slow})
    assert key.read() == {"b": judged}


@pytest.mark.parametrize("bad", ["shape", "code", "link"])
def test_a_kept_file_of_another_shape_or_a_link_reads_as_nothing(tmp_path, bad):
    root = tmp_path / "tree"
    root.mkdir()
    key = verify_kept.StepKey.make(tmp_path, root, {}, {}, {}, [], None, {})
    v = {"verified": True, "verified_by": "tests", "verification": "verified: ..."}
    assert key.keep({"a": v}) and key.read() == {"a": v}
    path = verify_kept.cache_file(tmp_path)
    data = json.loads(path.read_text())
    if bad == "shape":
        data["entries"][key.digest] = {"a": {"verified": "yes", "verification": 1}}
        path.write_text(json.dumps(data))
    elif bad == "code":
        data["code"] = "another"
        path.write_text(json.dumps(data))
    else:
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text(json.dumps(data))
        path.unlink()
        os.symlink(elsewhere, path)
    assert key.read() == {}
