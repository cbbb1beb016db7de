"""The verifier's merged-copies route (``Verifier._on_copies``): the fixes a
role offers in files no test can judge, or that the optimistic round left,
judged on merged copies of their files (verify_copies.py), rounds of copies
written in place of the files (``CopiesAside``) and the later copies of a
file beside it in the first round's re-run (``_layers_at_once``); and the
same route answered from an earlier run's verdicts on the same tree where
the verifier keeps them (verify_cache.py).

A mixin of ``Verifier`` (verifier.py), which owns the state it reads: the
sandbox, the judge, the tests, the optimistic round's hints.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from ..models import Finding, Patch
from .fix_judge import FixJudge, VerifyResult, _tool_only, base_id
from .fix_tests import FixTests
from .patching import patch_files
from .roles._patches import split_lines
from .roles.base import Role, RoleContext, SandboxSession
from .verify_aside import CopiesAside
from .verify_copies import Change, beside, merged, pack, read_texts, split, written_by


class CopiesRoute:
    """The merged-copies route; its state is ``Verifier``'s."""

    sandbox: Path
    findings_by_role: dict[str, list[Finding]]
    judge: FixJudge
    fix_tests: FixTests
    # Where verdicts are kept between runs (verify_cache.py): the user's
    # project; None: never kept nor read.
    project: Path | None
    _hints: dict[str, tuple[set[str], set[str], list[int]]]
    session: SandboxSession | None
    deadline: float | None

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

    async def _on_copies_kept(
        self, role: Role, ctx: RoleContext, group: list[Patch],
        record: Callable[[VerifyResult], None],
    ) -> list[Patch]:
        """``_on_copies`` where no test can judge any of ``group``'s files: an
        earlier run's verdicts on the same fixes of the same tree where
        ``project`` is set and they hold (verify_cache.lookup), else the
        copies' rounds, their verdicts kept for the next run when they
        settle every fix."""
        if self.project is None or self._hints or any(
                len(p.files or patch_files(p.diff)) != 1 for p in group):
            return await self._on_copies(role, ctx, group, record)
        from . import verify_cache  # imported ahead (ahead.AFTER_START)

        key, kept = await verify_cache.lookup(
            self.project, self.sandbox, role, ctx, list(self.findings_by_role.get(role.name, [])),
            group, self.fix_tests.why_none)
        if kept is not None:
            for r in kept.results:
                record(r)
            return []
        results: list[VerifyResult] = []

        def both(r: VerifyResult) -> None:
            results.append(r)
            record(r)

        left = await self._on_copies(role, ctx, group, both)
        if not left:
            files = sorted({(p.files or patch_files(p.diff))[0] for p in group})
            whys = {rel: await self.fix_tests.why_none([rel]) for rel in files}
            await verify_cache.store(key, results, whys, written=files)
        return left

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
