"""The fixes QE sessions suggested, read from the Quality Reports under
``<project>/.superqode/qe-artifacts/qr/`` (newest first): list, look up,
check the seal, apply; and the baseline "ignore this finding" adds to.

``apply`` is the one write to the user's files that SuperQode makes, and
only on the user's explicit request (``qe/applying.py``): a fix lands on all
its files or none, each file is written atomically, and a file that changed
meanwhile stops the whole write. Every way of applying a suggestion checks
its seal first (``check_sealed``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SuperQodeError, UsageError
from ..models import Finding, Patch, QualityReport
from ..qe.rebase import relocate  # the editor's quick fix re-derives a hunk its neighbour moved

if TYPE_CHECKING:
    from ..config import Config
    from ..qe.applying import ApplyOutcome

class PatchNotSealed(SuperQodeError):
    """The patch is not the one SuperQode stored (changed, or never its own)."""

    exit_code = 2


@dataclass
class Suggestion:
    patch: Patch
    findings: list[Finding]
    session_id: str
    report_path: Path


def find_project(start: Path) -> Path:
    start = start.expanduser()
    if not start.is_dir():
        raise UsageError(f"not a folder: {start}")
    start = start.resolve()
    for folder in (start, *start.parents):
        if report_names(folder):
            return folder
    raise UsageError(f"no QE reports found in {start} or above it (run `superqe run` first)")


def report_names(project: Path) -> list[str]:
    """Report JSON file names, newest first (names sort by date and session
    id), listed without following a link the project planted."""
    try:
        from ..workspace import ownfolder
        from ..workspace.paths import ARTIFACTS_DIR

        with ownfolder.folder(project, (*ARTIFACTS_DIR.parts, "qr")) as fd:
            names = ownfolder.names_at(fd) if fd is not None else []
    except OSError:
        return []
    names = [n for n in names if n.startswith("qr-") and n.endswith(".json")]
    return sorted(names, key=lambda n: n.split("-", 2)[-1], reverse=True)


def load_reports(project: Path, newest_only: bool) -> list[tuple[Path, QualityReport]]:
    from ..workspace.artifacts import read_artifact
    from ..workspace.paths import ARTIFACTS_DIR

    out = []
    root = project / ARTIFACTS_DIR
    for name in report_names(project):
        raw = read_artifact(root, f"qr/{name}")
        try:
            report = QualityReport.model_validate_json(raw or b"")
        except ValueError:
            continue  # a half-written or foreign file is not a reason to fail
        out.append((root / "qr" / name, report))
        if newest_only:
            break
    return out


def suggestions(project: Path, newest_only: bool = False) -> list[Suggestion]:
    seen: set[str] = set()
    out: list[Suggestion] = []
    for path, report in load_reports(project, newest_only):
        for patch in report.patches:
            if patch.id in seen:
                continue
            seen.add(patch.id)
            fixes = [f for f in report.findings if f.fix_patch_id == patch.id or f.id in patch.finding_ids]
            out.append(Suggestion(patch, fixes, report.session_id, path))
    return out


def lookup(project: Path, ident: str) -> Suggestion:
    every = suggestions(project)
    exact = [s for s in every if s.patch.id == ident]
    if exact:
        return exact[0]
    by_finding = [s for s in every if any(f.id == ident for f in s.findings)]
    if by_finding:
        return by_finding[0]
    prefixed = {s.patch.id: s for s in every if s.patch.id.startswith(ident)}
    if len(prefixed) == 1:
        return next(iter(prefixed.values()))
    if len(prefixed) > 1:
        raise UsageError(f"{ident!r} is ambiguous: {', '.join(sorted(prefixed)[:5])}")
    raise UsageError(f"no suggestion {ident!r} (see `superqe suggestions list --all`)")


def check_sealed(project: Path, s: Suggestion) -> None:
    """Refuse (one line, nothing changed) a patch whose bytes are not the ones
    its session wrote: the reports live in the project, which anything may
    rewrite; the seal lives in $SUPERQODE_HOME. Every way of applying a
    suggestion goes through here."""
    from ..workspace import patchseal

    why = patchseal.check(project, s.session_id, s.patch.id, s.patch.diff)
    if why is not None:
        raise PatchNotSealed(f"not applied: {why}")


def apply(project: Path, chosen: list[Suggestion], *, dry_run: bool = False) -> ApplyOutcome:
    """Apply the chosen fixes (each checked against its seal first, every
    one before any is written): which applied, which were already in the
    code, which were refused and why."""
    from ..qe.applying import apply_fixes

    for s in chosen:
        check_sealed(project, s)
    return apply_fixes(project, [s.patch for s in chosen], dry_run=dry_run)


def baseline_path(folder: Path, cfg: Config) -> Path:
    """The folder's configured baseline, else ``.superqode/baseline.json``."""
    from ..qe import baseline

    return baseline.resolve_path(folder, None, cfg.qe.baseline) or folder / baseline.DEFAULT_PATH


def add_to_baseline(path: Path, findings: list[Finding]) -> Path:
    """Add ``findings`` to the baseline at ``path`` (created when missing)."""
    from ..qe import baseline

    return baseline.add(path, findings)
