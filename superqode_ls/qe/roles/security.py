"""security_tester: bandit, a secrets scan, and a few dangerous patterns
bandit does not look for. Mechanical, behaviour-preserving fixes become
patches: ``yaml.load``/``yaml.unsafe_load`` -> ``yaml.safe_load`` and weak
hashes (md5/sha1) marked ``usedforsecurity=False`` (which keeps their output,
so cache keys and ETags stay the same; a hash that protects anything should
move to sha256 instead, which the finding says).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

from ...models import Finding, RoleStatus
from ..noise import path_class
from ._bandit_cache import BanditCache, open_cache, store_walk, tree_folders
from ._bandit_results import bandit_findings, never_shown
from ._batches import Plan, by_folder, left_out_reason, plan_batches
from ._common import (
    SKIP_DIRS,
    SourceCache,
    assign_ids,
    load_json,
    rel_to,
    selected_files,
    tail,
    worker_count,
)
from ._patches import attach
from ._security_fixes import fixes
from ._security_scan import TEXT_SUFFIXES, Progress, merge_secrets, scan_files
from ._web_cache import open_cache as open_web_cache
from ._web_chains import merge_chains
from ._web_quiet import quiet
from .base import FileCheckRole, RoleContext, RoleOutput, ToolFailed, tool_path

# How long the role waits, once its scans are told to stop, for the file at
# hand to be finished before it takes what the others found.
SCAN_GRACE_S = 1.0
# the rules _security_fixes makes patches for
FIXABLE = ("B506", "B324", "yaml-unsafe-load")


class SecurityTester(FileCheckRole):
    name = "security_tester"
    tool = "bandit"
    cost = 2
    file_local = True
    description = "bandit + secrets scan + extra dangerous patterns; safe fixes as patches"

    def unavailable(self, config=None) -> str | None:
        return None  # the secrets scan runs even without bandit

    async def _check(self, ctx: RoleContext, files: list[str] | None) -> RoleOutput:
        root = ctx.sandbox
        # bandit's own walk takes .pyw too; the pattern scans read .py only
        bandit_files = selected_files(root, files, (".py", ".pyw"))
        py_files = [f for f in bandit_files if f.endswith(".py")]
        text_files = [
            f
            for f in selected_files(root, files)
            if f.endswith(TEXT_SUFFIXES)
            or "." not in Path(f).name
            or Path(f).name.startswith(".env")
        ]
        if not bandit_files and not text_files:
            return RoleOutput(status="skipped", reason="no files to scan", tool="bandit")
        src = SourceCache(root)
        findings: list[Finding] = []
        reason: str | None = None
        status: RoleStatus = "ok"
        bandit = tool_path("bandit")
        # The pure-Python scans run in a thread while bandit runs as a process:
        # on two cores that hides most of the scan's time.
        stop, missed, progress = threading.Event(), list[str](), Progress()
        # product code first, as bandit's batches: a stop leaves the tests
        scan_order = sorted(py_files, key=self._demoted(ctx))
        scan = asyncio.ensure_future(asyncio.to_thread(
            _scan, ctx.project, self.name, root, SourceCache(root), scan_order, text_files, stop,
            missed, progress))
        stop_at = _stop_at(ctx)
        try:
            if bandit is None:
                reason = "bandit is not installed in SuperQode's environment; ran the secrets scan only"
            elif bandit_files:
                unscanned: list[str] = []
                left_out: list[str] = []
                bandit_out = await self._bandit(
                    ctx, bandit, bandit_files, files is None, unscanned, left_out, stop_at
                )
                if unscanned:
                    reason = _unscanned_reason(unscanned)
                if left_out:
                    status = "incomplete"
                    reason = "; ".join(filter(None, (left_out_reason(left_out), reason)))
                findings.extend(
                    await asyncio.to_thread(bandit_findings, self.name, root, src, bandit_out))
            left = None if stop_at is None else stop_at - asyncio.get_running_loop().time()
            try:
                extra = await asyncio.wait_for(asyncio.shield(scan), max(0.0, left)
                                               if left is not None else None)
            except TimeoutError:
                stop.set()  # ends after the file at hand, with what it found
                try:
                    extra = await asyncio.wait_for(asyncio.shield(scan), SCAN_GRACE_S)
                except TimeoutError:
                    # a large file's checks at a loaded machine's pace: what
                    # the finished files found (the thread ends at the next one)
                    extra, missed = progress.so_far(scan_order, text_files)
            extra = _in_file_order(extra, py_files)
            if missed:
                status = "incomplete"
                why = (f"the secrets and pattern scans ran out of time: {len(missed)} files not "
                       f"scanned ({by_folder(missed)}); product code was scanned first")
                reason = "; ".join(filter(None, (why, reason)))
        finally:
            stop.set()
        # what the code proves harmless is noise before ids and fixes are made
        # bandit's report of a sink a chain of calls reaches is that chain's finding;
        # in a thread, and ending 2 s before the role's deadline (up to 4 s on a
        # busy machine: the module it is parsing then may take that long): it
        # parses every module with a finding it checks
        left = ctx.remaining()
        late: list[Finding] = []
        merged = merge_chains(merge_secrets(findings, extra))
        keep = 2.0 * busy(ctx.runtime.cpu_count())
        findings = await asyncio.to_thread(
            quiet, merged, src.text, None if left is None else time.monotonic() + left - keep, late,
            src.root)
        if late:
            status = "incomplete"
            why = (f"the web context checks ran out of time: {len(late)} finding(s) not "
                   "checked (tagged 'unfiltered')")
            reason = "; ".join(filter(None, (reason, why)))
        findings = assign_ids(findings)
        patches = []
        if ctx.remaining() != 0.0:
            patches = await asyncio.to_thread(fixes, src, findings)
        elif any(f.rule_id in FIXABLE for f in findings):
            # past its deadline: the findings now, no fixes (they parse files)
            reason = "; ".join(filter(None, (reason, "no time left to make fixes")))
        return RoleOutput(
            findings=attach(findings, patches), patches=patches, tool="bandit", reason=reason,
            status=status,
        )

    async def _bandit(
        self, ctx: RoleContext, bandit: str, py_files: list[str], whole: bool,
        unscanned: list[str] | None = None, left_out: list[str] | None = None,
        stop_at: float | None = None,
    ) -> list[dict[str, Any]]:
        """bandit's results (``ToolFailed`` when it gives none); files it could
        not parse (not UTF-8, binary, syntax errors) are added to ``unscanned``
        as ``file (why)``, those it had no time for to ``left_out``.
        ``whole``: the files are the whole tree.

        bandit analyses one file at a time on one CPU, and is most of quick
        mode's time: on a big project its files go in batches (``_batches``:
        product code first, tests and docs after, split by size among
        several bandit processes, results merged in the order one process
        gives them), so a deadline costs only what was not reached."""
        cmd = [bandit, "-f", "json", "-q"]
        if (ctx.sandbox / "pyproject.toml").is_file():
            try:
                text = (ctx.sandbox / "pyproject.toml").read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
            if "[tool.bandit" in text:
                cmd += ["-c", "pyproject.toml"]
        if whole:
            cmd += ["-x", ",".join(f"*/{d}/*" for d in sorted(SKIP_DIRS)) + ",*.egg-info/*"]
        # Files bandit scanned before, unchanged, answer from SuperQode's
        # cache of its results (``_bandit_cache``); bandit scans the rest.
        cache = open_cache(ctx.project, ctx.sandbox, bandit, cmd[1:])
        results: list[dict[str, Any]] = []
        todo = py_files
        if cache is not None:
            results, todo = await asyncio.to_thread(cache.split, py_files)
        plan = plan_batches(ctx.sandbox, todo, worker_count(ctx.config, ctx.runtime), self._demoted(ctx))
        outs: list[dict[str, Any]] = []
        if todo and plan is None and whole and (cache is None or not cache.hits):
            # bandit's own walk (a small tree) also reads the tree's
            # ``.bandit`` files: kept only where there was none and none
            # came and went meanwhile, as the cache's key does not hold them
            folders = await asyncio.to_thread(tree_folders, ctx.sandbox) if cache is not None else None
            outs = [await self._bandit_run(ctx, cmd + ["-r", "."], None)]
            if folders is not None:
                await asyncio.to_thread(store_walk, cache, todo, outs[0], folders)
        elif todo and plan is None:
            outs = [await self._bandit_run(ctx, cmd + ["--", *todo], None)]
            if cache is not None:
                await asyncio.to_thread(cache.store, todo, outs[0])
        elif todo:
            assert plan is not None
            outs = await self._bandit_batches(ctx, cmd, plan, left_out, stop_at, cache)
        if cache is not None and cache.written:
            await asyncio.to_thread(cache.prune)
        for data in outs:
            results.extend(data.get("results") or [])
            if unscanned is not None:
                for err in data.get("errors") or []:
                    if isinstance(err, dict) and err.get("filename"):
                        rel = rel_to(ctx.sandbox, str(err["filename"]))
                        unscanned.append(f"{rel} ({err.get('reason') or 'unreadable'})")
        if len(outs) > 1 or cache is not None and cache.hits:
            # one process lists its results by file name, stably
            results.sort(key=lambda r: rel_to(ctx.sandbox, str(r.get("filename", ""))))
        return results

    @staticmethod
    def _demoted(ctx: RoleContext):
        classes = ctx.config.qe.path_classes
        return lambda rel: path_class(rel, classes) is not None

    async def _bandit_batches(self, ctx: RoleContext, cmd: list[str], plan: Plan,
                              left_out: list[str] | None, stop: float | None,
                              cache: BanditCache | None = None) -> list[dict[str, Any]]:
        """bandit over ``plan``'s batches, ``plan.width`` at a time, in order.
        At ``stop`` (the deadline less the time to report what was found) the
        running batches stop: the finished ones' results come back and
        ``left_out`` gets the files not scanned; none finished is a timeout."""
        queue = list(enumerate(plan.batches))
        done: dict[int, dict[str, Any]] = {}
        missed: list[int] = []
        n = len(plan.batches)

        async def worker() -> None:
            while queue:
                k, batch = queue.pop(0)
                left = None if stop is None else stop - asyncio.get_running_loop().time()
                if left is not None and left <= 0:
                    missed.append(k)
                    continue
                argv = cmd + ["--", *(f"./{f}" for f in batch)]
                try:
                    done[k] = await self._bandit_run(ctx, argv, f"{k + 1}/{n}", timeout=left)
                except ToolFailed as e:
                    if e.status != "timeout":
                        raise
                    missed.append(k)
                    continue
                if cache is not None:  # kept as each batch ends: a later stop loses none of it
                    await asyncio.to_thread(cache.store, batch, done[k])

        await asyncio.gather(*(worker() for _ in range(min(plan.width, n))))
        if not done:
            raise ToolFailed("bandit", "bandit ran out of time", status="timeout")
        if left_out is not None:
            left_out.extend(f for k in sorted(missed) for f in plan.batches[k])
        return [done[k] for k in sorted(done)]

    async def _bandit_run(self, ctx: RoleContext, argv: list[str], shard: str | None,
                          timeout: float | None = None) -> dict[str, Any]:
        warm = ctx.runtime.analyzer
        res = None
        if timeout is None:
            timeout = ctx.remaining()
        if warm is not None and warm.serves(argv[0]):
            # Said as it starts, as the command's is ("running bandit"); one
            # it cannot serve after all says so again, as the command.
            ctx.emit("tool_call", tool="bandit", argv=argv[:20], warm=True)
            res = await warm.run(argv[1:], ctx.sandbox, ctx.env, timeout)
        if res is None:
            res = await ctx.run(argv, shard=shard, timeout=timeout)
        if res.timed_out:
            raise ToolFailed("bandit", "bandit ran out of time", status="timeout")
        try:
            data = await asyncio.to_thread(load_json, res.stdout)
        except ValueError:
            data = None
        if res.returncode not in (0, 1) or not isinstance(data, dict):
            why = tail(res.stderr) or f"exit code {res.returncode}"
            raise ToolFailed("bandit", f"bandit failed: {why}")
        if isinstance(data.get("results"), list):
            data["results"] = [r for r in data["results"] if not never_shown(ctx.sandbox, r)]
        return data

def _in_file_order(found: list[Finding], py_files: list[str]) -> list[Finding]:
    """The scan's findings as a scan in ``py_files``' order lists them (the
    secrets scan's first, then the patterns' file by file): the same report
    whichever order the files were scanned in."""
    rank = {f: i for i, f in enumerate(py_files)}
    patterns = sorted((f for f in found if f.tool == "superqode-patterns"),
                      key=lambda f: rank.get(f.file or "", -1))
    return [f for f in found if f.tool != "superqode-patterns"] + patterns


def _unscanned_reason(unscanned: list[str], shown: int = 5) -> str:
    more = f" and {len(unscanned) - shown} more" if len(unscanned) > shown else ""
    return f"bandit skipped {len(unscanned)} file(s): {'; '.join(unscanned[:shown])}{more}"


def _scan(project: Path, *args: Any) -> list[Finding]:
    """The scans beside bandit, with the pattern scans' hits kept between
    runs (read here, on the scan's thread, not the event loop's)."""
    return scan_files(*args, cache=open_web_cache(project))


def _stop_at(ctx: RoleContext) -> float | None:
    """When the role's tools stop (event-loop time): its deadline less the
    time to report what they found (a tenth of the time left, at least 2 s),
    more on a machine busier than its CPUs (``busy``)."""
    remaining = ctx.remaining()
    if remaining is None:
        return None
    margin = max(2.0, 0.1 * remaining) * busy(ctx.runtime.cpu_count())
    return asyncio.get_running_loop().time() + remaining - min(margin, 0.5 * remaining)


def busy(cpus: int) -> float:
    """1 to 2: how much longer than on a quiet machine the role's own work
    after its tools (bandit's results read, the context checks, the fixes)
    takes now. At a load of 20-25 on 2 cores it took over twice the tenth
    of the time kept for it, and the role ran past its deadline (its
    findings lost, the session out of time)."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return 1.0
    return min(2.0, max(1.0, load / max(1, cpus) / 5))
