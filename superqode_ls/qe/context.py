"""What the code around a finding says about it: context that proves a rule
wrong, or the finding not worth acting on, marks it as noise (``noise``
names why, the severity goes down); a real injection sink or secret stays
worth acting on whatever the tool's confidence.

- jinja2 ``Environment`` (bandit B701) with ``autoescape`` set to True or
  ``select_autoescape`` next to it (``options.setdefault("autoescape",
  True)`` on the line above): wrong, shown as info noise;
- an undefined name (F821) used only in an annotation that is never
  evaluated (``from __future__ import annotations``, a string annotation, a
  local variable's annotation): info noise;
- ``eval``/``exec`` (B307, B102) of code the module writes itself (a
  literal, a code template, a ``compile(...)`` result: ``qe/codegen.py``):
  code generation, low noise; code from a parameter, input, argv, the
  environment, request data or a file stays;
- an all-interfaces address (B104) that is only compared against
  (``if host == "0.0.0.0":``), never bound: info noise;
- a weak hash (B324) whose output is a cache key, an ETag or a checksum
  (the line or the name of the function it is in says so);
- bandit's advisories (``assert``, try/except/pass, subprocess without a
  shell, pseudo-random numbers not used for a secret, "consider the
  implications of importing X"): noise;
- a finding below ``qe.confidence_threshold``: noise, except the sinks
  (``SINK_RULES``), which stay;
- a static finding in test code, fixtures, docs or examples (the path
  classes): shown one level lower and noise, except a provider's token
  (a real key leaks wherever it is committed).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from ..models import Finding, Severity
from .codegen import Scopes, generated_code

# Injection sinks, unsafe deserialisation, secrets and the web flaws: worth
# acting on whatever the tool's confidence in its own report.
SINK_RULES = frozenset({
    "B608", "SQL-INJECTION", "B506", "YAML-UNSAFE-LOAD", "B301", "B302", "B307", "B102",
    "TEMPLATE-AUTOESCAPE-OFF", "B701", "B201", "DEBUG-MODE", "WEAK-PASSWORD-HASH",
    "HARDCODED-DB-PASSWORD", "JWT-NO-VERIFY", "TLS-NO-HOSTNAME-CHECK", "INSECURE-COOKIE",
    "B105", "B106", "B107", "B602", "B604", "B605", "B501",
})
# Shell rules are sinks only where bandit saw non-constant input (it rates
# those high; a constant command line is low).
_SHELL = frozenset({"B602", "B604", "B605"})

# bandit's advisories: "check this", not a flaw found. Noise unless the line
# says what would make it one (B311: randomness for a secret).
ADVISORY_RULES = frozenset({"B101", "B110", "B112", "B311", "B603", "B607",
                            *(f"B4{n:02d}" for n in range(1, 16))})
# A weak hash whose output is a cache key, an ETag or a checksum protects nothing.
_NOT_PROTECTING = re.compile(r"(?i)(etag|cache|checksum|fingerprint|digest_key|file_?hash)")
_CACHE_KEY = re.compile(r"(?i)cache_?key")  # a key into a cache, not a secret key
_SECRET_USE = re.compile(r"(?i)(token|passw|secret|key|nonce|salt|otp|session|csrf)")
_AUTOESCAPE_ON = re.compile(
    r"autoescape['\"]?\s*[,:=]\s*(?:True\b|(?:jinja2\.)?select_autoescape\b)")


def is_sink(f: Finding, canonical: Callable[[str], str]) -> bool:
    rule = canonical(f.rule_id)
    if f.rule_id.lower().startswith("secret-"):
        return f.rule_id != "secret-generic" or f.confidence >= 0.7
    if rule not in SINK_RULES:
        return False
    if rule in _SHELL or rule in ("B105", "B106", "B107"):
        return f.severity.at_least(Severity.high)
    if rule == "B608" and f.rule_id.lower() != "sql-injection":
        # bandit's B608 sees SQL-looking text being formatted, executed or
        # not (an SQL dump written to a file); the sink is such text passed
        # to execute(), which sql-injection establishes.
        return f.severity.at_least(Severity.high)
    return True


def mark_noise(f: Finding, why: str, severity: Severity | None = None) -> Finding:
    update: dict = {"noise": f"{f.noise}; {why}" if f.noise else why}
    if severity is not None and severity.rank < f.severity.rank:
        update["severity"] = severity
        reason = f"{severity.value}: {why}"
        update["severity_reason"] = f"{f.severity_reason}; {reason}" if f.severity_reason else reason
    return f.model_copy(update=update)


class _Modules:
    """Per file: the parsed module for the code-generation question."""

    def __init__(self, lines: Callable[[str], list[str] | None]):
        self._lines = lines
        self._scopes: dict[str, Scopes | None] = {}

    def scopes(self, rel: str) -> Scopes | None:
        if rel not in self._scopes:
            lines = self._lines(rel)
            try:
                self._scopes[rel] = Scopes(ast.parse("\n".join(lines))) if lines else None
            except (SyntaxError, ValueError):
                self._scopes[rel] = None
        return self._scopes[rel]


class _Annotations:
    """Per file: the spans of annotations Python never evaluates."""

    def __init__(self, lines: Callable[[str], list[str] | None]):
        self._lines = lines
        self._spans: dict[str, list[tuple[int, int, int, int]] | None] = {}

    def spans(self, rel: str) -> list[tuple[int, int, int, int]] | None:
        if rel not in self._spans:
            self._spans[rel] = self._compute(rel)
        return self._spans[rel]

    def _compute(self, rel: str) -> list[tuple[int, int, int, int]] | None:
        lines = self._lines(rel)
        if lines is None:
            return None
        try:
            tree = ast.parse("\n".join(lines))
        except (SyntaxError, ValueError):
            return None
        lazy = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                   and any(a.name == "annotations" for a in n.names) for n in tree.body)
        out = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # A local variable's annotation is never evaluated (PEP 526).
                out.extend(_span(n.annotation) for n in _local_annotations(node))
            annotations: list[ast.AST | None] = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                annotations = [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs,
                                                      a.vararg, a.kwarg) if x is not None]
                annotations.append(node.returns)
            elif isinstance(node, ast.AnnAssign):
                annotations = [node.annotation]
            for ann in annotations:
                if ann is None:
                    continue
                if lazy:
                    out.append(_span(ann))
                else:  # evaluated at definition time, except the strings in it
                    out.extend(_span(s) for s in ast.walk(ann)
                               if isinstance(s, ast.Constant) and isinstance(s.value, str))
        return out


def _local_annotations(func: ast.AST) -> list[ast.AnnAssign]:
    """``x: T = ...`` statements of a function's own body (not of a class
    or function inside it)."""
    out, todo = [], list(getattr(func, "body", []))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _span(node: ast.AST) -> tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno,  # type: ignore[attr-defined]
            node.end_col_offset or 0)  # type: ignore[attr-defined]


def _inside(span: tuple[int, int, int, int], line: int, col: int) -> bool:
    sl, sc, el, ec = span
    return (sl, sc) <= (line, col) <= (el, ec)


_AUTOESCAPE_OFF = re.compile(r"autoescape\s*=\s*False\b")
_DEF = re.compile(r"^\s*(async\s+def|def|class)\s")


def _autoescape_on_near(f: Finding, read_line: Callable[[str, int], str | None]) -> bool:
    """``autoescape`` turned on in the call or on the six lines above it
    (not past the start of its function), and not turned off in the call."""
    assert f.file and f.range
    end = max(f.range.end_line or f.range.start_line, f.range.start_line)
    own = [read_line(f.file, n) or "" for n in range(f.range.start_line, end + 1)]
    if any(_AUTOESCAPE_OFF.search(text) for text in own):
        return False
    above = []
    for n in range(f.range.start_line - 1, max(0, f.range.start_line - 7), -1):
        text = read_line(f.file, n) or ""
        if _DEF.match(text):
            break
        above.append(text)
    return any(_AUTOESCAPE_ON.search(text) for text in [*own, *above])


_ALL_INTERFACES = frozenset({"0.0.0.0", "::", "[::]"})


def _only_compared(scopes: Scopes, line: int) -> bool:
    """Every all-interfaces address on ``line`` is an operand of a
    comparison (``host == "0.0.0.0"``, ``host in {"0.0.0.0", "::"}``)."""
    hits = [n for n in ast.walk(scopes.tree) if isinstance(n, ast.Constant)
            and n.value in _ALL_INTERFACES and n.lineno == line]
    if not hits:
        return False
    for node in hits:
        up = scopes.parent.get(node)
        while isinstance(up, (ast.Set, ast.Tuple, ast.List)):
            up = scopes.parent.get(up)
        if not isinstance(up, ast.Compare):
            return False
    return True


def apply_context(
    findings: Iterable[Finding], *, read_line: Callable[[str, int], str | None],
    lines: Callable[[str], list[str] | None] | None = None,
    canonical: Callable[[str], str] = str.upper,
) -> list[Finding]:
    """The findings with what their context proves (see the module doc);
    ``canonical`` names a rule the same whichever tool reports it (ruff's
    S110 is bandit's B110)."""
    annotations = _Annotations(lines) if lines is not None else None
    modules = _Modules(lines) if lines is not None else None
    out = []
    for f in findings:
        rule = canonical(f.rule_id)
        if f.file and f.range and f.rule_id.upper() in ("B701", "S701"):
            if _autoescape_on_near(f, read_line):
                f = mark_noise(f, "autoescape is turned on next to the Environment",
                               Severity.info)
        elif (f.file and f.range and annotations is not None
              and rule in ("F821", "NAME-DEFINED") and f.file.endswith((".py", ".pyi"))):
            spans = annotations.spans(f.file)
            col = f.range.start_col - 1  # ruff counts code points; close enough in code
            if spans and any(_inside(s, f.range.start_line, col) for s in spans):
                f = mark_noise(f, "the name is used only in an annotation Python does not "
                                  "evaluate", Severity.info)
        elif (rule in ("B307", "B102") and f.file and f.range and modules is not None
              and f.noise is None and f.file.endswith(".py")):
            scopes = modules.scopes(f.file)
            if scopes is not None and generated_code(scopes, f.range.start_line):
                f = mark_noise(f, "code generation: it runs code the module writes itself",
                               Severity.low)
        elif (rule == "B104" and f.file and f.range and modules is not None
              and f.noise is None and f.file.endswith(".py")):
            scopes = modules.scopes(f.file)
            if scopes is not None and _only_compared(scopes, f.range.start_line):
                f = mark_noise(f, "the address is compared against, not bound to",
                               Severity.info)
        elif rule in ADVISORY_RULES and f.noise is None:
            text = read_line(f.file, f.range.start_line) if f.file and f.range else None
            if not (rule == "B311" and text and _SECRET_USE.search(text)):
                f = mark_noise(f, "an advisory (bandit asks for a check, found no flaw)")
        elif f.rule_id.upper() in ("B324", "S324") and f.file and f.range and f.noise is None:
            text = read_line(f.file, f.range.start_line) or ""
            if modules is not None and f.file.endswith(".py"):
                # the function it is in says what the hash is for: get_cache_key
                scopes = modules.scopes(f.file)
                text += " " + (scopes.function_name(f.range.start_line) if scopes else "")
            if _NOT_PROTECTING.search(text) and not _SECRET_USE.search(_CACHE_KEY.sub("", text)):
                f = mark_noise(f, "a weak hash for a cache key or ETag, which protects nothing")
        out.append(f)
    return out
