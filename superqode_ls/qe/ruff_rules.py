"""How severe each ruff rule is by itself, before any context: what the code
does wrong (high), likely bugs (medium), idioms and notes (low), pure style
(info). Read by the lint role when it reports and by the noise filter when it
decides which of a project's selected rules are opinions (``noise_style``)."""

from __future__ import annotations

import functools
import re

from ..models import Severity

# Rules that mean the code is broken or will fail at run time. Of pyflakes'
# format checks, those whose ``%`` or ``.format`` raises when the line runs
# (a count or key mismatch, a bad format character, mixed numbering); not
# F504/F522/F523, arguments given and never used, which run.
_HIGH = re.compile(r"^(E9\d\d|F82[123]|F50[1235-9]|F52[145]|F63[1-4]|F70[1-7]|PLE\d+|"
                   r"syntax-error|invalid-syntax)$")
# bugbear's idiom notes: true, rarely a bug, often deliberate (an attribute
# read for its side effect, hasattr(x, "__call__"), getattr with a constant
# name, an unused loop variable, an abstract class without abstract methods).
_IDIOM = re.compile(r"^B(004|007|009|010|018|024|027)$")
# Likely bugs rather than style. Not RUF012/RUF013 (a mutable class
# attribute without ``ClassVar``, an implicit ``Optional``): notes on the
# annotations, not on what the code does.
_MEDIUM = re.compile(r"^(B\d+|S\d+|F(?!401|841|811|541)\d+|PLW\d+|ASYNC\d+|RUF006)$")
# Of the medium rules, those that are most often a bug wherever they fire:
# shown even where the project never chose them (ruff runs them by default).
# Not F541: an f-string without placeholders runs as the plain string.
LIKELY_BUG = re.compile(
    r"^(B00[2356]|B01[2569]|B02[1359]|B03[01235]|B039|PLW01(27|28|29|31|33|77)|PLW0211|PLW0245|"
    r"PLW0406|PLW0711|PLW150[178]|PLW2101|ASYNC\d+|RUF006|S\d+|F(?!541$)\d+)$")
# Pure style/formatting: worth knowing, never a reason to fail.
_INFO = re.compile(r"^(E[1-5]\d\d|W\d+|I\d+|D\d+|N\d+|Q\d+|COM\d+|UP\d+|RUF022|ISC\d+)$")


@functools.cache  # a few dozen codes, thousands of diagnostics
def ruff_severity(code: str) -> Severity:
    if _HIGH.match(code):
        return Severity.high
    if _IDIOM.match(code):
        return Severity.low
    if _MEDIUM.match(code):
        return Severity.medium
    if _INFO.match(code):
        return Severity.info
    return Severity.low
