"""The end of a QE session: the Quality Report built from what the roles
found (complete or not), and everything written in one batch."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models import Finding, Interpreter, Patch, QualityReport, RoleRun, Usage, summarize, utcnow
from ..workspace import namespaces, patchseal
from ..workspace.artifacts import Artifacts, ensure_superqode_dir
from ..workspace.coordinator import Coordinator
from ..workspace.errors import WorkspaceError
from . import baseline as baseline_mod
from .noise import NoiseResult
from .report import compute_verdict, render_markdown, write_json
from .report.bounded import JSON_MAX_FINDINGS, MD_MAX_FINDINGS, bounded
from .request import QERequest, Resolved
from .roles.base import SandboxSession
from .stamp import Stamp
from .verify_step import OVER_CAP, UNSAFE_PREFIXES

log = logging.getLogger(__name__)


def build_report(
    *, session_id: str, res: Resolved, started, t0: float, isolation: str, base_commit: str | None,
    noise: NoiseResult, verification, stamp: Stamp, runs: dict[str, RoleRun],
    patches: dict[str, Patch], timed_out: bool, cancelled: bool, epoch_moved: bool,
    interpreter: Interpreter | None = None, usage: Usage | None = None,
) -> QualityReport:
    """The report; ``runs`` is updated in place (roles never started say so)."""
    findings: list[Finding] = []
    for f in noise.findings:
        p = patches.get(f.fix_patch_id or "")
        if p is not None and p.verified and not f.verified:
            f = f.model_copy(update={"verified": True})
        findings.append(f)
    for name, run in runs.items():
        if run.reason == "not started":
            status = "timeout" if timed_out else "cancelled"
            runs[name] = run.model_copy(update={"status": status, "reason": f"not started ({status})"})
    kept = kept_patches(findings, patches)
    report = QualityReport(
        session_id=session_id,
        project=str(res.project),
        mode=res.mode,
        isolation=isolation or "auto",
        base_commit=base_commit,
        started_at=started,
        finished_at=utcnow(),
        duration_s=round(time.monotonic() - t0, 3),
        roles=list(runs.values()),
        findings=findings,
        patches=kept,
        summary=summarize(findings),
        suppressed=noise.suppressed,
        baseline_filtered=noise.baseline_filtered,
        stale=epoch_moved or bool(stamp.changed()),
        cancelled=cancelled,
        timed_out=timed_out,
        verification=verification,
        protection=namespaces.protection_level(res.config),
        usage=usage,
        interpreter=interpreter,
    )
    report.verdict = compute_verdict(report, res.config.qe.fail_on, res.config.qe.never_fail)
    return report


def kept_patches(findings: list[Finding], patches: dict[str, Patch]) -> list[Patch]:
    """The patches a report carries: each goes with its findings (gone when
    they were filtered out); one that fixes no finding (a generated test,
    say) stands alone."""
    used = {f.fix_patch_id for f in findings if f.fix_patch_id}
    return [p for p in patches.values() if p.id in used or not p.finding_ids]


@dataclass
class PatchFiles:
    """What ``save_patches`` wrote: ``report.artifacts`` entries, and whether
    a stop cut the patch files short."""

    paths: dict[str, str] = field(default_factory=dict)
    cancelled: bool = False
    # Their manifest entries, when written with ``hold``: save_report lists them.
    entries: list[dict[str, Any]] = field(default_factory=list)


def save_patches(
    request: QERequest, res: Resolved, patches: list[Patch], n_findings: int, artifacts: Artifacts,
    noise: NoiseResult | None, stop: Callable[[], bool] = lambda: False, hold: bool = False,
) -> PatchFiles:
    """The first half of ``save_report``: a file per patch, the baseline and
    the seals. Nothing of it depends on the revert's verdict, so the
    pipeline writes it while the revert runs. ``patches``: the report's
    (``kept_patches``); ``n_findings``: how many findings it has. ``hold``:
    the manifest entries stay in the result, for save_report to list."""
    artifacts.prepare()
    out = PatchFiles()
    # A file per fix the verifier tried (and per suppression); the thousands
    # over qe.verify_max_fixes live in the JSON report only (`superqe
    # suggestions show/apply` read them there): creating that many small
    # files took seconds. Verified fixes first, so a stop keeps those.
    # Not those the verifier never reached (the session ran out of time, or
    # they were never tried: ruff's unsafe fixes) on a run with more than
    # the JSON report lists: 14,000 files on a large project.
    small = n_findings <= JSON_MAX_FINDINGS
    files = [p for p in patches if not (p.verification or "").startswith(OVER_CAP)
             and (small or p.kind == "suppression" or _tried(p))]
    order = sorted(files, key=lambda p: (not p.verified, p.kind != "fix"))
    with artifacts.batch(held=out.entries if hold else None):
        for n, p in enumerate(order):
            if n % 64 == 0 and stop():
                out.cancelled = True
                break
            path = artifacts.write_patch(p.id, p.diff, finding_ids=p.finding_ids, verified=p.verified,
                                         patch_kind=p.kind)
            out.paths[f"patch:{p.id}"] = str(path)
        if request.update_baseline and res.baseline_path is not None and noise is not None:
            if _inside(res.baseline_path, res.project / ".superqode"):
                ensure_superqode_dir(res.project)
            baseline_mod.save(res.baseline_path, noise.before_baseline)
            out.paths["baseline"] = str(res.baseline_path)
        # Sealed outside the project: `suggestions apply` applies only these bytes.
        patchseal.seal(res.project, request.part_of or artifacts.session_id,
                       {p.id: p.diff for p in patches})
    return out


def save_report(
    request: QERequest, res: Resolved, report: QualityReport, artifacts: Artifacts,
    noise: NoiseResult | None, stop: Callable[[], bool] = lambda: False,
    written: PatchFiles | None = None,
) -> None:
    """Patches, baseline and reports, with ONE manifest update for all of them.

    ``stop()`` true (Ctrl-C while writing) skips the remaining patch files:
    thousands take seconds on a slow disk, and every diff is in the report
    anyway; the report is then marked cancelled. ``written``: what
    ``save_patches`` wrote already (the caller's batch holds its entries)."""
    with artifacts.batch():
        if written is None:
            written = save_patches(request, res, report.patches, len(report.findings), artifacts,
                                   noise, stop)
        artifacts.list_with(written.entries)
        report.artifacts.update(written.paths)
        # A Ctrl-C after the patch files but before the report is still the
        # user's stop: the report says so (exit 130), as during the patches.
        if written.cancelled or (stop() and not report.cancelled):
            report.cancelled = True
            report.verdict = compute_verdict(report, res.config.qe.fail_on, res.config.qe.never_fail)
        if request.part_of:
            return  # the run's merged report is written under its own id
        when = report.started_at
        json_path = artifacts.report_path("json", when)
        md_path = artifacts.report_path("md", when)
        report.artifacts["json"] = str(json_path)
        report.artifacts["markdown"] = str(md_path)
        artifacts.write_report("md", _markdown(report, stop()), when)
        artifacts.write_report("json", write_json(bounded(report, JSON_MAX_FINDINGS)), when)


def _tried(p: Patch) -> bool:
    """Whether the verifier judged ``p`` (its verdict may be worth a file)."""
    v = p.verification or ""
    return bool(v) and not v.startswith(UNSAFE_PREFIXES)


def _markdown(report: QualityReport, stopped: bool) -> str:
    """At most MD_MAX_FINDINGS findings, stopped or not (rendering 10k+ of
    them was most of a second the user waited for, and 18 MB on disk)."""
    short = bounded(report, MD_MAX_FINDINGS)
    if short is report:
        return render_markdown(report)
    note = (f"\n_The {len(short.findings)} most important of {len(report.findings)} findings are "
            "listed here; `superqe run --sarif FILE` writes all of them._\n")
    return render_markdown(short) + note


def epoch_moved(s: SandboxSession) -> bool:
    """The watcher (language server) bumps the repository's change epoch when
    the user's files change; the session's lock remembers the epoch it began at."""
    lock = s.lock
    if lock is None:
        return False
    try:
        return Coordinator(Path(s.project)).is_result_stale(lock)
    except (OSError, WorkspaceError, ValueError):
        return False


def sandbox_root(s: SandboxSession, project: Path) -> Path:
    """Where ``project`` is inside the sandbox: a folder inside a git
    repository is sandboxed with its whole repository."""
    top = Path(s.project).resolve()
    try:
        sub = project.resolve().relative_to(top)
    except ValueError:
        sub = Path()
    return Path(s.sandbox) / sub


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(path).resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def normalize_finding(f: Finding, role: str, sandbox: Path) -> Finding:
    """A role's finding with a sandbox-relative POSIX path, its role and a stable id."""
    update: dict[str, Any] = {}
    if f.file:
        rel = f.file.replace("\\", "/")
        p = Path(rel)
        if p.is_absolute():
            try:
                rel = p.relative_to(sandbox).as_posix()
            except ValueError:
                try:
                    rel = p.resolve().relative_to(sandbox.resolve()).as_posix()
                except ValueError:
                    pass
        rel = rel.removeprefix("./")
        if rel != f.file:
            update["file"] = rel
    if not f.role:
        update["role"] = role
    if update:
        f = f.model_copy(update=update)
    return f.with_stable_id()


def poll_guard(s: SandboxSession) -> None:
    """Publish git commands the sandbox guard refused (``git.blocked``) as
    roles finish, not only when the session ends."""
    try:
        s.guard_events()
    except (OSError, ValueError):
        log.warning("could not read the git guard's events", exc_info=True)


def blocked_log(records: list[dict]) -> str:
    """The guard log: each git command a session's processes tried and the
    sandbox blocked, with who ran it, where and why it was refused."""
    lines = [f"git commands blocked in the sandbox: {len(records)}"]
    for r in records:
        what = r.get("command") or " ".join(map(str, r.get("argv") or []))
        lines.append(f"{r.get('source', '?')} pid {r.get('pid', '?')} in {r.get('cwd', '?')}: "
                     f"{what}: {r.get('reason', '')}")
    return "\n".join(lines) + "\n"
