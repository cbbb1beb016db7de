"""The QR as Markdown: what a person reads after a session."""

from __future__ import annotations

import re

from ...models import Finding, Patch, QualityReport, Severity, summarize
from ..noise import by_importance

_ORDER = [Severity.critical, Severity.high, Severity.medium, Severity.low, Severity.info]
_VERDICT_LINE = {
    "pass": "PASS: nothing that needs attention.",
    "conditional": "CONDITIONAL: no blocking finding, but some need a look.",
    "fail": "FAIL: at least one finding at or above the failure threshold.",
    "cancelled": "CANCELLED: the session was stopped; the findings below are partial.",
}


def _cell(text: object) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


def _inline(text: str) -> str:
    """``text`` as inline code, whatever backticks it contains."""
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (run + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _block(text: str, lang: str = "") -> list[str]:
    run = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, run + 1)
    return [f"{fence}{lang}", text.rstrip("\n"), fence]


def _where(f: Finding) -> str:
    if not f.file:
        return "(project)"
    if f.range:
        return f"{f.file}:{f.range.start_line}:{f.range.start_col}"
    return f.file


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def _fix_lines(f: Finding, patches: dict[str, Patch]) -> tuple[str | None, list[str]]:
    """The "Fix" bullet and, when the patch is known, its diff (folded)."""
    if not f.fix_patch_id:
        return None, []
    p = patches.get(f.fix_patch_id)
    verified = f.verified or (p is not None and p.verified)
    status = p.label if p is not None else ("verified" if verified else "not verified")
    if p is not None and p.verification:
        # the verifier's text usually starts with its label itself
        said = p.verification.strip()
        status = said if said.lower().startswith(
            ("verified", "not verified", "tool-verified", "suppression")) else f"{status}: {said}"
    desc = f"{p.description} " if p is not None else ""
    head = "Suppression" if p is not None and p.kind == "suppression" else "Fix"
    bullet = f"- **{head}** {_inline(f.fix_patch_id)}: {desc}({status})"
    if p is None:
        return bullet, []
    body = ["<details><summary>Patch</summary>", "", *_block(p.diff, "diff"), "", "</details>", ""]
    return bullet, body


def _finding(n: int, f: Finding, patches: dict[str, Patch]) -> list[str]:
    lines = [f"#### {n}. {f.title}", ""]
    lines.append(
        f"- **Where** {_inline(_where(f))} · rule {_inline(f.rule_id)} · {f.tool} "
        f"({f.role}) · confidence {f.confidence:.2f} · {f.category}"
    )
    lines.append(f"- **Id** {_inline(f.id)}")
    if f.related_rules:
        lines.append("- **Also reported as** " + ", ".join(_inline(r) for r in f.related_rules))
    if f.severity_reason:
        lines.append(f"- **Severity** {f.severity.value}: {f.severity_reason}")
    if f.noise:
        lines.append(f"- **Noise** {f.severity.value}: {f.noise}")
    if f.help_uri:
        lines.append(f"- **Rule docs** <{f.help_uri}>")
    fix, fix_body = _fix_lines(f, patches)
    if fix:
        lines.append(fix)
    lines.append("")
    message = f.message.strip() if f.message else ""
    if message and message != f.title.strip():
        if "\n" in message:  # tool output (assertion diffs...): keep it verbatim
            lines += _block(message, "text")
        else:
            lines.append(message)
        lines.append("")
    if f.snippet:
        lines += _block(f.snippet, "python" if (f.file or "").endswith(".py") else "")
        lines.append("")
    if f.evidence:
        lines.append("Evidence:")
        lines.append("")
        for e in f.evidence:
            loc = f"{e.file}:{e.line}" if e.file and e.line else (e.file or "")
            head = f"- {_inline(loc)}: " if loc else "- "
            msg = e.message.strip().splitlines()
            lines.append(head + (msg[0] if msg else ""))
            lines += [f"  {m}" for m in msg[1:]]
            if e.snippet and e.snippet.strip() != (f.snippet or "").strip():
                lines.append(f"  {_inline(e.snippet.strip())}")
        lines.append("")
    return lines + fix_body


def render_markdown(report: QualityReport) -> str:
    summary = report.summary or summarize(report.findings)
    patches = {p.id: p for p in report.patches}
    out = [f"# SuperQode quality report: {report.verdict.upper()}", ""]
    out.append(f"**{_VERDICT_LINE.get(report.verdict, report.verdict)}**")
    out.append("")
    if report.stale:
        out += [
            (
                "> **Stale:** the project changed while the session ran. Findings describe "
                "the code as it was when the session started; run again for current results."
            ),
            "",
        ]
    if report.cancelled:
        out += ["> **Cancelled:** the session was stopped before all roles finished.", ""]
    if report.timed_out:
        out += ["> **Timed out:** the session's time budget ran out; results are partial.", ""]
    if report.since is not None:
        out += [f"Only findings introduced since {_inline(report.since.ref)} (merge-base "
                f"`{report.since.merge_base[:12]}`) are listed.", ""]
    if report.shard or report.merged_from:
        out += [f"Shard {report.shard} of the work." if report.shard else
                f"Merged from {len(report.merged_from)} shard reports.", ""]
    out += [
        "| Session | Project | Mode | Isolation | Base commit | Started | Duration |",
        "|---|---|---|---|---|---|---|",
        "| "
        + " | ".join(
            _cell(x)
            for x in (
                report.session_id,
                report.project,
                report.mode,
                report.isolation,
                (report.base_commit or "-")[:12],
                report.started_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                _duration(report.duration_s),
            )
        )
        + " |",
        "",
        *(
            [f"Interpreter: {_inline(report.interpreter.label)}"
             + (f" ({_cell(report.interpreter.note)})" if report.interpreter.note else ""), ""]
            if report.interpreter else []
        ),
        "## Summary",
        "",
        "| Severity | Findings |",
        "|---|---:|",
    ]
    for sev in _ORDER:
        out.append(f"| {sev.value} | {summary.get(sev.value, 0)} |")
    if summary.get("noise"):
        out.append(f"| noise | {summary['noise']} |")
    out.append(f"| **total** | **{len(report.findings)}** |")
    out.append("")
    verified = sum(1 for p in report.patches if p.verified)
    tool_only = sum(1 for p in report.patches if p.label == "tool-verified only")
    silencers = sum(1 for p in report.patches if p.kind == "suppression")
    extras = [f"{len(report.patches) - silencers} suggested fix(es), {verified} verified"
              + (f", {tool_only} tool-verified only" if tool_only else "")]
    if silencers:
        extras.append(f"{silencers} suppression(s) offered (they silence, not fix)")
    if report.suppressed:
        extras.append(f"{report.suppressed} suppressed as noise")
    if report.baseline_filtered:
        extras.append(f"{report.baseline_filtered} already in the baseline")
    out += ["; ".join(extras) + ".", ""]

    out += ["## Findings", ""]
    if not report.findings:
        out += ["No findings.", ""]
    n = 0
    # Most important first: what is worth acting on by severity, the noise
    # after it in a section of its own (true or not, not worth acting on).
    ordered = by_importance(report.findings)
    for sev in _ORDER:
        group = [f for f in ordered if f.severity == sev and f.noise is None]
        if not group:
            continue
        out += [f"### {sev.value.capitalize()} ({len(group)})", ""]
        for f in group:
            n += 1
            out += _finding(n, f, patches)
    noise = [f for f in ordered if f.noise is not None]
    if noise:
        out += [f"### Noise ({len(noise)})", "",
                "True or not, not worth acting on: each says why.", ""]
        for f in noise:
            n += 1
            out += _finding(n, f, patches)

    out += [
        "## Roles",
        "",
        "| Role | Status | Tool | Findings | Fixes | Time | Note |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for r in report.roles:
        out.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (
                    r.role,
                    r.status,
                    r.tool or "-",
                    r.findings,
                    r.patches,
                    _duration(r.duration_s),
                    r.reason or "",
                )
            )
            + " |"
        )
    if not report.roles:
        out.append("| (none) | | | | | | |")
    out.append("")

    out += ["## Verification", ""]
    if report.verification is None:
        out.append("The project tree was not verified in this session.")
    else:
        v = report.verification
        out.append(v.line)
        if len(v.differences) > 1:
            out += ["", "Differences:", ""] + [f"- {_inline(d)}" for d in v.differences[:200]]
        if v.outside_changes:
            out += ["", ("Changed outside the session (kept; the kernel barrier shut the session "
                         "out of the project):"), ""]
            out += [f"- {_inline(d)}" for d in v.outside_changes[:200]]
    if report.protection:
        out += ["", f"Protection: {report.protection}."]
    out.append("")
    if report.usage and report.usage.requests:
        u = report.usage
        out += [
            "## Model usage",
            "",
            (
                f"{u.requests} request(s), {u.prompt_tokens} prompt + {u.completion_tokens} "
                f"completion tokens, ${u.cost_usd:.4f}."
            ),
            "",
        ]
    if report.artifacts:
        out += ["## Artifacts", ""]
        for name, path in sorted(report.artifacts.items()):
            out.append(f"- {name}: {_inline(path)}")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
