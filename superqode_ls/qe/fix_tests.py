"""The tests that judge a fix its tool accepted: the whole suite re-run in
deep mode (the unit role), else the test files that import the changed code
(``covering.py``). When none can run here (an untrusted folder, a suite that
cannot start, no test importing the code) the fix is "tool-verified only",
and the reason says why.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable

from ..models import Finding, Patch
from .covering import SUITE_BROKEN, CoveringTests, SuiteProbeLike
from .doctests import untested_doctests
from .fix_judge import VerifyResult, _demote, _tool_only, base_id
from .patching import FileBackup
from .roles.base import Role, RoleContext, SandboxSession

Judged = list[tuple[Patch, list[str], VerifyResult]]

# A fix (or a round of fixes) after which the covering tests no longer start
# though they do without it: never a tool verdict, whatever pytest said.
STOPPED = "not verified: the tests no longer run after the fix"
# Why covering tests did not run that says nothing of the fix (covering.py's words).
_OUT_OF_TIME = ("the covering tests did not finish", "no time left")


async def _restore(session: SandboxSession | None, checkpoint: str) -> None:
    # A checkpoint is only ever taken from a session.
    assert session is not None
    await session.restore(checkpoint)


class FixTests:
    """``tests``: the role re-run after the fixes in deep mode (its failures
    before are in ``findings_by_role`` under its name). ``covering``: the
    tests for fixes when the whole suite is not re-run (quick mode), and in
    deep mode which tests import a fix's files; None with ``no_tests_reason``
    saying why. ``probe``: whether the suite can start at
    all, learnt beside the roles (verify_step.SuiteProbe)."""

    def __init__(self, *, roles: dict[str, Role], contexts: dict[str, RoleContext],
                 findings_by_role: dict[str, list[Finding]], tests: str | None,
                 covering: CoveringTests | None, no_tests_reason: str,
                 probe: SuiteProbeLike | None, session: SandboxSession | None,
                 time_left: Callable[[], float | None]):
        self.roles = roles
        self.contexts = contexts
        self.findings_by_role = findings_by_role
        self.tests = tests
        self.covering = covering
        self.no_tests_reason = no_tests_reason
        self.probe = probe
        self.session = session
        self.time_left = time_left
        # Why pytest cannot start at all here (a conftest that does not import,
        # a usage error): every later round would only pay to hear it again.
        self._suite_broken: str | None = None

    @property
    def full_suite(self) -> bool:
        """The whole suite is re-run after the fixes (deep mode)."""
        return self.tests is not None and self.tests in self.roles and self.tests in self.contexts

    async def _broken(self) -> str | None:
        """Why the suite cannot start, asked of the probe once."""
        if self._suite_broken is None and self.probe is not None:
            self._suite_broken = await self._probe_verdict()
        return self._suite_broken

    async def _probe_verdict(self) -> str | None:
        """The suite probe's answer, waited for at most a quarter of the time
        left: a suite that takes longer just to start leaves no time to run
        tests for the fixes (sqlalchemy's took 25 s of a 60 s budget), and the
        tool checks need that time."""
        assert self.probe is not None
        left = self.time_left()
        if left is None:
            return await self.probe.broken()
        try:
            return await asyncio.wait_for(self.probe.broken(), max(0.0, left / 4))
        except TimeoutError:
            return "tests not run: pytest had not started in the time left (it is slow to start here)"

    async def settle(self) -> None:
        """The probe's verdict taken before anything is written into the
        sandbox, and the probe stopped where it gave none in its wait: its
        pytest loads the sandbox's conftests, and one still loading them
        when the first round's fixes were applied judged the fixed tree (a
        fix that broke a conftest made the suite "cannot start", every fix
        "tool-verified only" with it, the guilty one included, and the
        verdict was kept for the unchanged project's next runs)."""
        if self.probe is None:
            return
        await self._broken()
        close = getattr(self.probe, "close", None)
        if close is not None:
            await close()  # nothing where it is done

    async def none_at_all(self, files: list[str] | None = None) -> bool:
        """No test can judge any fix here (of ``files``: none imports them)."""
        if self.full_suite:
            return False
        if self.covering is None or await self._broken() is not None:
            return True
        if files is None:
            return False
        for rel in dict.fromkeys(files):
            if await self.covering.for_files([rel]):
                return False
        return True

    async def why_none(self, files: list[str]) -> str | None:
        """Why no test can judge a fix of ``files`` here, or None when tests would run."""
        if self.full_suite:
            return None
        if self.covering is None:
            return self.no_tests_reason
        broken = await self._broken()
        if broken is not None:
            return broken
        if not await self.covering.for_files(files):
            return "no tests import the changed code"
        return None

    async def covering_step(
        self, judged: list[tuple[Patch, list[str], VerifyResult]], backup: FileBackup
    ) -> list[tuple[Patch, list[str], VerifyResult]]:
        """Tool-verified fixes (applied now) become verified when the tests
        importing their files pass; a test failing after the fixes counts
        only if it did not fail before them (checked by a second run with the
        files put back, only when something failed)."""
        tool_only = [(p, f, r) for p, f, r in judged if r.verified]
        if self.covering is None:
            return _demote(judged, self.no_tests_reason)
        broken = await self._broken()
        if broken is not None:
            return _demote(judged, broken)
        tests_of = {p.id: await self.covering.for_files(f) for p, f, _ in tool_only}
        tests = sorted({t for ts in tests_of.values() for t in ts})
        if not tests:
            return _demote(judged, "no tests import the changed code")
        # Tests may write anywhere in the sandbox: checkpoint around them.
        checkpoint = None
        if self.session is not None:
            checkpoint = await self.session.checkpoint()
        try:
            after = await self.covering.run(tests)
            if after.status == "not_run":
                why = after.reason or "the tests did not run"
                if why.startswith(_OUT_OF_TIME):
                    return _demote(judged, why)
                # Did the fixes stop them (a conftest or a test module that no
                # longer imports: requests' conftest after `quote` left
                # compat.py), or do they not start here anyway? The files put
                # back, the same tests tell.
                if checkpoint is not None:
                    await _restore(self.session, checkpoint)
                backup.restore()
                before = await self.covering.run(tests)
                if before.status == "not_run":
                    if why.startswith(SUITE_BROKEN):
                        self._suite_broken = why
                    return _demote(judged, why)
                return [(p, f, r if not r.verified else VerifyResult(
                    p.id, False, f"{STOPPED}: {why}", removed=r.removed)) for p, f, r in judged]
            broken: set[str] = set()
            if after.status == "failed":
                if checkpoint is not None:
                    await _restore(self.session, checkpoint)
                backup.restore()
                before = await self.covering.run(tests)
                new = after.failures - before.failures if before.status != "not_run" else after.failures
                broken = {after.files.get(i, "") for i in new}
        finally:
            if checkpoint is not None:
                await asyncio.shield(_restore(self.session, checkpoint))
        out = []
        for p, f, r in judged:
            if not r.verified:
                out.append((p, f, r))
            elif not tests_of[p.id]:
                out.append((p, f, _tool_only(r, "no tests import the changed code")))
            elif broken & set(tests_of[p.id]):
                out.append((p, f, VerifyResult(
                    p.id, False, f"not verified: tests fail after the fix ({', '.join(sorted(broken)[:5])})",
                    removed=r.removed)))
            elif doc := untested_doctests(self.covering.sandbox, f):
                out.append((p, f, _tool_only(r, doc)))
            else:
                shown = ", ".join(tests_of[p.id][:3]) + (" ..." if len(tests_of[p.id]) > 3 else "")
                out.append((p, f, VerifyResult(
                    p.id, True, r.message.replace(", nothing new)", f", nothing new; covering tests pass: {shown})"),
                    removed=r.removed, level="tests")))
        return out

    async def without_importers(self, judged: Judged) -> Judged:
        """Deep mode: the whole suite passing says nothing of a fix that no
        test imports (flask's ``examples/`` lie outside its tests), so such a
        fix is tool-verified only, as in quick mode."""
        if self.covering is None:
            return judged
        out = []
        for p, f, r in judged:
            if r.verified and not await self.covering.for_files(f):
                r = _tool_only(r, "no tests import the changed code")
            elif r.verified and (doc := untested_doctests(self.covering.sandbox, f)):
                r = _tool_only(r, doc)
            out.append((p, f, r))
        return out

    async def suite_broken_by_fixes(self) -> tuple[list[str], str | None]:
        """(test findings that are new, why the tests could not run)."""
        assert self.tests is not None
        out = await self.roles[self.tests].run(self.contexts[self.tests])
        if out.status not in ("ok", "failed"):
            return [], out.reason or out.status
        t_before = Counter(base_id(f.id) for f in self.findings_by_role.get(self.tests, []))
        t_after = Counter(base_id(f.with_stable_id().id) for f in out.findings)
        return sorted((t_after - t_before).keys()), None

