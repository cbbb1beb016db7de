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
- pyflakes (``F``): dead imports and variables, a shadowed name, an unused
  f-string are true of the code whoever selected them;
- a debugger call left in (``T100``), ``sys.version`` misuse (``YTT``), a
  bare ``except:`` and a type compared with ``==`` (``E722``, ``E721``).
"""

from __future__ import annotations

import re

from ..models import Finding, Severity
from .context import mark_noise

# Rules that speak of what the code does, at whatever severity ruff's rating
# gives them.
# E721/E722: a type compared with ``==``, a bare ``except:`` (which catches
# KeyboardInterrupt too; conventions.py judges the one that answers).
_BEHAVIOUR = re.compile(r"^(F\d+|T10\d|YTT\d+|E9\d\d|E72[12]|PLE\d+)$")

STYLE_REASON = ("a style, complexity or modernisation rule (the project's taste, "
                "which its own linter enforces where it chooses)")


def is_style(f: Finding) -> bool:
    """A lint finding about how the code is written, not what it does."""
    if f.category != "lint" or f.role != "lint_tester":
        return False
    if f.severity.rank >= Severity.medium.rank:
        return False
    return not _BEHAVIOUR.match(f.rule_id.upper())


def style_noise(findings: list[Finding]) -> list[Finding]:
    """``findings`` with each style finding that is not yet noise marked so
    (its severity kept: the project may still want to see it)."""
    return [mark_noise(f, STYLE_REASON) if f.noise is None and is_style(f) else f
            for f in findings]
