"""Quick mode's fix verification for a role done while the others still run
(verify_step, verifier).

Verifying a role's fixes writes copies of the fixed files (and copies beside
them) into the tree the tool re-runs on: in the sandbox it cannot overlap the
roles still reading it (the security role). So when a role with fixes ends
first, its fixes are judged at once the way the verification step would judge
them -- the same verifier, its merged-copies route -- on a tree of the
session's own that no role reads: the folders on the way to each fixed file
are real, the fixed files real copies, and every other entry of those
folders a link to the sandbox's, so the tool finds the same configuration,
packages and names beside each file as it would in the sandbox. That tree is
in the session's private folder, which none of the session's processes may
write (the re-run only reads it).

The verification step takes these verdicts only when they are the ones it
would reach itself (``EarlyVerify.take``): the same fixes chosen for that
role (after the noise filter and the cap), files shared between fixes and no
test able to judge any of them, for the same reason file by file; otherwise it
verifies them itself, as before. The merged-copies route judges a role's fixes
in an order of their own (``Verifier._on_copies``), so the order the filter
gives them changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..models import Finding, Patch
from .covering import SuiteProbeLike
from .fix_judge import VerifyResult
from .patching import patch_files, shares_files
from .roles.base import Role, RoleContext, SandboxSession
from .verifier import Verifier
from .verify_exports import ExportReads

log = logging.getLogger(__name__)

# Entries the tree may hold (links and copies): past this the folders on the
# way to the fixed files are large, and the step after the roles does it.
MAX_ENTRIES = 5000


def build_tree(sandbox: Path, files: list[str], dest: Path) -> Path | None:
    """``dest`` made a tree for re-running a tool on copies of ``files``
    (sandbox-relative): their folders real, the files copied (bytes and mode),
    every other entry of those folders a link to the sandbox's; None (nothing
    left behind) where a fixed file or a folder on its way is not a plain one
    in the sandbox (a link, a file with other links: the verification step
    treats those its own way) or the tree would be too large."""
    top = os.path.realpath(sandbox)
    folders: dict[str, set[str]] = {"": set()}  # real folder -> its entries made real
    for rel in files:
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or ".." in parts:
            return None
        for k in range(len(parts)):
            here = "/".join(parts[:k])
            folders.setdefault(here, set()).add(parts[k])
    try:
        for rel in files:
            st = os.lstat(os.path.join(top, rel))
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                return None
        for folder in folders:
            if folder and not stat.S_ISDIR(os.lstat(os.path.join(top, folder)).st_mode):
                return None  # a link on the way: the sandbox's own path is what the tool would see
        listed = {folder: os.listdir(os.path.join(top, folder)) for folder in folders}
    except OSError:
        return None
    if sum(len(names) for names in listed.values()) > MAX_ENTRIES:
        return None
    made = set(files)
    try:
        for folder in sorted(folders, key=len):
            out = dest / folder
            out.mkdir(exist_ok=True)
            for name in listed[folder]:
                rel = f"{folder}/{name}" if folder else name
                if name in folders[folder] and rel not in made:
                    continue  # a folder of the tree: made real in its turn
                if rel in made:
                    shutil.copy2(os.path.join(top, rel), out / name, follow_symlinks=False)
                    if not stat.S_ISREG(os.lstat(out / name).st_mode):
                        # swapped for a link since the look above (the session's
                        # processes run meanwhile): SuperQode never reads through it
                        raise OSError(f"{rel} is no longer a plain file")
                else:
                    os.symlink(os.path.join(top, rel), out / name)
    except OSError:
        shutil.rmtree(dest, ignore_errors=True)
        return None
    return dest


@dataclass
class SandboxReads:
    """What ``verify_step.never_verifiable`` read of one run's sandbox: whether each
    folder declares a Python version, whether each module is a facade. One
    a run (``EarlyVerify.reads``), passed to the early verification's pick
    and to the step after the roles, which read the same files (roles that
    edit the sandbox get no early verification, so nothing changes between
    them); at most one entry a fixed file and a folder on its way. ``root``:
    the tree they are of (set by the first reader; another tree reads anew)."""

    root: Path | None = None
    declares: dict[Path, bool] = field(default_factory=dict)
    facades: dict[str, bool] = field(default_factory=dict)
    exports: ExportReads = field(default_factory=ExportReads)


@dataclass
class Early:
    """Verdicts reached on the tree: for ``ids`` (a role's fixes), with the
    reason no test judged each file (``whys``)."""

    role: str
    ids: frozenset[str]
    results: list[VerifyResult]
    whys: dict[str, str | None]


@dataclass
class EarlyVerify:
    """One early verification per session (the first role with fixes to end
    while others still run). ``deadline``: the verification step's (the
    event loop's clock)."""

    session: SandboxSession
    root: Path
    deadline: float
    cap: int
    trusted: bool
    _task: asyncio.Task[Early | None] | None = None
    _tree: Path | None = None
    _offered: bool = field(default=False)
    # For the report's timings: how long it ran (s), and whether the step
    # after the roles took its verdicts.
    took: float | None = None
    taken: bool = False
    kept: bool = False  # its verdicts were an earlier run's (verify_cache.py)
    # The run's reads for verify_step.never_verifiable (the pick's and the step's).
    reads: SandboxReads = field(default_factory=SandboxReads)

    def offer(
        self, role: Role, ctx: RoleContext, found: dict[str, list[Finding]],
        pick: Callable[[], tuple[list[Patch], list[Patch]]], candidates: list[str],
        covering: tuple[Any, str], probe: SuiteProbeLike | None,
    ) -> bool:
        """Start judging ``role``'s fixes now: those ``pick`` returns (in a
        thread: (the fixes verify_step.choose would pick from the role's
        findings as the noise filter leaves them, those past the cap)); its
        findings are in ``found``; ``candidates``: the files of all its fixes.
        False where this session's early
        verification is spent or cannot be done here."""
        private = getattr(self.session, "private", None)
        if not self.open_to(ctx) or private is None:
            return False
        self._offered = True
        self._task = asyncio.ensure_future(self._run(role, ctx, found, pick, candidates, Path(private),
                                               covering, probe))
        return True

    def decline(self) -> None:
        """Spent without starting anything: the first role with fixes offers
        more than the cap (verify_step.over_the_cap)."""
        self._offered = True

    def open_to(self, ctx: RoleContext) -> bool:
        """Whether a role run in ``ctx`` may still be offered (asked before
        anything is prepared for it)."""
        return (not self._offered and ctx.sandbox == self.root and self.cap > 0
                and getattr(self.session, "private", None) is not None
                and getattr(self.session, "isolation", None) != "sparse")

    async def _run(
        self, role: Role, ctx: RoleContext, found: dict[str, list[Finding]],
        pick: Callable[[], tuple[list[Patch], list[Patch]]], candidates: list[str], private: Path,
        covering: tuple[Any, str], probe: SuiteProbeLike | None,
    ) -> Early | None:
        began = asyncio.get_running_loop().time()
        try:
            return await self._judge(role, ctx, found, pick, candidates, private, covering, probe)
        finally:
            self.took = round(asyncio.get_running_loop().time() - began, 3)

    async def _judge(
        self, role: Role, ctx: RoleContext, found: dict[str, list[Finding]],
        pick: Callable[[], tuple[list[Patch], list[Patch]]], candidates: list[str], private: Path,
        covering: tuple[Any, str], probe: SuiteProbeLike | None,
    ) -> Early | None:
        from . import verify_cache  # with noise_cache, imported ahead (ahead.AFTER_START)

        private.mkdir(parents=True, exist_ok=True)
        dest = Path(tempfile.mkdtemp(prefix="verify-early-", dir=private))
        self._tree = dest
        tests, why = covering
        # The fixes to judge and the index of what the tests import, at once.
        (todo, over), _ = await asyncio.gather(
            asyncio.to_thread(pick), tests.for_files([]) if tests is not None else asyncio.sleep(0))
        if over or not todo or not shares_files(todo):
            return None  # git applies these one round at a time: the step after the roles does it
        files = sorted({f for p in todo for f in (p.files or patch_files(p.diff))})
        if any(len(p.files or patch_files(p.diff)) != 1 for p in todo) or not set(files) <= set(candidates):
            return None
        verifier = Verifier(
            sandbox=dest, roles={role.name: role}, contexts={role.name: replace(ctx, sandbox=dest)},
            findings_by_role=found, session=self.session, deadline=self.deadline, covering=tests,
            no_tests_reason=why or "no tests were run", probe=probe if tests is not None else None,
        )
        if not await verifier.fix_tests.none_at_all(files):
            return None  # tests would judge some: the step after the roles runs them
        ids = frozenset(p.id for p in todo)
        # The same fixes on the same tree judged by an earlier run: no tree,
        # no copies, no re-run (verify_cache.py).
        key, kept = await verify_cache.lookup(self.session.project, self.root, role, ctx,
                                              list(found.get(role.name, [])), todo,
                                              verifier.fix_tests.why_none)
        if kept is not None:
            self.kept = True
            return Early(role.name, ids, kept.results, dict(kept.whys))
        # The tree: for every file the role offers a fix in (most are picked).
        if await asyncio.to_thread(build_tree, self.root, candidates, dest) is None:
            return None
        results: list[VerifyResult] = []
        left = await verifier._on_copies(role, verifier.contexts[role.name], todo, results.append)
        if left:
            return None
        whys = {rel: await verifier.fix_tests.why_none([rel]) for rel in files}
        await verify_cache.store(key, results, whys)
        return Early(role.name, ids, results, whys)

    async def take(self, todo: list[Patch], fix_tests: Any) -> tuple[str, list[VerifyResult]] | None:
        """(the role, its verdicts) where they are the ones the verification
        step would reach for ``todo``: the same fixes of that role, and the
        same reason file by file why no test judges them; else None."""
        early = await self._result()
        if early is None:
            return None
        mine = {p.id for p in todo if p.role == early.role}
        if mine != early.ids:
            return None
        for rel, why in early.whys.items():
            if why is None or await fix_tests.why_none([rel]) != why:
                return None
        self.taken = True
        return early.role, early.results

    async def _result(self) -> Early | None:
        if self._task is None:
            return None
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            raise
        except Exception:  # the verification step verifies them itself
            log.warning("early fix verification failed", exc_info=True)
            return None

    async def close(self) -> None:
        """Stopped and waited for (its re-run never outlives the sandbox);
        its tree removed."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await self._task
        if self._tree is not None:
            await asyncio.to_thread(shutil.rmtree, self._tree, True)
            self._tree = None
