"""What a QE session is asked to do (``QERequest``) and its validation:
``resolve_request`` turns it into a ``Resolved`` plan or raises a one-line
``ConfigError``/``WorkspaceError`` before anything is created."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..config import Config, ConfigError, load_config
from ..runtime import Runtime
from ..workspace.artifacts import check_superqode_dir
from ..workspace.errors import WorkspaceError
from ..workspace.git import GitError, head_commit, repo_root, resolve_commit
from ..workspace.paths import check_home
from . import baseline as baseline_mod
from .roles import REGISTRY, UnknownRole

MODES = ("quick", "deep")
ISOLATIONS = (None, "auto", "worktree", "snapshot")


@dataclass
class QERequest:
    project: Path
    mode: str = "quick"  # "quick" | "deep"
    roles: list[str] | None = None  # None = the mode's roles from config
    files: list[str] | None = None  # restrict to these project-relative files
    overlays: dict[str, bytes] = field(default_factory=dict)  # unsaved editor buffers
    isolation: str | None = None  # None/"auto" | "worktree" | "snapshot"
    base_ref: str | None = None
    config_overrides: dict = field(default_factory=dict)
    trusted: bool = True  # False: roles with executes_code are skipped
    baseline: Path | None = None
    update_baseline: bool = False
    timeout: float | None = None
    started: float | None = None  # time.monotonic() the command began: the budget counts from it
    python: str | None = None  # the interpreter the editor selected (roles.python wins)
    since: str | None = None  # report only what changed since the merge-base with this ref
    shard: tuple[int, int] | None = None  # (K, N): this run does the K-th of N shares (qe/shard.py)
    # False: no report, patch or seal files (the editor's automatic runs,
    # one per pause in typing); the report and patches stay in memory.
    save_artifacts: bool = True
    # False: the accepted fixes are not type-checked with the project's mypy
    # (the editor's automatic runs: a whole-program check, seconds of CPU per
    # pause in typing on the cores the next change's run needs; "Run QE"
    # keeps it). Their fixes say what did verify them.
    type_gate: bool = True
    # A later session of the editor run with this id (the roles the trust
    # answer let run, a file run's whole-tree roles): the run writes one
    # report, merged, under its id, so this session writes none of its own
    # and seals its fixes under that id, the id the merged report names.
    part_of: str | None = None
    # The front end's choices for the tools and the agents' questions: made
    # by the CLI or the language server, carried to every role (runtime.py).
    runtime: Runtime = field(default_factory=Runtime.background)


@dataclass
class Resolved:
    project: Path
    config: Config
    mode: str
    roles: list[str]
    explicit: bool
    files: list[str] | None
    isolation: str | None
    budget: float
    baseline_path: Path | None
    baseline: Any  # Counter[str] | None


def _norm_rel(project: Path, rel: str) -> str:
    p = Path(rel)
    if p.is_absolute():
        try:
            p = p.resolve().relative_to(project)
        except ValueError:
            raise ConfigError(f"file outside the project: {rel}") from None
    pure = PurePosixPath(p.as_posix())
    if ".." in pure.parts:
        raise ConfigError(f"file outside the project: {rel}")
    text = pure.as_posix()
    return text.removeprefix("./")


def resolve_request(req: QERequest) -> Resolved:
    """Validate everything the user gave; raise before anything is created."""
    project = Path(req.project).expanduser()
    if not project.exists():
        raise WorkspaceError(f"no such project folder: {project}")
    if not project.is_dir():
        raise WorkspaceError(f"not a folder: {project}")
    project = project.resolve()
    config = load_config(project, req.config_overrides or None)
    if req.mode not in MODES:
        raise ConfigError(f"unknown mode {req.mode!r} (use quick or deep)")
    if req.isolation not in ISOLATIONS:
        raise ConfigError(f"unknown isolation {req.isolation!r} (use worktree or snapshot)")
    isolation = req.isolation or config.workspace.isolation
    if isolation == "auto":
        isolation = None
    _check_git_needs(project, isolation, req.base_ref)
    check_superqode_dir(project)
    check_home(project)
    explicit = req.roles is not None
    if explicit:
        names = list(dict.fromkeys(req.roles or []))
        if not names:
            raise ConfigError("no roles selected")
    else:
        names = list(dict.fromkeys(config.qe.quick_roles if req.mode == "quick" else config.qe.deep_roles))
    for name in names:
        if name not in REGISTRY:
            raise ConfigError(str(UnknownRole(name)))
    files = None
    if req.files is not None:
        files = list(dict.fromkeys(_norm_rel(project, f) for f in req.files))
    if req.timeout is not None and not req.timeout > 0:
        raise ConfigError(f"timeout must be a positive number of seconds (got {req.timeout})")
    budget = req.timeout or (config.qe.budgets.quick if req.mode == "quick" else config.qe.budgets.deep)
    path = baseline_mod.resolve_path(project, req.baseline, config.qe.baseline)
    if req.update_baseline and path is None:
        path = project / baseline_mod.DEFAULT_PATH
    counts = None
    if path is not None:
        if req.update_baseline:
            baseline_mod.check_writable(path)
        else:
            counts = baseline_mod.load(path)
    return Resolved(project, config, req.mode, names, explicit, files, isolation, budget, path, counts)


def _check_git_needs(project: Path, isolation: str | None, base_ref: str | None) -> None:
    """--worktree and --base-ref need git: say so before the session starts
    (the sandbox layer checks again, with the same words)."""
    if isolation != "worktree" and not base_ref:
        return
    root = repo_root(project)
    if root is None:
        if base_ref:
            raise WorkspaceError("--base-ref needs a git repository")
        raise WorkspaceError(f"{project}: not a git repository; use --snapshot")
    if isolation == "worktree" and not base_ref and head_commit(root) is None:
        raise WorkspaceError(f"{root}: the repository has no commit yet; use --snapshot")
    if base_ref:
        try:
            resolve_commit(root, base_ref)
        except GitError:
            raise WorkspaceError(f"--base-ref: unknown revision {base_ref!r}") from None
        if isolation == "snapshot":
            raise WorkspaceError("--base-ref works with worktree isolation only")
