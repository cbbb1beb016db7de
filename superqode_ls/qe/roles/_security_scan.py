"""The scans that run beside bandit: the secrets scan over text files and
the pattern and web-flaw checks over Python files, as findings; and the
merge of bandit's hard-coded passwords with the secrets scan's hits."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from ...models import Evidence, Finding, Range
from ...workspace.pyast import parse as parse_python
from ..noise import merge_reports
from . import _secrets, _web
from ._bandit_results import PASSWORD_RULES
from ._common import SourceCache, byte_col_to_char, fingerprint, is_test_path
from ._patterns import may_match, patterns
from ._web_cache import Hit, WebCache, digest

_CWE = {
    "sql-injection": ("CWE-89",), "template-autoescape-off": ("CWE-79",),
    "debug-mode": ("CWE-489",), "insecure-cookie": ("CWE-1004",),
    "hardcoded-db-password": ("CWE-798",), "weak-password-hash": ("CWE-916",),
} | _web.CWE
# The files the secrets scan reads (besides those with no suffix and .env*).
TEXT_SUFFIXES = (
    ".py", ".pyi", ".cfg", ".ini", ".toml", ".yaml", ".yml", ".json", ".env", ".txt",
    ".sh", ".js", ".ts", ".properties", ".conf", ".xml", ".pem", ".key", ".md", ".rst",
)  # fmt: skip


def scan_files(
    role: str,
    root: Path,
    src: SourceCache,
    py_files: list[str],
    text_files: list[str],
    stop: threading.Event | None = None,
    missed: list[str] | None = None,
    progress: Progress | None = None,
    cache: WebCache | None = None,
) -> list[Finding]:
    """The secrets scan and the pattern scans; when ``stop`` is set it
    ends after the file at hand and lists the files it did not reach
    in ``missed``. ``progress`` has what it found so far, file by file,
    for a caller that cannot wait for the file at hand. ``cache``: the
    pattern scans' hits kept from earlier runs (``_web_cache``), taken
    where still valid and updated with what was checked anew."""
    # bandit's reports of the same lines are merged afterwards (merge_secrets).
    out: list[Finding] = progress.found if progress is not None else []
    for k, rel in enumerate(text_files):
        if progress is not None:
            progress.state = (k, 0, len(out))
        if stop is not None and stop.is_set():
            if missed is not None:
                missed.extend(text_files[k:])
                seen = set(text_files)
                missed.extend(f for f in py_files if f not in seen)
            return out
        for hit in _secrets.scan_file(root / rel, in_test=is_test_path(rel)):
            out.append(
                Finding(
                    role=role,
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
    if cache is not None:
        digests = _Digests(src)
        cache.begin({rel: digests(rel) for rel in py_files}, digests)
    try:
        _scan_python(role, src, py_files, len(text_files), out, stop, missed, progress, cache)
    finally:
        if cache is not None:
            cache.save()
    return out


def _scan_python(role: str, src: SourceCache, py_files: list[str], text_done: int,
                 out: list[Finding], stop: threading.Event | None, missed: list[str] | None,
                 progress: Progress | None, cache: WebCache | None) -> None:
    for k, rel in enumerate(py_files):
        if progress is not None:
            progress.state = (text_done, k, len(out))
        if stop is not None and stop.is_set():
            if missed is not None:
                missed.extend(py_files[k:])
            return
        text = src.text(rel)
        if text is None:
            continue
        hits = cache.get(rel) if cache is not None else None
        if hits is None:
            hits = module_hits(rel, text, src, cache)
        for line, col, end_line, end_byte, rule, title, message, severity in hits:
            line_text = src.line(rel, line)
            if line_text and _secrets._ALLOW.search(line_text):
                continue
            start = byte_col_to_char(line_text, col) + 1
            end_line = end_line or line
            end = (
                byte_col_to_char(src.line(rel, end_line), end_byte) + 1
                if end_byte is not None
                else None
            )
            out.append(
                Finding(
                    role=role,
                    tool="superqode-patterns",
                    rule_id=rule,
                    title=title,
                    message=message,
                    severity=severity,
                    confidence=0.8,
                    category="security",
                    file=rel,
                    range=Range(
                        start_line=line, start_col=start, end_line=end_line, end_col=end
                    ),
                    tags=["patterns", *_CWE.get(rule, ())],
                    snippet=line_text,
                )
            )


def module_hits(rel: str, text: str, src: SourceCache, cache: WebCache | None = None) -> list[Hit]:
    """The pattern and web checks' hits in one module, in the order they
    come; kept in ``cache`` with the files the checks read besides it."""
    # each scan only where its words are (a tree walk per scan and file
    # was most of this thread's time on a 700-file project)
    own, web = may_match(text), _web.may_match(text)
    found: list[Hit] = []
    reads: dict[str, str | None] = {}
    if own or web:
        try:
            tree = parse_python(text)
        except (SyntaxError, ValueError):
            tree = None
        if tree is not None:
            def read(path: str) -> str | None:
                got = src.text(path)
                reads[path] = digest(got)
                return got

            hits = [*(patterns(tree) if own else ()),
                    *(_web.web_patterns(tree, rel, text, read) if web else ())]
            found = [(node.lineno, node.col_offset, getattr(node, "end_lineno", None),
                      getattr(node, "end_col_offset", None), rule, title, message, severity)
                     for node, rule, title, message, severity in hits]
    if cache is not None:
        cache.put(rel, found, reads)
    return found


class _Digests:
    """Each file's digest once a run (of the text the scan reads)."""

    def __init__(self, src: SourceCache):
        self.src = src
        self._seen: dict[str, str | None] = {}

    def __call__(self, rel: str) -> str | None:
        if rel not in self._seen:
            self._seen[rel] = digest(self.src.text(rel))
        return self._seen[rel]
@dataclass
class Progress:
    """How far a scan got: the files finished (the text files' secrets scan
    first, then the Python files' patterns) and the findings they gave
    (``found[:kept]``); written by the scan's thread alone."""

    found: list[Finding] = field(default_factory=list)
    # (text files done, Python files done, findings of those): one
    # assignment, so a reader in another thread never sees half of it
    state: tuple[int, int, int] = (0, 0, 0)

    def so_far(self, py_files: list[str], text_files: list[str]) -> tuple[list[Finding], list[str]]:
        """What the finished files found and the files not finished, read
        while the scan may still run."""
        text_done, py_done, kept = self.state
        if text_done < len(text_files):
            seen = set(text_files)
            left = text_files[text_done:] + [f for f in py_files if f not in seen]
        else:
            left = py_files[py_done:]
        return self.found[:kept], left


def merge_secrets(bandit: list[Finding], extra: list[Finding]) -> list[Finding]:
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
        if f.rule_id not in PASSWORD_RULES or not hits:
            out.append(f)
            continue
        group = [f, *hits]
        lead = next((h for h in hits if h.rule_id != "secret-generic"), f)
        used.update(id(h) for h in hits)
        out.append(merge_reports(lead, [g for g in group if g is not lead]))
    out.extend(f for f in extra if id(f) not in used)
    return out
