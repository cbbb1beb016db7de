"""Judging one fix by its role's check: what the role found in the main run
(the "before") against what its re-run finds with the fix applied. A fix
clears the findings it claims, and nothing new appears (a neighbour's
finding renamed by the edit is not new). A patch that only silences a
finding (``# nosec``, ``usedforsecurity=False``) is a suppression, never a
fix (``suppression_reason``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ..models import Finding, Patch
from .roles.base import Role

# Added text that makes a tool stop reporting without changing what the code
# does (or, for usedforsecurity=False, declaring a hash harmless): never a fix.
_SILENCERS = re.compile(
    r"usedforsecurity\s*=\s*False|#\s*nosec\b|#\s*noqa\b|#\s*type:\s*ignore|"
    r"#\s*pragma:\s*no\s*cover|#\s*pylint:\s*disable|#\s*nosemgrep|#\s*lgtm\b",
    re.IGNORECASE,
)


def suppression_reason(diff: str) -> str | None:
    """What a patch adds to silence its finding, or None for a real change."""
    lines = diff.splitlines()
    # The added lines first, and only they are searched unless they hold a
    # silencer: every fix of a large run (14,000 on sqlalchemy) comes here,
    # and the pattern over whole diffs took longer than their split.
    after = Counter(m.group(0).lower() for ln in lines if ln.startswith("+") and not ln.startswith("+++")
                    for m in _SILENCERS.finditer(ln, 1))
    if not after:
        return None
    before = Counter(m.group(0).lower() for ln in lines if ln.startswith("-") and not ln.startswith("---")
                     for m in _SILENCERS.finditer(ln, 1))
    gained = after - before
    if not gained:
        return None
    # Counted case-blind (``# NOQA`` is ``# noqa``), said as written: the
    # lowered ``usedforsecurity=false`` is not Python.
    first = next(iter(gained))
    said = next((m.group(0) for ln in lines if ln.startswith("+") and not ln.startswith("+++")
                 for m in _SILENCERS.finditer(ln, 1) if m.group(0).lower() == first), first)
    return f"adds {said!r}"

# Roles number identical problems in one file "<id>", "<id>-2", ...: once one
# is fixed the others renumber, so fixes are judged on the un-numbered id.
_NUMBERED = re.compile(r"^(?P<base>.*-[0-9a-f]{12})(?:-\d+)?$")


def base_id(finding_id: str) -> str:
    m = _NUMBERED.match(finding_id)
    return m.group("base") if m else finding_id



@dataclass
class VerifyResult:
    patch_id: str
    verified: bool
    message: str
    removed: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    level: str | None = None  # "tests" (verified), "tool" (tool-verified only)



class FixJudge:
    """The verdicts on fixes of the roles' findings. ``findings_by_role``:
    what each role found in the main run (the "before")."""

    def __init__(self, findings_by_role: dict[str, list[Finding]]):
        self.findings_by_role = findings_by_role
        self._by_file: dict[tuple[str, str], list[Finding]] | None = None

    def had_others(self, role: Role, applied: list[tuple[Patch, list[str]]]) -> bool:
        targets = {base_id(i) for p, _ in applied for i in p.finding_ids}
        files = {f for _, fs in applied for f in fs}
        return any(
            base_id(f.id) not in targets
            for file in files for f in self.before(role.name, file)
        )

    def before(self, role: str, file: str) -> list[Finding]:
        """The role's findings in ``file`` (indexed once: thousands of patches
        each scanning every finding is quadratic on a large tree)."""
        if self._by_file is None:
            self._by_file = {}
            for name, fs in self.findings_by_role.items():
                for f in fs:
                    self._by_file.setdefault((name, f.file or ""), []).append(f)
        return self._by_file.get((role, file), [])

    def judge(
        self, patch: Patch, role: Role, files: list[str], after_all: list[Finding],
        check_failed: str | bool | None = None, claimed: set[str] = frozenset(),  # type: ignore[assignment]
    ) -> VerifyResult:
        """``claimed``: the findings the fixes applied with this one fix (gone
        for that reason, not renamed by this fix); ``check_failed``: why the
        re-check gave no result (it ran out of time...), when it did not."""
        wanted = set(files)
        before = Counter(base_id(f.id) for file in wanted for f in self.before(role.name, file))
        after = Counter(base_id(f.id) for f in after_all if f.file in wanted)
        targets = [i for i in patch.finding_ids if before[base_id(i)] > 0]
        if not targets:
            return VerifyResult(patch.id, False, "not verified: the findings it fixes were not reproduced")
        fixed = Counter(base_id(i) for i in targets)
        others = before - fixed
        if check_failed:
            why = check_failed if isinstance(check_failed, str) else "it reported nothing"
            return VerifyResult(patch.id, False,
                                f"not verified: re-running {role.name} gave no result ({why})")
        still = [i for i in targets if after[base_id(i)] > others[base_id(i)]]
        vanished = others - after
        for i in claimed:
            vanished.pop(i, None)
        new = _really_new(
            after - before, vanished,
            [f for file in wanted for f in self.before(role.name, file)],
            [f for f in after_all if f.file in wanted])
        if still:
            return VerifyResult(patch.id, False, f"not verified: {role.name} still reports {', '.join(still)}")
        if new:
            return VerifyResult(
                patch.id, False, f"not verified: {role.name} reports new findings ({', '.join(new[:5])})",
                removed=targets, new=new,
            )
        return VerifyResult(
            patch.id, True,
            f"verified: fixes {', '.join(targets)} ({role.name} re-run on {', '.join(files)}, nothing new)",
            removed=targets,
        )



def _really_new(
    appeared: Counter[str], vanished: Counter[str], before: list[Finding], after: list[Finding],
) -> list[str]:
    """The ids that appeared after a fix, less those that are a neighbour's
    finding under a new id: a fix that edits a line another finding flags
    changes that finding's text, hence its id (same rule, same file); a
    finding of that rule that vanished without being fixed is the same one."""
    rule_of = {base_id(f.id): f.rule_id for f in [*before, *after]}
    renamed: Counter[str] = Counter()
    for i, n in vanished.items():
        renamed[rule_of.get(i, "")] += n
    out = []
    for i in sorted(appeared):
        rule = rule_of.get(i, "")
        take = min(appeared[i], renamed[rule])
        renamed[rule] -= take
        if appeared[i] > take:
            out.append(i)
    return out


# The start of a result for a patch git would not apply.
_NOT_APPLIED = "not verified: the patch does not apply"


def _tool_only(r: VerifyResult, why: str) -> VerifyResult:
    msg = r.message.removeprefix("verified: ")
    return VerifyResult(r.patch_id, False, f"tool-verified only: {msg}; {why}",
                        removed=r.removed, level="tool")


def _demote(judged: list[tuple[Patch, list[str], VerifyResult]], why: str):
    return [(p, f, _tool_only(r, why) if r.verified else r) for p, f, r in judged]
