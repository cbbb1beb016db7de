"""What a maintainer acts on, of the linter's findings (noise.py, step 5b).

A lint rule speaks either of what the code does (an undefined or unused
name, a bug-prone idiom, a security call, a broken statement) or of how it
is written (layout, naming, docstrings, annotations, complexity, newer
idioms, a copyright header). The second kind is the project's own taste:
even a rule its configuration selects (``select = ["ALL"]`` takes in every
rule a newer ruff adds) is checked by its own CI, where it is enforced, and
tolerated where it fires. Those findings are noise: counted, one click
away, never first. What stays shown:

- every rule the lint role rates ``medium`` or above (likely bugs: bugbear,
  the security rules, pylint's warnings and errors, undefined names...);
- pyflakes (``F``): dead imports and variables, a shadowed name are true
  of the code whoever selected them. Not F541 (an f-string without
  placeholders, tweepy's constant endpoint paths written ``f"/2/tweets"``
  beside ``f"/2/tweets/{id}"``): the string is the same at run time, so it is
  a style rule like the rest (its safe fix stays offered);
- a medium rule that is most often a bug wherever it fires (the lint
  role's list: a mutable default, a loop variable a closure keeps...).
  Another medium rule (``B905`` zip without ``strict=``, ``PLW0603`` a
  ``global`` statement) that fires in ``TOLERATED`` places or more of the
  project's own code is evidently tolerated there: noise, its count said;
- a debugger call left in (``T100``), ``sys.version`` misuse (``YTT``), a
  bare ``except:`` and a type compared with ``==`` (``E722``, ``E721``).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

from ..models import Finding, Severity
from .context import mark_noise
from .ruff_rules import LIKELY_BUG

# Rules that speak of what the code does, at whatever severity ruff's rating
# gives them.
# E721/E722: a type compared with ``==``, a bare ``except:`` (which catches
# KeyboardInterrupt too; conventions.py judges the one that answers).
# F541: an f-string without placeholders is the same string at run time.
_BEHAVIOUR = re.compile(r"^(F(?!541$)\d+|T10\d|YTT\d+|E9\d\d|E72[12]|PLE\d+)$")

STYLE_REASON = ("a style, complexity or modernisation rule (the project's taste, "
                "which its own linter enforces where it chooses)")


def is_style(f: Finding) -> bool:
    """A lint finding about how the code is written, not what it does."""
    if f.category != "lint" or f.role != "lint_tester":
        return False
    if f.severity.rank >= Severity.medium.rank:
        return False
    return not _BEHAVIOUR.match(f.rule_id.upper())


TOLERATED = 5


@cache
def _likely_bug(rule: str) -> bool:
    return bool(LIKELY_BUG.match(rule))


def _opinion(f: Finding) -> bool:
    """A medium lint rule that is not most often a bug."""
    return (f.category == "lint" and f.role == "lint_tester" and f.severity is Severity.medium
            and not _likely_bug(f.rule_id.upper()))


def style_noise(findings: list[Finding]) -> list[Finding]:
    """``findings`` with each style finding that is not yet noise marked so,
    and each opinion the project's code holds in ``TOLERATED`` places or
    more (severities kept: the project may still want to see them)."""
    counts = Counter(f.rule_id.upper() for f in findings if f.noise is None and _opinion(f))
    out = []
    for f in findings:
        if f.noise is None and is_style(f):
            f = mark_noise(f, STYLE_REASON)
        elif f.noise is None and _opinion(f) and (n := counts[f.rule_id.upper()]) >= TOLERATED:
            f = mark_noise(f, f"tolerated by the project: {f.rule_id} fires in {n} places "
                              "of its code")
        out.append(f)
    return out
