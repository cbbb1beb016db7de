from __future__ import annotations

import json
import os
import time

from superqode_ls.workspace.artifacts import Artifacts, clean_artifacts, read_manifest


def test_two_sessions_same_day_never_overwrite(tmp_path):
    a = Artifacts(tmp_path, "qe-20260101-100000-aaaaaa").prepare()
    b = Artifacts(tmp_path, "qe-20260101-100000-bbbbbb").prepare()
    pa = a.write_patch("exec", "diff a")
    pb = b.write_patch("exec", "diff b")
    ra = a.write_report("json", "{}")
    rb = b.write_report("json", "{}")
    assert pa != pb and ra != rb
    assert pa.read_text() == "diff a" and pb.read_text() == "diff b"
    root = tmp_path / ".superqode"
    assert (root / ".gitignore").read_text() == "*\n"
    for sub in ("qr", "patches", "generated-tests", "logs", "evidence"):
        assert (root / "qe-artifacts" / sub).is_dir()
    manifest = read_manifest(root / "qe-artifacts")
    assert {e["session_id"] for e in manifest["artifacts"]} == {a.session_id, b.session_id}
    assert json.loads((root / "qe-artifacts/manifest.json").read_text())["version"] == 1


def test_clean_older_than(tmp_path):
    a = Artifacts(tmp_path, "qe-20260101-100000-aaaaaa").prepare()
    old = a.write_log("role", "old")
    new = a.write_log("other", "new")
    past = time.time() - 10 * 86400
    os.utime(old, (past, past))
    removed = clean_artifacts(tmp_path, 7 * 86400)
    assert removed == [str(old.relative_to(a.root))]
    assert not old.exists() and new.exists()
    assert len(read_manifest(a.root)["artifacts"]) == 1


def test_batch_writes_the_manifest_once_with_every_entry(tmp_path):
    a = Artifacts(tmp_path, "qe-20260101-100000-aaaaaa").prepare()
    manifest = a.root / "manifest.json"
    with a.batch():
        paths = [a.write_patch(f"fix-{i}", f"diff {i}\n") for i in range(50)]
        with a.batch():  # nested: still one write, at the outer end
            a.write_report("json", "{}")
        # Files exist, the manifest does not list them yet (no rewrite per file).
        assert all(p.is_file() for p in paths) and not manifest.exists()
    entries = read_manifest(a.root)["artifacts"]
    assert [e["kind"] for e in entries] == ["patch"] * 50 + ["report"]
    assert paths[7].read_text() == "diff 7\n"


def test_a_held_batch_that_fails_midway_still_lists_what_it_wrote(tmp_path):
    """Patch files written beside the revert hold their manifest entries for
    the report's update; a failure midway (a full disk) gives that caller no
    result to list them with, and an unlisted file is one ``--clean`` leaves."""
    a = Artifacts(tmp_path, "qe-20260101-100000-aaaaaa").prepare()
    held: list = []
    try:
        with a.batch(held=held):
            written = [a.write_patch(f"fix-{i}", f"diff {i}\n") for i in range(3)]
            raise OSError(28, "No space left on device")
    except OSError:
        pass
    listed = {e["path"] for e in read_manifest(a.root)["artifacts"]}
    assert {str(p.relative_to(a.root)) for p in written} <= listed
    assert held == []  # listed already: not listed twice by a later batch
    # A held batch that ends well lists nothing itself (one update later).
    with a.batch(held=held):
        a.write_patch("fix-ok", "diff ok\n")
    assert len(held) == 1 and len(read_manifest(a.root)["artifacts"]) == 3


def _run(project, sid, keep_runs, later_phase=None):
    """One QE run's outputs, written as the pipeline writes them: one batch;
    ``later_phase``: also a second phase's (no report of its own)."""
    a = Artifacts(project, sid, keep_runs=keep_runs).prepare()
    extra = []
    if later_phase:
        b = Artifacts(project, later_phase, keep_runs=keep_runs, run_id=sid).prepare()
        extra = [b.write_patch("fix-B602-abc", "diff\n", finding_ids=["B602"]),
                 b.write_log("unit", "log")]
    with a.batch():
        patch = a.write_patch("fix-F401-abc", "diff\n", finding_ids=["F401"], verified=False)
        log = a.write_log("lint", "log")
        gen = a.write_generated_test("test_x.py", "def test(): pass\n")
        report = a.write_report("json", "{}")
    return [patch, log, gen, report, *extra]


def test_only_the_newest_runs_outputs_are_kept(tmp_path):
    """A run's reports, logs, generated tests and fix patches go once
    ``keep_runs`` newer runs have ended; work nobody could make again (a
    recovered session's patch, an `exec` patch) stays whatever its age."""
    sids = [f"qe-20260101-10000{i}-aaaaaa" for i in range(4)]
    recovered = Artifacts(tmp_path, sids[0]).prepare().write_patch("recovered", "user work\n")
    exec_patch = Artifacts(tmp_path, "exec-1").prepare().write_patch("exec", "agent work\n")
    runs = [_run(tmp_path, sid, keep_runs=2, later_phase=sid.replace("aaaaaa", "bbbbbb"))
            for sid in sids]
    for gone in runs[:2]:
        assert not any(p.exists() for p in gone)
    for kept in runs[2:]:
        assert all(p.is_file() for p in kept)
    assert recovered.read_text() == "user work\n" and exec_patch.read_text() == "agent work\n"
    root = runs[0][0].parents[1]
    listed = {e["path"] for e in read_manifest(root)["artifacts"]}
    assert listed == {str(p.relative_to(root)) for p in [recovered, exec_patch, *runs[2], *runs[3]]}
    # The emptied generated-tests folders go too.
    assert sorted(d.name for d in (root / "generated-tests").iterdir()) == sids[2:]
    # A later phase's patches and logs went with their run (they name it).
    assert len(runs[0]) == 6 and not runs[0][4].exists()


def test_keep_runs_none_keeps_every_run(tmp_path):
    runs = [_run(tmp_path, f"qe-20260101-10000{i}-aaaaaa", keep_runs=None) for i in range(3)]
    runs.append(_run(tmp_path, "qe-20260101-100009-aaaaaa", keep_runs=0))
    assert all(p.is_file() for run in runs for p in run)


def test_pruning_an_old_run_removes_a_planted_link_not_its_target(tmp_path):
    """A repository may ship `.superqode/` with an old run's report as a link
    to a file in HOME: pruning removes the link, never what it points to."""
    home_file = tmp_path / "home" / ".bashrc"
    home_file.parent.mkdir()
    home_file.write_text("mine\n")
    project = tmp_path / "p"
    project.mkdir()
    first = _run(project, "qe-20260101-100000-aaaaaa", keep_runs=None)
    report = first[3]
    report.unlink()
    report.symlink_to(home_file)
    _run(project, "qe-20260101-100001-aaaaaa", keep_runs=1)
    assert home_file.read_text() == "mine\n"
    assert not os.path.lexists(report)


def test_a_pruned_runs_patch_seal_goes_with_it(tmp_path, monkeypatch):
    """Seals live in SUPERQODE_HOME, one file per run that saved fixes; the
    pipeline drops a run's seal when the retention removes its patches."""
    from superqode_ls.workspace import patchseal

    monkeypatch.setenv("SUPERQODE_HOME", str(tmp_path / "home"))
    project = tmp_path / "p"
    project.mkdir()
    sids = [f"qe-20260101-10000{i}-aaaaaa" for i in range(3)]
    for sid in sids:
        patchseal.seal(project, sid, {"fix-F401-abc": "diff\n"})
        a = Artifacts(project, sid, keep_runs=1,
                      on_prune=lambda gone: patchseal.drop(project, gone))
        a.prepare().write_report("json", "{}")
    assert patchseal.check(project, sids[0], "fix-F401-abc", "diff\n") is not None
    assert patchseal.check(project, sids[1], "fix-F401-abc", "diff\n") is not None
    assert patchseal.check(project, sids[2], "fix-F401-abc", "diff\n") is None
