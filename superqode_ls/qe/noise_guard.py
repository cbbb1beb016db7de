"""One noise rule's bug costs only the findings it was judging.

The filter's rule steps each take the findings and give one back for each,
in order. A rule that raises (a recursion in its reading of an odd module,
say) would otherwise fail the whole session and leave every finding
unjudged. ``guarded`` runs the step again on halves of the list until the
findings it cannot judge are alone; those go on as they came, the others
get the step's judgment, and the log names the rule and the finding."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..models import Finding

log = logging.getLogger(__name__)

Step = Callable[[list[Finding]], list[Finding]]


def guarded(name: str, step: Step, findings: list[Finding], failed: list[str]) -> list[Finding]:
    """``step(findings)``; where it raises, the findings it cannot judge
    are kept unchanged and ``name`` is added to ``failed`` (once)."""
    try:
        return step(findings)
    except Exception as e:  # noqa: BLE001 - a bug in one rule must not cost the run the others
        if len(findings) <= 1:
            f = findings[0] if findings else None
            where = f"{f.file}:{f.range.start_line if f.range else '-'}" if f else "-"
            log.warning("noise rule %s failed on %s (%s: %s): the finding goes on without it",
                        name, where, type(e).__name__, e)
            if name not in failed:
                failed.append(name)
            return findings
    half = len(findings) // 2
    return (guarded(name, step, findings[:half], failed)
            + guarded(name, step, findings[half:], failed))
