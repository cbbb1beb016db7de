"""security_tester: bandit, a secrets scan, and a few dangerous patterns
bandit does not look for. Mechanical, behaviour-preserving fixes become
patches: ``yaml.load``/``yaml.unsafe_load`` -> ``yaml.safe_load`` and weak
hashes (md5/sha1) marked ``usedforsecurity=False`` (which keeps their output,
so cache keys and ETags stay the same; a hash that protects anything should
move to sha256 instead, which the finding says).
"""

from __future__ import annotations

import ast
import asyncio
import re
import threading
from pathlib import Path
from typing import Any

from ...models import Evidence, Finding, Patch, Range, RoleStatus, Severity
from ...workspace.pyast import parse as parse_python
from ..noise import merge_reports, path_class
from . import _secrets, _web
from ._batches import Plan, left_out_reason, plan_batches
from ._common import (
    SKIP_DIRS,
    SourceCache,
    assign_ids,
    byte_col_to_char,
    fingerprint,
    is_test_path,
    load_json,
    rel_to,
    selected_files,
    tail,
    worker_count,
)
from ._patches import attach, make_patch
from ._patterns import call_name, may_match, patterns
from .base import FileCheckRole, RoleContext, RoleOutput, ToolFailed, tool_path

_SEVERITY = {"HIGH": Severity.high, "MEDIUM": Severity.medium, "LOW": Severity.low}
_CONFIDENCE = {"HIGH": 0.9, "MEDIUM": 0.7, "LOW": 0.4, "UNDEFINED": 0.5}
# "Consider possible security implications of importing X": context, not a problem.
_IMPORT_NOTES = {f"B4{n:02d}" for n in range(1, 16)}
_PASSWORD_RULES = ("B105", "B106", "B107")
_CWE = {
    "sql-injection": ("CWE-89",), "template-autoescape-off": ("CWE-79",),
    "debug-mode": ("CWE-489",), "insecure-cookie": ("CWE-1004",),
    "hardcoded-db-password": ("CWE-798",), "weak-password-hash": ("CWE-916",),
} | _web.CWE
_WEAK_HASHES = {"md5", "sha1", "md4", "md2", "sha"}
_SECRET_SUFFIXES = (
    ".py", ".pyi", ".cfg", ".ini", ".toml", ".yaml", ".yml", ".json", ".env", ".txt",
    ".sh", ".js", ".ts", ".properties", ".conf", ".xml", ".pem", ".key", ".md", ".rst",
)  # fmt: skip


class SecurityTester(FileCheckRole):
    name = "security_tester"
    tool = "bandit"
    cost = 2
    file_local = True
    description = "bandit + secrets scan + extra dangerous patterns; safe fixes as patches"

    def unavailable(self, config=None) -> str | None:
        return None  # the secrets scan runs even without bandit

    async def _check(self, ctx: RoleContext, files: list[str] | None) -> RoleOutput:
        root = ctx.sandbox
        # bandit's own walk takes .pyw too; the pattern scans read .py only
        bandit_files = selected_files(root, files, (".py", ".pyw"))
        py_files = [f for f in bandit_files if f.endswith(".py")]
        text_files = [
            f
            for f in selected_files(root, files)
            if f.endswith(_SECRET_SUFFIXES)
            or "." not in Path(f).name
            or Path(f).name.startswith(".env")
        ]
        if not bandit_files and not text_files:
            return RoleOutput(status="skipped", reason="no files to scan", tool="bandit")
        src = SourceCache(root)
        findings: list[Finding] = []
        reason: str | None = None
        status: RoleStatus = "ok"
        bandit = tool_path("bandit")
        # The pure-Python scans run in a thread while bandit runs as a process:
        # on two cores that hides most of the scan's time.
        stop, missed = threading.Event(), []
        scan = asyncio.ensure_future(asyncio.to_thread(
            self._scan, root, SourceCache(root), py_files, text_files, stop, missed))
        stop_at = _stop_at(ctx)
        try:
            if bandit is None:
                reason = "bandit is not installed in SuperQode's environment; ran the secrets scan only"
            elif bandit_files:
                unscanned: list[str] = []
                left_out: list[str] = []
                bandit_out = await self._bandit(
                    ctx, bandit, bandit_files, files is None, unscanned, left_out, stop_at
                )
                if unscanned:
                    reason = _unscanned_reason(unscanned)
                if left_out:
                    status = "incomplete"
                    reason = "; ".join(filter(None, (left_out_reason(left_out), reason)))
                findings.extend(
                    await asyncio.to_thread(self._bandit_findings, root, src, bandit_out))
            left = None if stop_at is None else stop_at - asyncio.get_running_loop().time()
            try:
                extra = await asyncio.wait_for(asyncio.shield(scan), max(0.0, left)
                                               if left is not None else None)
            except TimeoutError:
                stop.set()  # ends after the file at hand, with what it found
                extra = await scan
            if missed:
                status = "incomplete"
                why = f"the secrets and pattern scans ran out of time: {len(missed)} files not scanned"
                reason = "; ".join(filter(None, (why, reason)))
        finally:
            stop.set()
        findings = _merge_secrets(findings, extra)
        findings = assign_ids(findings)
        patches = await asyncio.to_thread(self._fixes, src, findings)
        return RoleOutput(
            findings=attach(findings, patches), patches=patches, tool="bandit", reason=reason,
            status=status,
        )

    async def _bandit(
        self, ctx: RoleContext, bandit: str, py_files: list[str], whole: bool,
        unscanned: list[str] | None = None, left_out: list[str] | None = None,
        stop_at: float | None = None,
    ) -> list[dict[str, Any]]:
        """bandit's results (``ToolFailed`` when it gives none); files it could
        not parse (not UTF-8, binary, syntax errors) are added to ``unscanned``
        as ``file (why)``, those it had no time for to ``left_out``.
        ``whole``: the files are the whole tree.

        bandit analyses one file at a time on one CPU, and is most of quick
        mode's time: on a big project its files go in batches (``_batches``:
        product code first, tests and docs after, split by size among
        several bandit processes, results merged in the order one process
        gives them), so a deadline costs only what was not reached."""
        cmd = [bandit, "-f", "json", "-q"]
        if (ctx.sandbox / "pyproject.toml").is_file():
            try:
                text = (ctx.sandbox / "pyproject.toml").read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
            if "[tool.bandit" in text:
                cmd += ["-c", "pyproject.toml"]
        if whole:
            cmd += ["-x", ",".join(f"*/{d}/*" for d in sorted(SKIP_DIRS)) + ",*.egg-info/*"]
        plan = plan_batches(ctx.sandbox, py_files, worker_count(ctx.config, ctx.runtime), self._demoted(ctx))
        if plan is None:
            argv = cmd + (["-r", "."] if whole else ["--", *py_files])
            outs = [await self._bandit_run(ctx, argv, None)]
        else:
            outs = await self._bandit_batches(ctx, cmd, plan, left_out, stop_at)
        results: list[dict[str, Any]] = []
        for data in outs:
            results.extend(data.get("results") or [])
            if unscanned is not None:
                for err in data.get("errors") or []:
                    if isinstance(err, dict) and err.get("filename"):
                        rel = rel_to(ctx.sandbox, str(err["filename"]))
                        unscanned.append(f"{rel} ({err.get('reason') or 'unreadable'})")
        if len(outs) > 1:  # one process lists its results by file name, stably
            results.sort(key=lambda r: str(r.get("filename", "")))
        return results

    @staticmethod
    def _demoted(ctx: RoleContext):
        classes = ctx.config.qe.path_classes
        return lambda rel: path_class(rel, classes) is not None

    async def _bandit_batches(self, ctx: RoleContext, cmd: list[str], plan: Plan,
                              left_out: list[str] | None, stop: float | None
                              ) -> list[dict[str, Any]]:
        """bandit over ``plan``'s batches, ``plan.width`` at a time, in order.
        At ``stop`` (the deadline less the time to report what was found) the
        running batches stop: the finished ones' results come back and
        ``left_out`` gets the files not scanned; none finished is a timeout."""
        queue = list(enumerate(plan.batches))
        done: dict[int, dict[str, Any]] = {}
        missed: list[int] = []
        n = len(plan.batches)

        async def worker() -> None:
            while queue:
                k, batch = queue.pop(0)
                left = None if stop is None else stop - asyncio.get_running_loop().time()
                if left is not None and left <= 0:
                    missed.append(k)
                    continue
                argv = cmd + ["--", *(f"./{f}" for f in batch)]
                try:
                    done[k] = await self._bandit_run(ctx, argv, f"{k + 1}/{n}", timeout=left)
                except ToolFailed as e:
                    if e.status != "timeout":
                        raise
                    missed.append(k)

        await asyncio.gather(*(worker() for _ in range(min(plan.width, n))))
        if not done:
            raise ToolFailed("bandit", "bandit ran out of time", status="timeout")
        if left_out is not None:
            left_out.extend(f for k in sorted(missed) for f in plan.batches[k])
        return [done[k] for k in sorted(done)]

    async def _bandit_run(self, ctx: RoleContext, argv: list[str], shard: str | None,
                          timeout: float | None = None) -> dict[str, Any]:
        warm = ctx.runtime.analyzer
        res = None
        if timeout is None:
            timeout = ctx.remaining()
        if warm is not None and warm.serves(argv[0]):
            res = await warm.run(argv[1:], ctx.sandbox, ctx.env, timeout)
            if res is not None:
                ctx.emit("tool_call", tool="bandit", argv=argv[:20], warm=True)
        if res is None:
            res = await ctx.run(argv, shard=shard, timeout=timeout)
        if res.timed_out:
            raise ToolFailed("bandit", "bandit ran out of time", status="timeout")
        try:
            data = await asyncio.to_thread(load_json, res.stdout)
        except ValueError:
            data = None
        if res.returncode not in (0, 1) or not isinstance(data, dict):
            why = tail(res.stderr) or f"exit code {res.returncode}"
            raise ToolFailed("bandit", f"bandit failed: {why}")
        return data

    def _bandit_findings(
        self, root: Path, src: SourceCache, results: list[dict[str, Any]]
    ) -> list[Finding]:
        out = []
        for r in results:
            rel = rel_to(root, r.get("filename", ""))
            test_id = r.get("test_id") or "B000"
            if test_id == "B101" and is_test_path(rel):
                continue  # assert is how tests check things
            line = int(r.get("line_number") or 1)
            line_range = r.get("line_range") or [line]
            end_line = max(int(line_range[-1]), line)
            text = src.line(rel, line)
            start_col = byte_col_to_char(text, int(r.get("col_offset") or 0)) + 1
            end_col = None
            if r.get("end_col_offset") is not None:
                end_col = byte_col_to_char(src.line(rel, end_line), int(r["end_col_offset"])) + 1
            severity = _SEVERITY.get(r.get("issue_severity", ""), Severity.medium)
            if test_id in _IMPORT_NOTES:
                severity = Severity.info
            # The test id is the code, its name a tag: the text says it once.
            message = r.get("issue_text") or test_id
            title = r.get("issue_text", test_id).split(". ")[0].rstrip(".")
            fid = ""
            evidence: list[Evidence] = []
            snippet = text
            severity_reason = None
            noise = None
            if test_id in _PASSWORD_RULES:
                # bandit quotes the password: mask the value only, never the
                # words around it, and keep it out of the snippet and the id.
                m = re.search(r": '(.*)'$", r.get("issue_text", ""))
                if m and not m.group(1).strip():
                    noise = "not a secret: the value is empty"  # reset_token = ''
                    severity_reason = f"bandit rates it {severity.value}; the value is empty"
                    severity = Severity.info
                elif m:
                    secret = m.group(1)
                    # A title cut inside the value (at ". ") holds part of
                    # it unquoted: then only the words before the value.
                    message, title = (
                        _secrets.mask_quoted(x, secret) or x.split(": '", 1)[0]
                        for x in (message, title)
                    )
                    snippet = None
                    fid = fingerprint(test_id, "bandit", rel, _secrets.digest(secret))
                    masked = _secrets.mask_quoted(text, secret) if text else None
                    if masked is not None:
                        evidence.append(
                            Evidence(
                                message="flagged line (secret masked)",
                                file=rel,
                                line=line,
                                snippet=masked,
                            )
                        )
                    why = _secrets.not_a_secret(secret, text)
                    credential = _secrets.built_in_credential(secret, text)
                    if credential is not None:
                        if severity.rank < Severity.high.rank:
                            severity_reason = f"bandit rates it {severity.value}; {credential}"
                            severity = Severity.high
                    elif why is not None:
                        noise = f"not a secret: the value is {why}"
                    elif _secrets.plausible(secret, text) and severity.rank < Severity.high.rank:
                        severity_reason = (
                            f"bandit rates it {severity.value}; a hard-coded secret in the "
                            "code is at least high"
                        )
                        severity = Severity.high
            elif test_id == "B324" and severity.rank > Severity.medium.rank:
                # A weak hash is a risk only where it protects something; a
                # cache key or an ETag is not. A secret in the code always is,
                # so MD5 must not rank above one (secrets are at least high).
                severity_reason = (
                    f"bandit rates it {severity.value}; a weak hash matters where it "
                    "protects something"
                )
                severity = Severity.medium
            elif test_id == "B101":
                # An assert outside tests: worth a look, never a failed run
                # (qe.never_fail); whatever bandit's version calls it.
                severity = Severity.low
            cwe = (r.get("issue_cwe") or {}).get("id")
            tags = ["bandit", r.get("test_name") or test_id]
            if cwe:
                tags.append(f"CWE-{cwe}")
            out.append(
                Finding(
                    role=self.name,
                    tool="bandit",
                    rule_id=test_id,
                    title=title,
                    message=message,
                    severity=severity,
                    confidence=_CONFIDENCE.get(r.get("issue_confidence", ""), 0.5),
                    category="security",
                    file=rel,
                    range=Range(
                        start_line=line,
                        start_col=max(1, start_col),
                        end_line=end_line,
                        end_col=end_col,
                    ),
                    tags=tags,
                    help_uri=r.get("more_info"),
                    snippet=snippet,
                    id=fid,
                    evidence=evidence,
                    severity_reason=severity_reason,
                    noise=noise,
                )
            )
        return out

    def _scan(
        self,
        root: Path,
        src: SourceCache,
        py_files: list[str],
        text_files: list[str],
        stop: threading.Event | None = None,
        missed: list[str] | None = None,
    ) -> list[Finding]:
        """The secrets scan and the pattern scans; when ``stop`` is set it
        ends after the file at hand and lists the files it did not reach
        in ``missed``."""
        # bandit's reports of the same lines are merged afterwards (_merge_secrets).
        out: list[Finding] = []
        for k, rel in enumerate(text_files):
            if stop is not None and stop.is_set():
                if missed is not None:
                    missed.extend(text_files[k:])
                    seen = set(text_files)
                    missed.extend(f for f in py_files if f not in seen)
                return out
            for hit in _secrets.scan_file(root / rel, in_test=is_test_path(rel)):
                out.append(
                    Finding(
                        role=self.name,
                        tool="superqode-secrets",
                        rule_id=hit.rule.id,
                        title=hit.rule.title,
                        message=(
                            f"{hit.rule.title}{hit.note}. Remove it, rotate it, and load it "
                            "from the environment or a secret store."
                        ),
                        severity=hit.rule.severity,
                        confidence=hit.confidence,
                        category="secrets",
                        file=rel,
                        range=Range(
                            start_line=hit.line,
                            start_col=hit.start_col,
                            end_line=hit.line,
                            end_col=hit.end_col,
                        ),
                        tags=["secrets", "CWE-798"],
                        # No snippet: it would hold the secret (and a masked
                        # one never matches the editor's text). The id comes
                        # from a digest of the secret; the masked line is
                        # evidence.
                        id=fingerprint(hit.rule.id, "superqode-secrets", rel, hit.digest),
                        evidence=[
                            Evidence(
                                message="flagged line (secret masked)",
                                file=rel,
                                line=hit.line,
                                snippet=hit.masked_line,
                            )
                        ],
                    )
                )
        for k, rel in enumerate(py_files):
            if stop is not None and stop.is_set():
                if missed is not None:
                    missed.extend(py_files[k:])
                return out
            text = src.text(rel)
            if text is None or not (may_match(text) or _web.may_match(text)):
                continue
            try:
                tree = parse_python(text)
            except (SyntaxError, ValueError):
                continue
            hits = [*patterns(tree), *_web.web_patterns(tree, rel, text)]
            for node, rule, title, message, severity in hits:
                line_text = src.line(rel, node.lineno)
                if line_text and _secrets._ALLOW.search(line_text):
                    continue
                start = byte_col_to_char(line_text, node.col_offset) + 1
                end_line = getattr(node, "end_lineno", None) or node.lineno
                end_byte = getattr(node, "end_col_offset", None)
                end = (
                    byte_col_to_char(src.line(rel, end_line), end_byte) + 1
                    if end_byte is not None
                    else None
                )
                out.append(
                    Finding(
                        role=self.name,
                        tool="superqode-patterns",
                        rule_id=rule,
                        title=title,
                        message=message,
                        severity=severity,
                        confidence=0.8,
                        category="security",
                        file=rel,
                        range=Range(
                            start_line=node.lineno, start_col=start, end_line=end_line, end_col=end
                        ),
                        tags=["patterns", *_CWE.get(rule, ())],
                        snippet=line_text,
                    )
                )
        return out

    def _fixes(self, src: SourceCache, findings: list[Finding]) -> list[Patch]:
        patches: list[Patch] = []
        # One-line calls of each file by line, found once per file: walking
        # the whole tree again for each of thousands of findings was most of
        # the role's own time on a large repository.
        trees: dict[str, dict[int, list[ast.Call]] | None] = {}
        # usedforsecurity=False on a hash of a password would hide the flaw:
        # the fix there is a password hashing scheme, which no patch makes.
        passwords = {(f.file, f.range.start_line) for f in findings
                     if f.rule_id == "weak-password-hash" and f.range}
        for f in findings:
            if f.rule_id not in ("B506", "B324", "yaml-unsafe-load") or not f.file or not f.range:
                continue
            if f.rule_id == "B324" and (f.file, f.range.start_line) in passwords:
                continue
            text = src.text(f.file)
            if text is None:
                continue
            if f.file not in trees:
                try:
                    trees[f.file] = _calls_by_line(parse_python(text))
                except (SyntaxError, ValueError):
                    trees[f.file] = None
            tree = trees[f.file]
            if tree is None:
                continue
            fixed = _fix_call(text, tree, f)
            if fixed is None:
                continue
            new_text, description = fixed
            patch = make_patch(f, f.file, text, new_text, description)
            if patch is not None:
                patches.append(patch)
        return patches


def _merge_secrets(bandit: list[Finding], extra: list[Finding]) -> list[Finding]:
    """bandit's hard-coded password and the secrets scan on one line are one
    finding: a recognised token (AWS, GitHub...) leads, otherwise bandit's
    rule does; either way with the higher severity and both rule ids."""
    by_line: dict[tuple, list[Finding]] = {}
    for f in extra:
        if f.tool == "superqode-secrets" and f.range:
            by_line.setdefault((f.file, f.range.start_line), []).append(f)
    out: list[Finding] = []
    used: set[int] = set()
    for f in bandit:
        hits = by_line.get((f.file, f.range.start_line), []) if f.range else []
        hits = [h for h in hits if id(h) not in used]
        if f.rule_id not in _PASSWORD_RULES or not hits:
            out.append(f)
            continue
        group = [f, *hits]
        lead = next((h for h in hits if h.rule_id != "secret-generic"), f)
        used.update(id(h) for h in hits)
        out.append(merge_reports(lead, [g for g in group if g is not lead]))
    out.extend(f for f in extra if id(f) not in used)
    return out


def _calls_by_line(tree: ast.Module) -> dict[int, list[ast.Call]]:
    # only one-line calls: rewriting them keeps the layout
    out: dict[int, list[ast.Call]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.end_lineno == node.lineno:
            out.setdefault(node.lineno, []).append(node)
    return out


def _fix_call(text: str, calls: dict[int, list[ast.Call]], finding: Finding) -> tuple[str, str] | None:
    """The file text with the flagged call rewritten, and a description."""
    assert finding.range is not None
    lines = text.split("\n")
    line_no = finding.range.start_line
    for node in calls.get(line_no, []):
        line = lines[line_no - 1]
        start = byte_col_to_char(line, node.col_offset)
        if start + 1 != finding.range.start_col:
            continue
        end = byte_col_to_char(line, node.end_col_offset or 0)
        mod, name = call_name(node)
        segment = line[start:end]
        replacement: str | None = None
        description = ""
        if (
            finding.rule_id in ("B506", "yaml-unsafe-load")
            and mod
            and name in ("load", "unsafe_load")
        ):
            stream = _yaml_stream(line, node)
            if stream is not None:
                replacement = f"{mod}.safe_load({stream})"
                description = f"Use {mod}.safe_load, which only builds plain data"
        elif finding.rule_id == "B324":
            replacement = _weak_hash_fix(line, node, mod, name)
            description = (
                "Mark the hash as not used for security (usedforsecurity=False); "
                "if it protects anything, switch to hashlib.sha256 instead"
            )
        if replacement is None or replacement == segment:
            continue  # e.g. the outer call of ``hashlib.md5(x).hexdigest()``
        new_line = line[:start] + replacement + line[end:]
        new_text = "\n".join(lines[: line_no - 1] + [new_line] + lines[line_no:])
        try:
            # One call expression replaced by another: the file stays valid
            # when the replacement parses as an expression (a re-parse of the
            # whole file per fix cost seconds on a large tree).
            parse_python(replacement, mode="eval")
        except SyntaxError:
            continue
        return new_text, description
    return None


def _seg(line: str, node: ast.AST) -> str:
    start = byte_col_to_char(line, node.col_offset)  # type: ignore[attr-defined]
    end = byte_col_to_char(line, node.end_col_offset)  # type: ignore[attr-defined]
    return line[start:end]


def _yaml_stream(line: str, node: ast.Call) -> str | None:
    """The stream argument of yaml.load(stream[, Loader=...]) or None."""
    if len(node.args) > 2 or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    stream = node.args[0] if node.args else None
    for kw in node.keywords:
        if kw.arg == "stream" and stream is None:
            stream = kw.value
        elif kw.arg != "Loader":
            return None
    if stream is None:
        return None
    return _seg(line, stream)


def _weak_hash_fix(line: str, node: ast.Call, mod: str | None, name: str | None) -> str | None:
    if any(kw.arg == "usedforsecurity" or kw.arg is None for kw in node.keywords):
        return None
    if any(isinstance(a, ast.Starred) for a in node.args):
        return None
    is_new = name == "new" and node.args and isinstance(node.args[0], ast.Constant)
    if not (name in _WEAK_HASHES or is_new):
        return None
    func = _seg(line, node.func)
    parts = [_seg(line, a) for a in node.args]
    parts += [f"{kw.arg}={_seg(line, kw.value)}" for kw in node.keywords]
    parts.append("usedforsecurity=False")
    return f"{func}({', '.join(parts)})"


def _unscanned_reason(unscanned: list[str], shown: int = 5) -> str:
    more = f" and {len(unscanned) - shown} more" if len(unscanned) > shown else ""
    return f"bandit skipped {len(unscanned)} file(s): {'; '.join(unscanned[:shown])}{more}"


def _stop_at(ctx: RoleContext) -> float | None:
    """When the role's tools stop (event-loop time): its deadline less the
    time to report what they found (a tenth of the time left, at least 2 s)."""
    remaining = ctx.remaining()
    if remaining is None:
        return None
    return asyncio.get_running_loop().time() + remaining - max(2.0, 0.1 * remaining)
