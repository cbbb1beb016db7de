"""Everything said about one finding, in one place: its hover and the
"show details" code action (``superqode.showFinding``) say the same."""

from __future__ import annotations

from . import fixes
from .convert import diagnostic_message
from .server import SuperQodeServer
from .store import Tracked


def details(ls: SuperQodeServer, t: Tracked, md: bool) -> str:
    """Everything said about one finding (its hover, and the "show details"
    code action): rule, severity, role and tool, message, evidence, rule page
    and what its fix is."""
    f = t.finding
    patch = fixes.patch_of(ls, t)
    fix = "" if patch is None else f"\n\n{_OFFER[patch.label]}"
    message = diagnostic_message(f)
    # Evidence that only repeats the message is left out: the text is said once.
    evidence = "".join(f"\n- {e.message}" for e in f.evidence[:5]
                       if e.message and e.message.strip() not in message)
    rule = f"**{f.rule_id}**" if md else f.rule_id
    link = ""
    if f.help_uri:
        link = f"\n\n[{f.rule_id} rule]({f.help_uri})" if md else f"\n\n{f.help_uri}"
    return f"{rule} ({f.severity.value}, {f.role}/{f.tool}): {message}{evidence}{link}{fix}"


# What the quick fix is, in the words of its verification (Patch.label).
_OFFER = {
    "verified": "Verified fix available (the tool and the tests covering it pass).",
    "tool-verified only": "Fix available, tool-verified only (no covering tests ran).",
    "not verified": "Unverified fix available.",
    "suppression": "Suppression available (silences the finding; does not fix it).",
}


def fix_counts(patches) -> str:
    """The fixes of a run in the Quality Report's words, so the end message,
    the report, hover and Fix All say the same numbers: "N verified fix(es)"
    counts only fixes the covering tests passed with; fixes the tool alone
    re-checked are "tool-verified only"."""
    patches = list(patches)
    verified = sum(1 for p in patches if p.kind == "fix" and p.verified)
    tool_only = sum(1 for p in patches if p.kind == "fix" and p.label == "tool-verified only")
    text = f"{verified} verified fix(es)"
    return text + (f", {tool_only} tool-verified only" if tool_only else "")
