"""One problem, one finding (noise.py, step 4): one name for a rule that
several tools implement (``canonical_rule``), and the reports of one problem
-- the same file, line and rule, from two tools or twice from one -- merged
into the strongest of them (``deduplicate``, ``merge_reports``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ..models import Finding
from .noise_paths import is_secret_scan, join_reasons

# ruff's flake8-bandit rules reuse bandit's numbers: S105 is B105.
_RUFF_BANDIT = re.compile(r"^S(\d{3})$")


# The same check under other tools' names (ruff/pyflakes and mypy).
_SAME_CHECK = {
    "NAME-DEFINED": "F821",  # undefined name
    "NO-REDEF": "F811",  # redefinition of an unused name
    "SYNTAX": "SYNTAX-ERROR",
    "E999": "SYNTAX-ERROR",
    # security_tester's own checks where bandit has a rule for the same flaw
    "SQL-INJECTION": "B608",
    "WEAK-PASSWORD-HASH": "B324",
    "TEMPLATE-AUTOESCAPE-OFF": "B701",
    "HARDCODED-DB-PASSWORD": "B106",
}


# Rule ids are few (a project's 17,600 lint findings name ~300): asked
# three times per finding, each name is worked out once.
@lru_cache(maxsize=4096)
def canonical_rule(rule_id: str) -> str:
    """One name for a rule that several tools implement."""
    rule = rule_id.strip().upper()
    m = _RUFF_BANDIT.match(rule)
    if m:
        rule = f"B{m.group(1)}"
    return _SAME_CHECK.get(rule, rule)


# bandit's hard-coded password rules; the secrets scan (``secret-*``) flagging
# the same line names the same problem.
PASSWORD_RULES = ("B105", "B106", "B107")


def _strength(f: Finding) -> tuple:
    return (f.noise is None, f.fix_patch_id is not None, f.severity.rank, f.confidence,
            f.role, f.tool)


def deduplicate(findings: Iterable[Finding]) -> tuple[list[Finding], int]:
    """Merge reports of the same problem (same file, line and canonical rule).

    The kept finding takes the highest severity of the group (a weak tool
    agreeing with a strong one must not water it down), carries the others'
    rule ids in ``related_rules`` and their tool:rule in its tags
    (``also:...``) and, when it has no fix of its own, the fix of a merged one.
    """
    findings = list(findings)
    password_at: dict[tuple, str] = {}
    for f in findings:
        rule = canonical_rule(f.rule_id)
        if f.range and rule in PASSWORD_RULES:
            password_at.setdefault((f.file, f.range.start_line), rule)
    groups: dict[tuple, list[Finding]] = {}
    order: list[tuple] = []
    for f in findings:
        line = f.range.start_line if f.range else None
        rule = canonical_rule(f.rule_id)
        if is_secret_scan(f.rule_id):
            rule = password_at.get((f.file, line), rule)
        # A failing test is its own problem even on a line another test
        # shares (a parametrized test's variants): kept apart, by its id.
        same = line is not None and f.category != "tests"
        key = (f.file, line, rule) if same else ("id", f.id)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(f)
    out: list[Finding] = []
    dropped = 0
    for key in order:
        group = groups[key]
        if len(group) == 1:
            out.append(group[0])
            continue
        best = max(group, key=_strength)
        dropped += len(group) - 1
        merged = merge_reports(best, [f for f in group if f is not best])
        if (judged := _value_judged(group)) is not None:
            merged = merged.model_copy(update={"noise": judged.noise,
                                               "severity": judged.severity})
        out.append(merged)
    return out, dropped


# bandit's password rule and the secrets scan's generic rule on one line
# ask one question of one value (``_secrets_values.not_a_secret``): where
# bandit's report was judged no secret by its value, the generic report of
# it is the same value and must not bring it back. A provider's token shape
# (``secret-github-token``) is its own proof and is not overruled.
_VALUE_JUDGED = "not a secret: the value is"


def _value_judged(group: list[Finding]) -> Finding | None:
    judged = next((f for f in group if f.noise and f.noise.startswith(_VALUE_JUDGED)
                   and canonical_rule(f.rule_id) in PASSWORD_RULES), None)
    # Only the generic report asks the same question; another check of the
    # line (the patterns' hardcoded-db-password, a ruff S105) keeps its own say.
    if judged is None or any(f.noise is None and f.rule_id.lower() != "secret-generic"
                             for f in group):
        return None
    return judged


def merge_reports(best: Finding, others: list[Finding]) -> Finding:
    """``best`` standing for itself and ``others`` (the same problem): the
    highest severity of them all, their rule ids in ``related_rules``, their
    tool:rule in the tags (``also:...``), their evidence, and a fix of theirs
    when ``best`` has none."""
    tags = list(best.tags)
    evidence = list(best.evidence)
    related = list(best.related_rules)
    fix = best.fix_patch_id
    update: dict = {}
    # A report that is noise (bandit's try/except/pass advisory on a blind
    # except) does not raise one that is worth acting on.
    raising = [o for o in others if o.noise is None or best.noise is not None]
    top = max([best, *raising], key=lambda f: f.severity.rank)
    if top.severity.rank > best.severity.rank:
        update["severity"] = top.severity
        update["severity_reason"] = join_reasons(
            best.severity_reason,
            f"{top.severity.value}, as {top.tool} {top.rule_id} rates the same line",
        )
    for other in others:
        also = f"also:{other.tool}:{other.rule_id}"
        if also not in tags and (other.tool, other.rule_id) != (best.tool, best.rule_id):
            tags.append(also)
        for rule in (other.rule_id, *other.related_rules):
            if rule != best.rule_id and rule not in related:
                related.append(rule)
        fix = fix or other.fix_patch_id
        for ev in other.evidence:
            if ev not in evidence:
                evidence.append(ev)
    update.update(tags=tags, evidence=evidence, fix_patch_id=fix, related_rules=related)
    if best.noise is not None and any(o.noise is None for o in others):
        update["noise"] = None  # one of the reports is worth acting on: so is the problem
    return best.model_copy(update=update)
