"""Verifier: a suggested fix counts as verified only when, applied in the
sandbox, it removes the findings it claims to fix, the role's check reports
nothing new, AND the project's tests still pass: the whole suite in deep mode
(unit role), the test files that import the changed code otherwise
(``covering.py``). A fix the tool accepts but no test could check is
"tool-verified only" (``VerifyResult.level == "tool"``). A patch that only
silences a finding (``# nosec``, ``usedforsecurity=False``) is a suppression
and never verified as a fix (``suppression_reason``).

The verifier decides how fixes are tried (batches of a role's fixes on
different files, one optimistic round, merged copies); ``FixJudge``
(fix_judge.py) says what a re-run of the role's check means for each fix,
``FixTests`` (fix_tests.py) which tests judge it and runs them.

Each patch is tried alone on the sandbox as the session found it: the files it
touches are saved first and put back afterwards (a checkpoint of the whole
sandbox when tests run, since tests may write anywhere).
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from pathlib import Path

from ..models import Finding, Patch
from .covering import CoveringTests, SuiteProbeLike
from .fix_judge import _NOT_APPLIED, FixJudge, VerifyResult, _demote, _tool_only, base_id
from .fix_tests import FixTests, _restore
from .patching import (
    apart,
    git_apply,
    patch_files,
    repo_prefix,
    shares_files,
    strip_level,
)
from .roles._patches import split_lines
from .roles.base import Role, RoleContext, SandboxSession
from .verify_aside import CopiesAside, TreeBackup
from .verify_copies import Change, beside, merged, pack, read_texts, split, written_by

__all__ = ["Verifier", "VerifyResult"]


@dataclass
class Verifier:
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

    def _aside(self) -> CopiesAside:
        """Copies in place of their files for one re-run (verify_aside.py);
        the files wait in the session's private folder."""
        return CopiesAside(self.sandbox, getattr(self.session, "private", None))

    def _time_left(self) -> float | None:
        if self.deadline is None:
            return None
        return self.deadline - asyncio.get_running_loop().time()

    def _out_of_time(self) -> bool:
        left = self._time_left()
        return left is not None and left <= 0

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
                pending = await self._on_copies(role, ctx, group, record)
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

    async def _on_copies(
        self, role: Role, ctx: RoleContext, group: list[Patch],
        record: Callable[[VerifyResult], None],
    ) -> list[Patch]:
        """What the optimistic round left, judged on merged copies of its
        files (verify_copies.py): the fixes of a file whose changed lines do
        not touch go in one copy; each round writes one copy of every file
        with fixes left into the sandbox and re-runs the role's check once over
        all of them; a copy with a fix not cleared is split for a later round
        (the fix nearest each new finding alone, the rest together). A fix its
        copy clears is tool-verified; it still needs the tests -- when none
        can run here it is "tool-verified only", else the careful rounds apply
        it and run them. A fix rejected alone is rejected. Returns the fixes
        not settled."""
        if self._out_of_time():
            return group
        # An order of its own: the copies and their rounds are the same
        # whatever order the noise filter left the fixes in (verify_early.py
        # judges a role's fixes before that filter has run).
        group = sorted(group, key=lambda p: p.id)
        files_of = {p.id: (p.files or patch_files(p.diff)) for p in group}
        one_file = [p for p in group if len(files_of[p.id]) == 1]
        rest = [p for p in group if len(files_of[p.id]) != 1]
        texts = await asyncio.to_thread(read_texts, self.sandbox, {files_of[p.id][0] for p in one_file})
        queues: dict[str, list[list[tuple[Patch, list[Change]]]]] = {}
        lines_of: dict[str, list[str]] = {}
        for rel in dict.fromkeys(files_of[p.id][0] for p in one_file):
            mine = [p for p in one_file if files_of[p.id][0] == rel]
            text = texts.get(rel)
            if text is None:
                rest.extend(mine)
                continue
            lines_of[rel] = split_lines(text)
            failed, still, new_lines = self._hints.get(rel, (set(), set(), []))
            copies, left = pack(lines_of[rel], [p for p in mine if p.id in failed])
            if len(copies) == 1:  # the set that failed together, split as a copy's would be
                copies = split(copies[0], {p.diff for p in mine if p.id in still}, new_lines)
            copies, left2 = pack(lines_of[rel], [p for p in mine if p.id not in failed], copies)
            rest.extend(left + left2)
            if copies:
                queues[rel] = copies
        if any(len(qs) > 1 for qs in queues.values()):
            await self._layers_at_once(role, ctx, queues, lines_of, rest, record)
        while queues:
            if self._out_of_time():
                rest.extend(p for qs in queues.values() for copy in qs for p, _ in copy)
                break
            now = {rel: qs.pop(0) for rel, qs in queues.items()}
            queues = {rel: qs for rel, qs in queues.items() if qs}
            backup = self._aside()
            try:
                # On the event loop, not in a thread: a cancel must not find a
                # write still going after the files were put back.
                backup.write({
                    rel: merged(lines_of[rel], list({p.diff: cs for p, cs in copy}.values()))
                    for rel, copy in now.items()})
                after = [f.with_stable_id() for f in await role.recheck(ctx, sorted(now))]
            finally:
                backup.restore()
            for rel, copy in now.items():
                await self._settle(role, rel, copy, [f for f in after if f.file == rel], queues, rest, record)
        return rest


    async def _settle(
        self, role: Role, rel: str, copy: list[tuple[Patch, list[Change]]], found: list[Finding],
        queues: dict[str, list[list[tuple[Patch, list[Change]]]]], rest: list[Patch],
        record: Callable[[VerifyResult], None], checked: bool = False,
    ) -> None:
        """The verdicts on one copy of ``rel`` from what the re-run found in
        it: settled fixes recorded, a copy not cleared split into ``queues``,
        fixes the tests must judge added to ``rest``. ``checked``: the same
        run reported the file's findings in its unchanged twin, so an empty
        answer for this copy is not a failed check."""
        if not found and not checked and self.judge.had_others(role, [(p, [rel]) for p, _ in copy]):
            rest.extend(p for p, _ in copy)  # an empty answer may be a failed check
            return
        claimed = {base_id(i) for p, _ in copy for i in p.finding_ids}
        judged = [self.judge.judge(p, role, [rel], found, claimed=claimed) for p, _ in copy]
        if len({p.diff for p, _ in copy}) > 1 and not all(r.verified for r in judged):
            new = {i for r in judged for i in r.new}
            at = [f.range.start_line for f in found if base_id(f.id) in new and f.range]
            # A new finding on lines a fix wrote is that fix's: rejected
            # now (never a verdict in its favour), the rest split.
            own = written_by(copy, at)
            for (p, _), r in zip(copy, judged):
                if p.diff in own:
                    record(VerifyResult(
                        p.id, False, f"not verified: {role.name} reports new findings "
                        f"({', '.join(r.new[:5])}) on the lines this fix writes "
                        f"(line {', '.join(map(str, own[p.diff][:3]))} with the fixes of its copy)",
                        removed=r.removed, new=r.new))
            still = {p.diff for (p, _), r in zip(copy, judged) if not r.verified and not r.new}
            copy = [(p, cs) for p, cs in copy if p.diff not in own]
            at = [n for n in at if not any(n in ls for ls in own.values())]
            if copy:
                queues.setdefault(rel, []).extend(
                    split(copy, still, at) if len({p.diff for p, _ in copy}) > 1 else [copy])
            return
        for (p, _), r in zip(copy, judged):
            if r.verified:
                why = await self.fix_tests.why_none([rel])
                if why is None:
                    rest.append(p)  # the tests can run: the careful rounds apply it for them
                    continue
                r = _tool_only(r, why)
            record(r)

    async def _layers_at_once(
        self, role: Role, ctx: RoleContext, queues: dict[str, list[list[tuple[Patch, list[Change]]]]],
        lines_of: dict[str, list[str]], rest: list[Patch], record: Callable[[VerifyResult], None],
    ) -> None:
        """The copies of a file that need a round each (their fixes touch),
        all in the first round's re-run: where no test can judge the file's
        fixes, each later copy is written beside it under another name
        (``verify_copies.beside``) with the file itself as it is -- the tool
        judges a file by itself, and what it reports in that unchanged twin
        must be what it reported in the file, else the name changed its
        verdict (a per-file rule, an exclude) and the file keeps its rounds.
        Copies judged here leave ``queues``; a copy split goes back in it.
        What the twin cannot show: a pattern that silences a rule for the
        new name only, on a finding the fix alone would bring (a glob such as
        ``*_m.py`` for ``m.py``); the verdict here is "tool-verified only" at
        most, never "verified"."""
        if self._out_of_time():
            return
        aside: dict[str, tuple[str, int]] = {}  # written path -> (file, copy number; 0 = the twin)
        for rel, qs in queues.items():
            if len(qs) < 2 or await self.fix_tests.why_none([rel]) is None:
                continue  # tests would judge its fixes: the copies go the usual way
            names = beside(rel, len(qs))
            # lexists: a dangling link of that name would take the write elsewhere
            if names is None or any(os.path.lexists(self.sandbox / n) for n in names):
                continue
            aside.update({n: (rel, k) for k, n in enumerate(names)})
        if not aside:
            return
        first = {rel: qs[0] for rel, qs in queues.items()}
        texts = {rel: merged(lines_of[rel], list({p.diff: cs for p, cs in copy}.values()))
                 for rel, copy in first.items()}
        for name, (rel, k) in aside.items():
            texts[name] = ("".join(lines_of[rel]) if k == 0 else
                           merged(lines_of[rel], list({p.diff: cs for p, cs in queues[rel][k]}.values())))
        backup = self._aside()  # the names beside are new: removed after
        try:
            backup.write(texts)
            for name, (rel, _) in aside.items():  # a rule may read the mode (ruff's EXE001)
                (self.sandbox / name).chmod((self.sandbox / rel).stat().st_mode & 0o777)
            after = await role.recheck(ctx, sorted(texts))
        finally:
            backup.restore()
        found: dict[tuple[str, int], list[Finding]] = {}
        for f in after:
            rel, k = aside.get(f.file or "", (f.file or "", -1))
            if k >= 0:  # found in a copy beside: the file's finding, as at its own path
                f = f.model_copy(update={"file": rel} if getattr(role, "ids_follow_copies", False)
                                 else {"file": rel, "id": ""})
            found.setdefault((rel, k), []).append(f.with_stable_id())
        twins_ok = {rel for rel, k in aside.values() if k == 0 and found.get((rel, 0)) and Counter(
            base_id(f.id) for f in found.get((rel, 0), [])) == Counter(
            base_id(f.id) for f in self.judge.before(role.name, rel))}
        copies = {rel: qs for rel, qs in queues.items()}
        queues.clear()
        for rel, qs in copies.items():
            later = qs[1:]
            judged_here = [(k, later[k - 1]) for k in range(1, len(qs))] if rel in twins_ok else []
            if not judged_here:
                queues[rel] = list(later)
            ok = rel in twins_ok
            await self._settle(role, rel, qs[0], found.get((rel, -1), []), queues, rest, record, ok)
            for k, copy in judged_here:
                await self._settle(role, rel, copy, found.get((rel, k), []), queues, rest, record, ok)
        for rel in [r for r, qs in queues.items() if not qs]:
            del queues[rel]


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
            results.extend(r for _, _, r in judged)
            return results
        finally:
            if checkpoint is not None:
                await _restore(self.session, checkpoint)
            backup.restore()
