"""Noise filter: what reaches the report out of everything the roles found,
and in which order.

Only inline suppressions and the baseline hide a finding. Everything else
that is true but not worth acting on stays in the report marked as noise
(``Finding.noise`` says why): listed after the rest, never failing a run,
one click away (``--show-noise``, the JSON/SARIF/JSONL outputs). The steps,
in this order:

1. inline suppressions on the flagged line(s): ``# noqa`` / ``# noqa: CODE,...``,
   ``# nosec`` / ``# nosec CODE ...`` (security findings), ``# superqode: ignore`` /
   ``# superqode: ignore[CODE,...]``; the secret scanners' ``# pragma: allowlist
   secret`` / ``# gitleaks:allow`` (password rules and the secrets scan only);
2. context (``qe/context.py``, ``qe/conventions.py``): what the code around
   a finding proves (autoescape on next to a jinja2 Environment, an
   undefined name only in an annotation, a graphene resolver, a package the
   test environment lacks) marks it as noise; one file at a time, so the
   session's budget can end it between files (``filter_findings``' ``stop``:
   the rest stay unchecked, tagged ``unfiltered``);
3. the confidence threshold (``qe.confidence_threshold``, default 0.7): a
   finding below it is noise, unless it is an injection sink, unsafe
   deserialisation or a secret (``context.SINK_RULES``), which stays;
4. de-duplication: one problem reported by two tools (bandit ``B105`` and ruff
   ``S105``, or bandit ``B105`` and the secrets scan, on the same line) or twice
   by one tool is kept once: the strongest report is kept with the HIGHEST
   severity of the group and the other rule ids in ``related_rules``;
5. path classes (``qe.path_classes``): a static tool's finding (security,
   secrets, lint, syntax, types) in tests (a behave harness under
   ``features/`` too), fixtures, docs or examples is shown
   one level lower, the reason in ``severity_reason``, and is noise (except a
   provider's token: a real key leaks wherever it is committed; a private key
   there is key material made for the tests or the example, noise); then a
   lint rule about how the code is written (style, complexity, modernisation:
   ``noise_style``), not what it does, is noise even where the project selects it;
   in a library's shipped code, a security pattern no outside input is traced
   to, and a literal every install carries, are noise (``noise_threat``); then
   the default view (``qe.default_view``, ``default_view.py``): a static
   finding still shown stays shown only with strong evidence (code that fails
   when it runs, a traced flow, SuperQode's own checks, a confirmed secret, a
   setting dangerous with no input, a sink pattern in a function that reads the
   request); any other is noise whose reason starts ``advisory:``;
6. the baseline (``qe/baseline.py``): findings already accepted are dropped;
7. one line, one diagnostic: the static findings on one line are merged
   into the most important of them, which names the others' rules in
   ``related_rules`` (each finding keeps its own id up to the baseline step);
8. most important first (``by_importance``): worth acting on before noise,
   then by severity, the evidence behind it (a traced flow into a sink, a
   secret, a failing test or a likely bug before a pattern advisory, lint
   opinions last), file and line; every output lists them in this order.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

from ..config import DEFAULT_PATH_CLASSES
from ..models import Finding, Severity
from . import ast_index
from .context import is_sink, mark_noise
from .default_view import default_view
from .gc_pause import PAUSE
from .noise_carried import carried_noise
from .noise_compat import compat_noise
from .noise_compose import compose_noise
from .noise_context import UNFILTERED, EarlyContext, in_context, until_stop

# canonical_rule, deduplicate and merge_reports are the filter's public names too
from .noise_dedupe import PASSWORD_RULES, canonical_rule, deduplicate, merge_reports
from .noise_demofolder import demo_folder_noise
from .noise_digest import digest_noise
from .noise_evidence import evidence_noise
from .noise_execglobals import exec_globals_noise
from .noise_firstrun import first_run_noise
from .noise_guard import guarded
from .noise_injected import injected_noise
from .noise_library import library_noise, vendored
from .noise_migrations import migration_noise
from .noise_names import RUFF_BANDIT_NAMES
from .noise_operator import operator_noise

# path_class and classify_paths are the filter's step 5, and callers import
# them from here (the filter's public names).
from .noise_paths import (  # noqa: F401
    PATH_CLASS_CATEGORIES,
    classify_paths,
    is_secret_scan,
    join_reasons,
    path_class,
)
from .noise_process import process_noise
from .noise_project import project_noise
from .noise_redefinition import redefinition_noise
from .noise_reexports import package_reexports
from .noise_reraise import reraise_noise
from .noise_samples import sample_noise
from .noise_selfimport import self_import_noise
from .noise_shellown import own_shell_noise
from .noise_shipped import survey, unshipped
from .noise_style import style_noise
from .noise_template import template_noise
from .noise_threat import library_threat
from .noise_unused import unused_noise
from .noise_vectors import vector_noise
from .roles._common import read_bounded
from .ruff_rules import LIKELY_BUG, ruff_severity

LineReader = Callable[[str, int], "str | None"]

_NOQA = re.compile(r"#\s*noqa(?P<colon>:\s*(?P<codes>[^#]*))?", re.IGNORECASE)
_NOSEC = re.compile(r"#\s*nosec\b:?(?P<codes>[^#]*)", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*superqode:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
# ruff's own line comment ("ruff: ignore" with the codes in brackets, or the
# rules' names under ruff's preview: pipx's suspicious-url-open-usage);
# brackets required, as ruff reads it.
_RUFF_IGNORE = re.compile(r"#\s*ruff:\s*ignore\[(?P<codes>[^\]]*)\]")
# The secret scanners' opt-outs (detect-secrets, gitleaks): the secrets scan
# skips such a line, so bandit's password rules on it are suppressed too.
_ALLOW_SECRET = re.compile(r"(pragma:\s*allowlist[ -]secret|gitleaks:allow)", re.IGNORECASE)
_CODE = re.compile(r"^[A-Za-z]+\d+$")


def _codes(text: str | None, *, code_like: bool = True) -> set[str]:
    """Rule codes named in a comment; free text after them (a reason) is ignored."""
    if not text:
        return set()
    out = set()
    for c in re.split(r"[\s,]+", text):
        if c and (not code_like or _CODE.match(c)):
            out.add(canonical_rule(c))
    return out


def suppressed_by(line: str, finding: Finding) -> str | None:
    """Which inline comment on ``line`` suppresses ``finding``, or None."""
    rule = canonical_rule(finding.rule_id)
    names = {rule, finding.rule_id.upper()}
    m = _IGNORE.search(line)
    if m:
        codes = _codes(m.group("codes"), code_like=False)
        if not codes or names & codes:
            return "superqode: ignore"
    m = _NOQA.search(line)
    if m:
        codes = _codes(m.group("codes"))
        if not codes or names & codes:
            return "noqa"
    m = _RUFF_IGNORE.search(line)
    if m and names & {canonical_rule(RUFF_BANDIT_NAMES.get(c, c))
                      for c in re.split(r"[\s,]+", m.group("codes")) if c}:
        return "ruff: ignore"
    if _ALLOW_SECRET.search(line) and (rule in PASSWORD_RULES or is_secret_scan(rule)):
        return "allowlist secret"
    m = _NOSEC.search(line)
    if m and finding.category == "security":
        codes = _codes(m.group("codes"))
        if not codes or names & codes:
            return "nosec"
    return None


def _lines_of(f: Finding) -> range:
    if f.range is None:
        return range(0)
    end = f.range.end_line or f.range.start_line
    # An end column of 1 means "up to the start of that line": not flagged.
    if end > f.range.start_line and f.range.end_col == 1:
        end -= 1
    return range(f.range.start_line, min(end, f.range.start_line + 50) + 1)


def _is_suppressed(f: Finding, read_line: LineReader) -> bool:
    if not f.file:
        return False
    lines = getattr(read_line, "lines", None)
    if lines is not None:
        # the file's lines at once (FileLines): one call per finding, not per line
        text = lines(f.file)
        span = _lines_of(f)
        return text is not None and any(
            "#" in t and suppressed_by(t, f)
            for t in text[max(span.start, 1) - 1:max(span.stop - 1, 0)])
    for n in _lines_of(f):
        text = read_line(f.file, n)
        if text is not None and "#" in text and suppressed_by(text, f):
            return True
    return False


# The categories whose findings on one line are one diagnostic: what static
# tools say about a line of code (a failing test is about the product).
_LINE_CATEGORIES = PATH_CLASS_CATEGORIES


# Within one severity, the stronger evidence first: a lint rule that means
# the code fails at run time (``__str__`` returning a tuple, a log format
# with an argument too few: PLE, E9, F82x, high by itself) or a flow into a
# sink that a data-flow check traced (tag ``data-flow``); then SuperQode's
# own pattern checks and a secret; a failing test, a type or syntax error, a
# lint rule that is most often a bug; then a pattern advisory (bandit's: the
# call is there, nothing says what reaches it), a mutant; then a lint rule's
# opinion. calibre-web's two real bugs came 11th and 12th, behind ten
# pattern findings that the code around them proved harmless.
_EVIDENCE = {"secrets": 1, "tests": 2, "syntax": 2, "types": 2, "mutation": 3}
_FLOW_TAGS = frozenset({"data-flow", "dataflow", "taint"})
# Medium by itself, yet wrong wherever it fires: a closure that reads the
# loop's last value. (F811 stays a likely bug: ranked first it would lead
# the line it shares with F401 and split the line's one diagnostic in two.)
_DEFINITE_BUGS = frozenset({"B023"})


def evidence(f: Finding) -> int:
    """How strong the evidence behind ``f`` is, 0 strongest (see _EVIDENCE)."""
    if f.category == "security":
        if any(t in _FLOW_TAGS for t in f.tags):
            return 0
        own = f.tool.startswith("superqode-") or any(
            t.startswith("also:superqode-") for t in f.tags)
        return 1 if own else 3
    if f.category == "lint":
        rule = canonical_rule(f.rule_id)
        if ruff_severity(rule) is Severity.high or rule in _DEFINITE_BUGS:
            return 0  # the code fails when it runs: a bug, not a pattern
        return 2 if (LIKELY_BUG.match(rule) or f.rule_id.startswith("F")) else 4
    return _EVIDENCE.get(f.category, 3)


def importance(f: Finding) -> tuple:
    """Sort key, most important first: worth acting on before noise, then
    severity, the evidence behind it (``evidence``), file, line and rule."""
    line = f.range.start_line if f.range else 0
    return (f.noise is not None, -f.severity.rank, evidence(f), f.file or "", line, f.rule_id,
            f.id)


def by_importance(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=importance)


def merge_lines(findings: list[Finding]) -> tuple[list[Finding], int]:
    """One diagnostic per line: static findings on one line merged into the
    most important one (``related_rules`` names the others). A finding with a
    fix of its own, other than the lead's, stays apart: no fix is lost, and
    none is shown on a problem it does not fix (UP031's rewrite of a ``%``
    string on an SQL injection's line)."""
    groups: dict[tuple, list[Finding]] = {}
    out: list[Finding] = []
    for f in findings:
        if f.file and f.range and f.category in _LINE_CATEGORIES:
            groups.setdefault((f.file, f.range.start_line), []).append(f)
        else:
            out.append(f)
    merged = 0
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        group = by_importance(group)
        lead, rest = group[0], []
        for other in group[1:]:
            if other.fix_patch_id is None or other.fix_patch_id == lead.fix_patch_id:
                rest.append(other)
            else:
                out.append(other)
        if rest:
            merged += len(rest)
            lead = merge_reports(lead, rest)
        out.append(lead)
    return out, merged


@dataclass
class NoiseResult:
    findings: list[Finding]
    suppressed: int = 0
    below_threshold: int = 0  # marked as noise (kept), not hidden
    duplicates: int = 0
    baseline_filtered: int = 0
    merged_lines: int = 0
    # Everything that survived suppressions, threshold and de-duplication:
    # what ``--update-baseline`` records.
    before_baseline: list[Finding] = field(default_factory=list)
    # Findings the context step did not reach before ``stop`` (tagged UNFILTERED).
    unfiltered: int = 0
    # Rule steps that raised on some finding: those findings went on without them.
    failed_rules: tuple[str, ...] = ()

    def notes(self) -> list[str]:
        """What the run says of the filter's own shortfalls, one line each."""
        out = []
        if self.unfiltered:
            out.append(f"noise filter stopped at the session budget: {self.unfiltered} finding(s) "
                       f"kept without their context checked (tagged {UNFILTERED!r})")
        if self.failed_rules:  # a bug: the log has the finding and the error
            out.append("noise rules that failed on some findings (kept as found, see "
                       f"superqe.log): {', '.join(self.failed_rules)}")
        return out


def unfiltered(findings: Iterable[Finding]) -> list[Finding]:
    """Findings the filter never judged (it failed), most important first,
    each tagged ``UNFILTERED``: kept as the roles found them, none lost."""
    return by_importance(f.model_copy(update={"tags": [*f.tags, UNFILTERED]}) for f in findings)


# The steps after the context step (tagging what it did not reach, the
# threshold, de-duplication, path classes, merging lines, the order) cost
# 1.2x to 4x the suppression pass on sqlalchemy's 18,500 findings (1.9 to
# 4.5 s against 1.2 to 1.6 s on a 2-core machine at load 15-17, the spread
# mostly the garbage collector's).
_REST_PER_PASS = 4.0


def early_context(root: str | PathLike[str], stop_at: float | None = None) -> EarlyContext:
    """The context step done early (noise_context.EarlyContext) over the files
    under ``root``, with this filter's suppressions and rule names."""
    return EarlyContext(FileLines(root), suppressed=_is_suppressed, canonical=canonical_rule,
                        stop_at=stop_at)


@PAUSE  # the context step's parses set off full collections over every finding
def filter_findings(
    findings: Iterable[Finding],
    *,
    read_line: LineReader,
    threshold: float = 0.7,
    baseline: Counter[str] | None = None,
    path_classes: dict[str, list[str]] | None = None,
    stop_at: float | None = None,
    early: EarlyContext | None = None,
    view: str = "all",
) -> NoiseResult:
    """``path_classes`` None means the defaults (``DEFAULT_PATH_CLASSES``);
    ``{}`` turns the step off. ``stop_at`` (``time.monotonic()``): the filter
    ends by then; its context step (2) stops between files early enough to
    leave the other steps, which are linear and always run, their time (as
    long as the first linear pass took, times ``_REST_PER_PASS``); the
    findings of the files it did not reach go on unchecked, tagged
    ``UNFILTERED`` and counted in ``NoiseResult.unfiltered``. ``early``: the
    context step's results for findings checked while the roles ran.
    ``view``: ``"evidence"`` makes every static finding without strong
    evidence an advisory (``default_view``), ``"all"`` leaves the step out;
    a session passes its ``qe.default_view`` (default ``"evidence"``), so a
    caller that judges one step alone sees that step's verdicts only."""
    kept: list[Finding] = []
    suppressed = below = 0
    failed: list[str] = []  # the rule steps that raised (noise_guard)
    began = time.monotonic()
    for f in findings:
        if _is_suppressed(f, read_line):
            suppressed += 1
        else:
            kept.append(f)
    stop = None
    if stop_at is not None:
        context_stop = stop_at - _REST_PER_PASS * (time.monotonic() - began)

        def stop() -> bool:
            return time.monotonic() >= context_stop
    kept, unfiltered = in_context(kept, read_line, stop, early, canonical=canonical_rule)
    lines = getattr(read_line, "lines", None)
    if lines is not None:
        # The library and project rules parse and walk the flagged modules
        # too (2.8 and 1.9 s of CPU on sqlalchemy's second run, after the
        # context step's stop): bounded by the same stop.
        root = getattr(read_line, "root", None)
        try:
            kept, late = until_stop(stop, kept, lambda now: guarded(
                "library", lambda some: library_noise(some, lines, canonical_rule), now, failed))
            unfiltered += late
            kept, late = until_stop(stop, kept, lambda now: guarded(
                "project", lambda some: project_noise(some, lines, root, canonical_rule), now,
                failed))
            unfiltered += late
            for name, step in (
                    # (project-wide: a walk only when three sibling modules lack one name)
                    ("injected", lambda some: injected_noise(some, root, canonical_rule)),
                    ("migration", lambda some: migration_noise(some, lines, canonical_rule)),
                    ("redefinition", lambda some: redefinition_noise(some, lines, canonical_rule)),
                    ("carried", lambda some: carried_noise(some, lines, canonical_rule)),
                    ("operator", lambda some: operator_noise(some, lines, root, canonical_rule)),
                    ("own shell", lambda some: own_shell_noise(some, lines, canonical_rule)),
                    ("process", lambda some: process_noise(some, lines, root, canonical_rule)),
                    ("vectors", lambda some: vector_noise(some, lines, canonical_rule)),
                    ("first run", lambda some: first_run_noise(some, lines, canonical_rule)),
                    ("compose", lambda some: compose_noise(some, lines)),
                    ("demo folder", lambda some: demo_folder_noise(some, lines, root)),
                    ("self import", lambda some: self_import_noise(some, lines, canonical_rule)),
                    ("evidence", lambda some: evidence_noise(some, lines, canonical_rule)),
                    ("digest", lambda some: digest_noise(some, lines, canonical_rule)),
                    ("unused", lambda some: unused_noise(some, lines, canonical_rule)),
                    ("reraise", lambda some: reraise_noise(some, lines, root, canonical_rule)),
                    ("exec globals", lambda some: exec_globals_noise(some, root, canonical_rule)),
                    ("template", lambda some: template_noise(some, lines, root, canonical_rule)),
                    # Cheap and certain, so past the stop: a large run's stop often ends
                    # the steps above before the project step's re-export rule is
                    # reached; the rules above, where they ran, came first.
                    ("reexports", lambda some: package_reexports(some, lines, canonical_rule)),
                    ("compat", lambda some: compat_noise(some, lines, root, canonical_rule))):
                kept = guarded(name, step, kept, failed)
        finally:
            ast_index.clear()  # the modules' trees are this filter's only
        kept = guarded("samples", lambda some: sample_noise(some, lines), kept, failed)
    for i, f in enumerate(kept):
        if f.confidence < threshold and not is_sink(f, canonical_rule):
            below += 1
            kept[i] = mark_noise(f, f"low confidence ({f.confidence:.2f} < {threshold:g})")
    deduped, dups = deduplicate(kept)
    classes = DEFAULT_PATH_CLASSES if path_classes is None else path_classes
    if classes:
        deduped = classify_paths(deduped, classes, getattr(read_line, "root", None))
        if "vendored" in classes:
            deduped = vendored(deduped, getattr(read_line, "root", None))
        root = getattr(read_line, "root", None)
        # (the build files read only where a finding may be judged by them:
        # the threat model's categories are among the path classes')
        certain, found = (survey(Path(root)) if root is not None and any(
            f.noise is None and f.category in PATH_CLASS_CATEGORIES for f in deduped)
            else (None, []))
        if "tooling" in classes:
            deduped = unshipped(deduped, certain or [])
        deduped = guarded("threat", lambda some: library_threat(
            some, certain or found, getattr(read_line, "lines", None)), deduped, failed)
    deduped = style_noise(deduped)
    deduped = guarded("default view", lambda some: default_view(
        some, canonical_rule, getattr(read_line, "lines", None), view), deduped, failed)
    result = NoiseResult(
        findings=deduped,
        suppressed=suppressed,
        below_threshold=below,
        duplicates=dups,
        before_baseline=list(deduped),
        unfiltered=unfiltered,
        failed_rules=tuple(failed),
    )
    if baseline:
        remaining = Counter(baseline)
        new: list[Finding] = []
        for f in deduped:
            if remaining[f.id] > 0:
                remaining[f.id] -= 1
                result.baseline_filtered += 1
            else:
                new.append(f)
        result.findings = new
    merged, result.merged_lines = merge_lines(result.findings)
    result.findings = by_importance(merged)
    return result


# A flagged file larger than this is not read (the rules that need its text
# keep its findings as they are).
_MAX_FILE_BYTES = 32 * 1024 * 1024


class FileLines:
    """``read_line`` over files under a root, each read once (UTF-8, lenient).

    The root is a sandbox a session could write: a file is read only where
    its folder resolves under the root and the file itself is a regular
    file, not a link (``read_bounded``): a link planted there is never
    followed out of it (to the user's keys), a FIFO never waited on."""

    def __init__(self, root, overlays: dict[str, bytes] | None = None):
        self.root = Path(root)
        self._real_root: str | None = None
        self.overlays = overlays or {}
        self._cache: dict[str, list[str] | None] = {}

    def lines(self, rel: str) -> list[str] | None:
        if rel not in self._cache:
            raw: bytes | None
            if rel in self.overlays:
                raw = self.overlays[rel]
            else:
                raw = self._read(rel)
            self._cache[rel] = None if raw is None else raw.decode("utf-8", "replace").splitlines()
        return self._cache[rel]

    def _read(self, rel: str) -> bytes | None:
        path = self.root / rel
        if self._real_root is None:
            self._real_root = os.path.realpath(self.root)
        folder = os.path.realpath(path.parent)
        if folder != self._real_root and not folder.startswith(self._real_root + os.sep):
            return None
        return read_bounded(path, _MAX_FILE_BYTES)

    def __call__(self, rel: str, line: int) -> str | None:
        lines = self.lines(rel)
        if lines is None or line < 1 or line > len(lines):
            return None
        return lines[line - 1]
