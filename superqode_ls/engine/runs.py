"""A QE run, for both front ends: the one request (``QERequest``, built
here from what the CLI's flags or the editor's runQE arguments say), the
session that carries it out, and what the editor needs around it (the
per-finding filter for streamed findings, the baseline it applies).

The pipeline is imported when the first run is made, so the server answers
``initialize`` without loading the analyzers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models import Finding

if TYPE_CHECKING:
    from ..config import Config
    from ..events import EventBus
    from ..qe.pipeline import QESession
    from ..qe.request import QERequest

__all__ = [
    "editor_baseline", "finding_filter", "load_baseline", "new_session_id",
    "problem_counter", "request", "session",
]


def __getattr__(name: str) -> Any:
    if name == "SessionFailed":  # a run that failed, with its partial report
        from ..qe.pipeline import SessionFailed

        return SessionFailed
    raise AttributeError(name)


def new_session_id() -> str:
    """A fresh session id (``qe-YYYYMMDD-HHMMSS-xxxxxx``)."""
    from ..workspace.paths import new_session_id as _new

    return _new()


def request(project: Path, **fields: Any) -> QERequest:
    """The one request a run is made from: ``superqe run``'s flags and the
    editor's runQE arguments both end here. ``fields`` are QERequest's
    (mode, roles, files, overlays, isolation, base_ref, config_overrides,
    trusted, baseline, update_baseline, timeout, python, since, shard,
    save_artifacts, part_of); everything is checked when the session starts."""
    from ..qe.request import QERequest

    return QERequest(project=Path(project), **fields)


def session(req: QERequest, *, bus: EventBus | None = None,
            session_id: str | None = None) -> QESession:
    """The session that carries out ``req``: ``await s.run()`` gives the
    report (or raises SessionFailed with the partial one), ``s.cancel()``
    stops it through its revert, ``s.patches`` holds its fixes."""
    from ..qe.pipeline import QESession

    return QESession(req, bus=bus, session_id=session_id)


def finding_filter(
    folder: str, overlays: dict[str, bytes], threshold: float, baseline: Counter[str] | None = None,
) -> Callable[[Finding], bool]:
    """Whether a streamed finding stays: the engine's own per-finding rules
    (inline suppression on its lines, confidence threshold), read against the
    text the run analysed (its buffers over the folder), then the baseline
    (each baselined id hides as many findings as it counts)."""
    from ..qe.noise import FileLines, filter_findings

    read_line = FileLines(folder, overlays)
    remaining = Counter(baseline or {})

    def keep(f: Finding) -> bool:
        # De-duplication and path classes need every finding: they stay the
        # report's work (path_classes={} turns that step off here).
        if not filter_findings([f], read_line=read_line, threshold=threshold,
                               path_classes={}).findings:
            return False
        if remaining[f.id] > 0:
            remaining[f.id] -= 1
            return False
        return True

    return keep


def problem_counter() -> Callable[[Finding], int]:
    """A count of streamed findings as the report will count them: each call
    adds one and returns the total. The report merges one problem that two
    tools report (ruff ``S602`` and bandit ``B602`` on one line) and the
    static findings of one line (noise.py, steps 4 and 7) only at the end, so
    a count of every streamed finding came out above the end's ("89 findings"
    in progress, "87" at the end). Both merges join findings of one line only:
    the merged count of each line is kept, and only the new finding's line
    counted again."""
    from ..qe.noise import deduplicate, merge_lines

    lines: dict[tuple, list[Finding]] = {}
    counted: dict[tuple, int] = {}
    total = 0

    def add(f: Finding) -> int:
        nonlocal total
        # A finding without a line merges with nothing; a failing test is
        # kept apart on a shared line (noise.deduplicate) and never joins a
        # line's merge (its category is not a static one).
        line = f.range.start_line if f.range else None
        key = (f.file, line) if line is not None and f.category != "tests" else ("id", f.id)
        group = lines.setdefault(key, [])
        group.append(f)
        n = len(merge_lines(deduplicate(group)[0])[0])
        total += n - counted.get(key, 0)
        counted[key] = n
        return total

    return add


def finding_shape(classes: dict[str, list[str]]) -> Callable[[Finding], Finding]:
    """A streamed finding levelled as the report will level it by its path
    (``qe.path_classes``: a static finding in tests/ or docs/ one level
    lower, as noise); one finding at a time, the class depends on its path."""
    from ..qe.noise_paths import classify_paths

    def shape(f: Finding) -> Finding:
        return classify_paths([f], classes)[0] if classes else f

    return shape


def load_baseline(folder: str, cfg: Config, editor_path: Path | None = None) -> Counter[str] | None:
    """The folder's configured baseline (else the editor's, ``editor_path``);
    None when there is none or it cannot be read (the session then fails with
    the engine's own message)."""
    from ..qe import baseline as baseline_mod

    path = baseline_mod.resolve_path(Path(folder), None, cfg.qe.baseline) or editor_path
    if path is None:
        return None
    try:
        return baseline_mod.load(path)
    except Exception:  # noqa: BLE001 - reported by the session itself
        return None


def editor_baseline(folder: str, cfg: Config) -> Path | None:
    """The baseline "ignore this finding" writes (``.superqode/baseline.json``)
    applies to editor runs once it exists, unless ``qe.baseline`` names another."""
    from ..qe.baseline import DEFAULT_PATH

    path = Path(folder) / DEFAULT_PATH
    return path if cfg.qe.baseline is None and path.is_file() else None


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` -> (K, N); ValueError with the reason."""
    from ..qe.shard import parse_shard as _parse

    return _parse(text)


def sparse_split(project: Path, files: list[str] | None, overlays: dict[str, bytes], cfg: Config,
                 roles: list[str], *, isolation: str | None) -> tuple[list[str], list[str]] | None:
    """For a run on a few files: (file-local roles that may run now in a
    sparse sandbox, roles that need the whole tree), or None when the run
    gets one full sandbox."""
    from ..qe import sparse_plan

    if not sparse_plan.allowed(project, files, overlays, cfg, isolation=isolation):
        return None
    plan = sparse_plan.split(roles, cfg)
    if plan is None or not plan[0] or not plan[1]:
        return None
    return plan
