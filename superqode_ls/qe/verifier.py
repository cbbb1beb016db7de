"""Verifier: a suggested fix counts as verified only when, applied in the
sandbox, it removes the findings it claims to fix, the role's check reports
nothing new, AND the project's tests still pass: the whole suite in deep mode
(unit role), the test files that import the changed code otherwise
(``covering.py``). A fix the tool accepts but no test could check is
"tool-verified only" (``VerifyResult.level == "tool"``). A patch that only
silences a finding (``# nosec``, ``usedforsecurity=False``) is a suppression
and never verified as a fix (``suppression_reason``).

The verifier decides how fixes are tried (batches of a role's fixes on
different files, one optimistic round, merged copies: verify_route.py, their
verdicts kept between runs where no test can judge them: verify_cache.py); ``FixJudge``
(fix_judge.py) says what a re-run of the role's check means for each fix,
``FixTests`` (fix_tests.py) which tests judge it and runs them.

Each patch is tried alone on the sandbox as the session found it: the files it
touches are saved first and put back afterwards (a checkpoint of the whole
sandbox when tests run, since tests may write anywhere).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from pathlib import Path

from ..models import Finding, Patch
from .covering import CoveringTests, SuiteProbeLike
from .fix_judge import _NOT_APPLIED, FixJudge, VerifyResult, _demote, base_id
from .fix_tests import STOPPED, FixTests, _restore
from .patching import (
    apart,
    git_apply,
    patch_files,
    repo_prefix,
    shares_files,
    strip_level,
)
from .roles.base import Role, RoleContext, SandboxSession
from .verify_aside import TreeBackup
from .verify_route import CopiesRoute

__all__ = ["Verifier", "VerifyResult"]


@dataclass
class Verifier(CopiesRoute):
    """Verifies patches against their own role's check.

    ``findings_by_role``: what each role found in the main run (the "before").
    ``tests``: in deep mode, a role (the unit tests) re-run after the fixes;
    its failures before are in ``findings_by_role`` under its name.

    ``verify_many`` batches: patches of one role that touch different files
    are applied together and judged by one re-run of the check, each on its
    own files (the analyzers here judge a file by itself). A batch that breaks
    the tests is retried one patch at a time, since the failure cannot be
    attributed.
    """

    sandbox: Path
    roles: dict[str, Role]
    contexts: dict[str, RoleContext]
    findings_by_role: dict[str, list[Finding]]
    # What judges the tests (fix_tests.py): read once, owned by ``fix_tests``.
    tests: InitVar[str | None] = None
    session: SandboxSession | None = None  # checkpoint()/restore() between tries
    deadline: float | None = None
    # Tests for fixes when the whole suite is not re-run (quick mode); None
    # with ``no_tests_reason`` saying why (untrusted folder, no unit role).
    covering: InitVar[CoveringTests | None] = None
    no_tests_reason: InitVar[str] = "no tests were run"
    # Whether the suite can start, learnt beside the roles (verify_step.SuiteProbe).
    probe: InitVar[SuiteProbeLike | None] = None
    results: list[VerifyResult] = field(default_factory=list)
    judge: FixJudge = field(init=False)
    fix_tests: FixTests = field(init=False)
    _prefix: str | None = None
    # The user's project: this verifier's merged-copies verdicts are kept
    # between runs under it (verify_cache.py); None: neither kept nor read.
    project: Path | None = None
    # The optimistic round's last re-run, and per file what failed there:
    # (patch ids, those whose own finding stayed, lines of new findings).
    _last_after: list[Finding] = field(default_factory=list)
    _hints: dict[str, tuple[set[str], set[str], list[int]]] = field(default_factory=dict)

    def __post_init__(self, tests: str | None, covering: CoveringTests | None,
                      no_tests_reason: str, probe: SuiteProbeLike | None) -> None:
        self.judge = FixJudge(self.findings_by_role)
        self.fix_tests = FixTests(
            roles=self.roles, contexts=self.contexts, findings_by_role=self.findings_by_role,
            tests=tests, covering=covering, no_tests_reason=no_tests_reason, probe=probe,
            session=self.session, time_left=self._time_left)

    async def verify(self, patch: Patch) -> VerifyResult:
        result = await self._verify_one(patch)
        self.results.append(result)
        return result

    async def verify_many(
        self, patches: list[Patch], on_result: Callable[[VerifyResult], None] | None = None
    ) -> dict[str, VerifyResult]:
        out: dict[str, VerifyResult] = {}

        def record(r: VerifyResult) -> None:
            out[r.patch_id] = r
            self.results.append(r)
            if on_result is not None:
                on_result(r)

        by_role: dict[str, list[Patch]] = {}
        for p in patches:
            by_role.setdefault(p.role or "", []).append(p)
        for role_name, group in by_role.items():
            role = self.roles.get(role_name)
            ctx = self.contexts.get(role_name)
            if role is None or ctx is None:
                for p in group:
                    record(VerifyResult(p.id, False, f"not verified: role {role_name!r} did not run"))
                continue
            pending = group
            if shares_files(group) and await self.fix_tests.none_at_all(
                    [f for p in group for f in (p.files or patch_files(p.diff))]):
                # Nothing to run the tests for (no test imports these files
                # either): the copies alone settle it, and pack more fixes per
                # round than git's context allows (the later ones beside).
                self._hints = {}
                pending = await self._on_copies_kept(role, ctx, group, record)
            elif shares_files(group):
                pending = await self._all_at_once(role, ctx, group, record)
                if pending and shares_files(pending):
                    pending = await self._on_copies(role, ctx, pending, record)
            while pending:
                batch: list[tuple[Patch, list[str]]] = []
                rest: list[Patch] = []
                used: set[str] = set()
                diffs: set[str] = set()
                for p in pending:
                    files = p.files or patch_files(p.diff)
                    if not files:
                        record(VerifyResult(p.id, False, "not verified: the patch names no files"))
                    elif used & set(files) and p.diff not in diffs:
                        rest.append(p)
                    else:
                        # The same diff for several findings (one fix, one per
                        # finding it clears) goes in once and is judged for each.
                        batch.append((p, files))
                        used |= set(files)
                        diffs.add(p.diff)
                for r in await self._verify_batch(role, ctx, batch):
                    record(r)
                pending = rest
        return out

    async def _all_at_once(
        self, role: Role, ctx: RoleContext, group: list[Patch],
        record: Callable[[VerifyResult], None],
    ) -> list[Patch]:
        """One optimistic round with every fix of a role, several on one file
        included: one tool re-run for all (a tool offers dozens of fixes in a
        file; one round per fix in that file was most of quick mode's time).
        What it does not clear -- the fixes do not apply together, or a
        finding is new, so who caused it is unclear -- goes the careful way,
        one fix per file per round; returns those."""
        batch = [(p, p.files or patch_files(p.diff)) for p in group]
        batch = apart([(p, files) for p, files in batch if files])
        self._last_after, self._hints = [], {}
        results = await self._verify_batch(role, ctx, batch, together_only=True)
        if not results:
            return group
        done = {r.patch_id for r in results if r.verified or r.level == "tool"}
        for r in results:
            if r.patch_id in done:
                record(r)
        # What failed together, and where the new findings were: the copies
        # start from there instead of trying that same set again.
        file_of = {p.id: files[0] for p, files in batch if len(files) == 1}
        new: dict[str, set[str]] = {}
        for r in results:
            rel = file_of.get(r.patch_id)
            if rel is None or r.patch_id in done or r.message.startswith(_NOT_APPLIED):
                continue
            failed, still, _ = self._hints.setdefault(rel, (set(), set(), []))
            failed.add(r.patch_id)
            if not r.new:
                still.add(r.patch_id)
            new.setdefault(rel, set()).update(r.new)
        for rel, (_, _, lines) in self._hints.items():
            lines += [f.range.start_line for f in self._last_after
                      if f.file == rel and f.range and base_id(f.id) in new.get(rel, ())]
        return [p for p in group if p.id not in done]

    async def _verify_one(self, patch: Patch) -> VerifyResult:
        role = self.roles.get(patch.role or "")
        ctx = self.contexts.get(patch.role or "")
        if role is None or ctx is None:
            return VerifyResult(patch.id, False, f"not verified: role {patch.role!r} did not run")
        files = patch.files or patch_files(patch.diff)
        if not files:
            return VerifyResult(patch.id, False, "not verified: the patch names no files")
        return (await self._verify_batch(role, ctx, [(patch, files)]))[0]

    async def _verify_batch(
        self, role: Role, ctx: RoleContext, batch: list[tuple[Patch, list[str]]],
        together_only: bool = False,
    ) -> list[VerifyResult]:
        """``together_only``: the patches may share files, so they are tried
        as one combined apply or not at all (no result: applying them one by
        one would stack fixes of one file on each other)."""
        if not batch:
            return []
        if self._out_of_time():
            return [
                VerifyResult(p.id, False, "not verified: no time left in the session budget")
                for p, _ in batch
            ]
        run_tests = self.fix_tests.full_suite
        checkpoint = None
        if run_tests and self.session is not None:
            checkpoint = await self.session.checkpoint()
        # The tests run before it is put back: never through a link (verify_aside.py).
        backup = TreeBackup(self.sandbox, sorted({f for _, files in batch for f in files}))
        results: list[VerifyResult] = []
        judged: list[tuple[Patch, list[str], VerifyResult]] = []
        try:
            applied: list[tuple[Patch, list[str]]] = []
            if self._prefix is None:
                self._prefix = await repo_prefix(self.sandbox)
            unique = list(dict.fromkeys(p.diff for p, _ in batch))
            combined = "".join(d if d.endswith("\n") else d + "\n" for d in unique)
            if len(batch) > 1 and len({strip_level(p.diff) for p, _ in batch}) == 1 and (
                await git_apply(self.sandbox, combined, check_first=False, prefix=self._prefix)
            )[0]:
                applied = list(batch)  # one git call for the whole round
            elif together_only:
                return []
            else:
                done: dict[str, tuple[bool, str]] = {}
                for p, files in batch:
                    if p.diff in done:  # its twin's outcome: applying it twice would fail
                        ok, err = done[p.diff]
                        if ok:
                            applied.append((p, files))
                        else:
                            results.append(VerifyResult(
                                p.id, False, f"not verified: the patch does not apply ({err})"))
                        continue
                    ok, err = done[p.diff] = await git_apply(
                        self.sandbox, p.diff, check_first=False, prefix=self._prefix
                    )
                    if ok:
                        applied.append((p, files))
                    else:
                        results.append(
                            VerifyResult(p.id, False, f"not verified: the patch does not apply ({err})")
                        )
            if applied:
                union = sorted({f for _, files in applied for f in files})
                got = await role.recheck(ctx, union)
                # A check that said why it gave nothing (out of time) proves nothing.
                check_failed: str | None = getattr(got, "failure", None)
                after = [f.with_stable_id() for f in got]
                self._last_after = after
                restored = False
                if check_failed is None and not after and self.judge.had_others(role, applied):
                    # Nothing at all, even where the fixes did not reach: either
                    # the fixes cleared everything or the check itself failed.
                    # The unpatched files tell which.
                    backup.restore()
                    restored = True
                    again = await role.recheck(ctx, union)
                    check_failed = getattr(again, "failure", None) or (
                        None if again else "it reported nothing, not even without the fix")
                claimed = {base_id(i) for p, _ in applied for i in p.finding_ids}
                judged = [
                    (p, files, self.judge.judge(p, role, files, after, check_failed, claimed))
                    for p, files in applied
                ]
                broke: list[str] = []
                if run_tests and any(r.verified for _, _, r in judged):
                    broke, why = await self.fix_tests.suite_broken_by_fixes()
                    if why:
                        judged = _demote(judged, f"tests could not run ({why})")
                    elif broke:
                        if len(applied) > 1:
                            retry = [p for p, _, r in judged if r.verified]
                            judged = [(p, f, r) for p, f, r in judged if not r.verified]
                            results.extend(r for _, _, r in judged)
                            judged = []
                            backup.restore()
                            if checkpoint is not None:
                                await _restore(self.session, checkpoint)
                                checkpoint = None
                            for p in retry:
                                results.append(await self._verify_one(p))
                            return results
                        judged = [
                            (p, f, VerifyResult(
                                p.id, False, f"not verified: tests fail after the fix ({', '.join(broke[:5])})",
                                removed=r.removed, new=broke))
                            for p, f, r in judged
                        ]
                    else:
                        judged = await self.fix_tests.without_importers(judged)
                        judged = [
                            (p, f, r if not r.verified else VerifyResult(
                                p.id, True, r.message.replace(", nothing new)", "; tests re-run, no new failures)"),
                                removed=r.removed, level="tests"))
                            for p, f, r in judged
                        ]
                elif any(r.verified for _, _, r in judged):
                    if restored:  # the check above put the files back: apply again for the tests
                        for p, _ in applied:
                            await git_apply(self.sandbox, p.diff, check_first=False, prefix=self._prefix)
                    judged = await self.fix_tests.covering_step(judged, backup)
                    stopped = {p.id for p, _, r in judged if r.message.startswith(STOPPED)}
                    if stopped and len(applied) > 1:
                        # Which of the round's fixes stopped the tests is unknown:
                        # each is tried alone (the others keep their verdicts).
                        results.extend(r for p, _, r in judged if p.id not in stopped)
                        backup.restore()
                        for p, _ in applied:
                            if p.id in stopped:
                                results.append(await self._verify_one(p))
                        return results
            results.extend(r for _, _, r in judged)
            return results
        finally:
            if checkpoint is not None:
                await _restore(self.session, checkpoint)
            backup.restore()
