"""Red team: the project's ``.superqode/`` is untrusted input. A repository
ships links where SuperQode's folders go, a manifest that names the user's
files, a forged report; a process swaps a link in while a session writes. No
write or delete ever lands outside the artifacts folder, and a patch is
applied only as SuperQode wrote it."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from superqode_ls.workspace.artifacts import (
    Artifacts,
    UnsafeOwnPath,
    clean_artifacts,
    read_manifest,
)
from superqode_ls.workspace.paths import artifacts_root

from ..cli_helpers import superqe

FIXABLE = {"b.py": "import os, sys\nimport subprocess\nx = 1\n"}


def _tree(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath, n)
            out[str(p.relative_to(root))] = (f"-> {os.readlink(p)}" if p.is_symlink()
                                             else p.read_bytes() if p.is_file() else "dir")
    return out


@pytest.fixture
def victim(isolated_home):
    """What a hostile repository aims at in the (test) HOME."""
    (isolated_home / ".local" / "bin").mkdir(parents=True, exist_ok=True)
    (isolated_home / ".bashrc").write_text("# mine\n")
    (isolated_home / ".cache" / "keep").mkdir(parents=True, exist_ok=True)
    (isolated_home / ".cache" / "keep" / "x").write_text("x")
    return isolated_home


def _run(capsys, repo: Path) -> tuple[int, str, str]:
    return superqe(capsys, "run", str(repo), "-r", "lint_tester", "--fail-on", "never")


@pytest.mark.parametrize("link", [".superqode", ".superqode/qe-artifacts",
                                  ".superqode/qe-artifacts/patches"])
def test_a_shipped_link_where_a_folder_goes_is_refused_and_nothing_written(
        make_repo, victim, capsys, link):
    repo = make_repo(FIXABLE)
    target = victim / ".local" / "bin"
    (repo / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, repo / link)
    before = _tree(victim)
    code, out, err = _run(capsys, repo)
    assert code == 2, out + err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "symlink" in lines[0] and "superqode" in lines[0], err
    assert _tree(victim) == before
    assert os.readlink(repo / link) == str(target)  # refused, not replaced


def test_a_link_swapped_in_during_the_writes_is_never_written_through(make_repo, victim):
    repo = make_repo(FIXABLE)
    outside = victim / ".local" / "bin"
    arts = Artifacts(repo, "qe-20260101-000000-abcdef").prepare()
    patches = arts.root / "patches"
    stop = threading.Event()

    def swapper() -> None:  # a process of the session, or any other, racing the writer
        while not stop.is_set():
            try:
                os.rename(patches, arts.root / "real")
                os.symlink(outside, patches)
                os.unlink(patches)
                os.rename(arts.root / "real", patches)
            except OSError:
                pass

    t = threading.Thread(target=swapper)
    t.start()
    refused = written = 0
    try:
        for n in range(300):
            try:
                arts.write_patch(f"p{n}", f"diff {n}\n")
                written += 1
            except (UnsafeOwnPath, OSError):
                refused += 1
    finally:
        stop.set()
        t.join()
    assert list(outside.iterdir()) == []
    assert written + refused == 300


def test_a_link_inside_swapped_before_a_write_is_refused(make_repo, victim):
    repo = make_repo(FIXABLE)
    arts = Artifacts(repo, "qe-20260101-000000-abcdef").prepare()
    (arts.root / "qr").rmdir()
    os.symlink(victim / ".local" / "bin", arts.root / "qr")
    with pytest.raises(UnsafeOwnPath, match="symlink"):
        arts.write_report("json", "{}")
    assert list((victim / ".local" / "bin").iterdir()) == []


def _forge_manifest(repo: Path, victim: Path) -> Path:
    root = artifacts_root(repo)
    Artifacts(repo, "qe-20260101-000000-abcdef").prepare()
    (root / "patches" / "link.patch").symlink_to(victim / ".bashrc")
    os.utime(root / "patches" / "link.patch", (1, 1), follow_symlinks=False)
    (root / "logs" / "old.log").write_text("old\n")
    os.utime(root / "logs" / "old.log", (1, 1))
    entries = [
        {"path": "../../.bashrc"}, {"path": str(victim / ".bashrc")},
        {"path": str(victim / ".cache")}, {"path": "patches/../../../../.bashrc"},
        {"path": "../../../../../" + str(victim / ".cache")}, {"path": ""}, {"path": None},
        {"path": "patches/link.patch"}, {"path": "logs/old.log"}, "not even a dict",
    ]
    (root / "manifest.json").write_text(json.dumps({"version": 1, "artifacts": entries}))
    return root


@pytest.mark.parametrize("argv", [["clean", "--older-than", "1s"], ["--clean", "--older-than", "1s"]])
def test_a_forged_manifest_deletes_nothing_outside(make_repo, victim, capsys, argv):
    repo = make_repo(FIXABLE)
    root = _forge_manifest(repo, victim)
    before = _tree(victim)
    args = ["artifacts", "-C", str(repo), *argv] if argv[0] == "clean" else \
        ["artifacts", str(repo), *argv]
    code, out, err = superqe(capsys, *args)
    assert code == 0, out + err
    assert _tree(victim) == before
    assert (victim / ".bashrc").read_text() == "# mine\n"
    assert err.count("manifest entry ignored") == 8, err
    # What the manifest rightly named went, as itself: the link, not its target.
    assert not (root / "logs" / "old.log").exists()
    assert not os.path.lexists(root / "patches" / "link.patch")


def test_the_engine_never_deletes_an_invalid_entry(make_repo, victim):
    repo = make_repo(FIXABLE)
    _forge_manifest(repo, victim)
    warnings: list[str] = []
    removed = clean_artifacts(repo, 0, warnings=warnings)
    assert sorted(removed) == ["logs/old.log", "patches/link.patch"]
    assert (victim / ".bashrc").read_text() == "# mine\n"
    assert (victim / ".cache" / "keep" / "x").exists()
    assert len(warnings) == 8, warnings
    assert read_manifest(artifacts_root(repo))["artifacts"] == []  # the bad entries are dropped


def test_a_manifest_that_is_a_fifo_does_not_hang_list(make_repo, capsys):
    repo = make_repo(FIXABLE)
    Artifacts(repo, "qe-20260101-000000-abcdef").prepare()
    os.mkfifo(artifacts_root(repo) / "manifest.json")
    code, out, _ = superqe(capsys, "artifacts", "-C", str(repo), "list")
    assert code == 0 and "no artifacts" in out


def _first_fix(capsys, repo: Path) -> tuple[str, Path]:
    code, out, err = _run(capsys, repo)
    assert code == 0, out + err
    code, out, err = superqe(capsys, "suggestions", "-C", str(repo), "list", "--json")
    assert code == 0, err
    fixes = json.loads(out)
    assert fixes, "lint_tester suggested no fix"
    return fixes[0]["id"], next((repo / ".superqode/qe-artifacts/qr").glob("qr-*.json"))


def test_a_patch_edited_after_the_session_is_refused(make_repo, capsys):
    repo = make_repo(FIXABLE)
    fix, report_path = _first_fix(capsys, repo)
    report = json.loads(report_path.read_text())
    patch = next(p for p in report["patches"] if p["id"] == fix)
    # Still a valid patch of b.py, one that would apply: only its bytes say no.
    patch["diff"] = patch["diff"].replace("+import os", "+import os  # planted")
    report_path.write_text(json.dumps(report))
    before = (repo / "b.py").read_bytes()
    for extra in ([], ["--dry-run"]):
        code, out, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", fix, *extra)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert code == 2 and len(lines) == 1, out + err
        assert "changed after session" in lines[0] and fix in lines[0]
    assert (repo / "b.py").read_bytes() == before


def test_the_untouched_patch_still_applies(make_repo, capsys):
    repo = make_repo(FIXABLE)
    fix, _ = _first_fix(capsys, repo)
    code, out, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", fix)
    assert code == 0 and "applied" in out, out + err
    assert (repo / "b.py").read_text() != FIXABLE["b.py"]


def test_a_shipped_report_is_not_applied(make_repo, capsys, tmp_path):
    """A repository that ships its own report (a patch SuperQode never wrote)."""
    donor = make_repo(FIXABLE)
    fix, report_path = _first_fix(capsys, donor)
    repo = make_repo(FIXABLE)
    qr = repo / ".superqode/qe-artifacts/qr"
    qr.mkdir(parents=True)
    (qr / report_path.name).write_bytes(report_path.read_bytes())
    code, out, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", fix)
    assert code == 2 and "no record of writing this patch" in err, out + err
    assert (repo / "b.py").read_text() == FIXABLE["b.py"]


def test_the_editors_ignore_does_not_write_the_baseline_through_a_shipped_link(make_repo, victim):
    from superqode_ls.models import Finding, Severity
    from superqode_ls.qe import baseline

    repo = make_repo(FIXABLE)
    os.symlink(victim / ".local" / "bin", repo / ".superqode")
    f = Finding(id="f1", role="lint_tester", tool="ruff", rule_id="F401", title="unused",
                message="unused import", severity=list(Severity)[-1], file="b.py")
    with pytest.raises(UnsafeOwnPath):
        baseline.add(repo / baseline.DEFAULT_PATH, [f])
    assert list((victim / ".local" / "bin").iterdir()) == []
    os.unlink(repo / ".superqode")
    baseline.add(repo / baseline.DEFAULT_PATH, [f])  # a real folder: written
    assert "f1" in (repo / ".superqode" / "baseline.json").read_text()


def test_reports_behind_a_shipped_link_are_not_read(make_repo, capsys, tmp_path):
    """`suggestions` lists nothing through a linked qr folder (whoever's reports it holds)."""
    donor = make_repo(FIXABLE)
    _first_fix(capsys, donor)
    repo = make_repo(FIXABLE)
    (repo / ".superqode/qe-artifacts").mkdir(parents=True)
    os.symlink(donor / ".superqode/qe-artifacts/qr", repo / ".superqode/qe-artifacts/qr")
    code, out, err = superqe(capsys, "suggestions", "-C", str(repo), "list")
    assert code == 2 and "no QE reports found" in err, out + err
