"""One flaw, one finding: request data that reaches a sink through the
project's own functions is reported at the call (``_web_flows``, its
message naming the chain: ``_download_image() → urlopen() at
app/ssrf.py:35``), and bandit reports the same sink at its own line (B310
for ``urlopen``). Both are the one flaw, so bandit's report at the chain's
last line folds into the caller's finding (its rule in ``related_rules``,
its evidence kept): the caller's finding says where the data comes from and
where it goes, which bandit's "audit url open" cannot. A bandit report with
no chain leading to it stays as it is; each finding keeps its own id.
"""

from __future__ import annotations

import re

from ...models import Finding
from ..noise import merge_reports

# bandit's rules that report, at a sink's own line, the flaw a chain names
_SAME_FLAW = {
    "ssrf": frozenset({"B310"}),  # urllib.urlopen of a variable URL
    "xxe": frozenset({f"B{n}" for n in range(313, 321)}),  # xml/lxml parsers
}
_BANDIT_RULES = frozenset().union(*_SAME_FLAW.values())
# the sink at a chain's end, as _web_calls.where() writes it
_SINK_AT = re.compile(r"→ \w+\(\) at (?P<file>[^\s:]+):(?P<line>\d+)")


def merge_chains(findings: list[Finding]) -> list[Finding]:
    """``findings`` with each bandit report at a chain's sink line folded
    into the (first) chain finding that names that line."""
    at_sink: dict[tuple[str, int], list[Finding]] = {}
    for f in findings:
        if f.tool == "bandit" and f.rule_id in _BANDIT_RULES and f.file and f.range:
            at_sink.setdefault((f.file, f.range.start_line), []).append(f)
    if not at_sink:
        return findings
    folded: set[int] = set()
    into: dict[int, list[Finding]] = {}
    for f in findings:
        same = _SAME_FLAW.get(f.rule_id)
        if f.tool != "superqode-patterns" or same is None:
            continue
        sinks = list(_SINK_AT.finditer(f.message))
        if not sinks:
            continue
        last = sinks[-1]
        found = [b for b in at_sink.get((last["file"], int(last["line"])), [])
                 if b.rule_id in same and id(b) not in folded]
        if found:
            folded.update(id(b) for b in found)
            into[id(f)] = found
    return [merge_reports(f, into[id(f)]) if id(f) in into else f
            for f in findings if id(f) not in folded]
