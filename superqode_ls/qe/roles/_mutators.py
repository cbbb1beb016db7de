"""AST-based mutation operators for Python source.

A mutant is one small edit to a file's text: the operator token of a
comparison, a boolean or arithmetic operator, a constant, a return value, or
a whole call statement. Edits are made on the original text (not by
unparsing the tree) so that comments, formatting and every other line stay
exactly as written, and line numbers stay where they were: a finding can point
at the line the user sees.

Why not an existing tool: mutmut and cosmic-ray both drive the test run
themselves (mutmut 3 rewrites the project into a ``mutants/`` folder beside it
and needs its own config; cosmic-ray keeps a session database and workers),
so neither fits a shared, read-only sandbox where SuperQode decides which
tests run for which line and caches per file content.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import io
import tokenize
from dataclasses import dataclass, field

from ...workspace.pyast import parse as parse_python
from ._mutation_ops import mutations

# Bump when operators change: cached results of an older mutator are stale.
MUTATOR_VERSION = "2"

# Kind -> (severity, confidence) of a surviving mutant of that kind. Boundary
# and logic slips are the bugs tests most often miss; a changed constant is
# more often an equivalent mutant (a default nobody relies on).
KINDS = {
    "compare": ("medium", 0.8),
    "boolean": ("medium", 0.8),
    "return": ("medium", 0.75),
    "call": ("low", 0.7),
    "arith": ("low", 0.7),
    "constant": ("low", 0.65),
    "augassign": ("low", 0.7),
    "loop": ("medium", 0.7),
    "argument": ("low", 0.6),
    "assign": ("low", 0.6),
    "string": ("low", 0.55),
}


@dataclass(frozen=True)
class Edit:
    """Replace text from (line, col) to (end_line, end_col); 1-based lines,
    0-based columns in code points, end exclusive."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


@dataclass(frozen=True)
class Mutant:
    file: str
    kind: str
    line: int
    col: int
    original: str  # the source text being replaced, e.g. ">"
    replacement: str  # what it becomes, e.g. ">="
    edit: Edit = field(repr=False)
    # Why the mutant is likely equivalent (no test could tell it from the
    # original), or "": a survivor with a reason is logged, not reported.
    equivalent: str = field(default="", compare=False)

    @property
    def key(self) -> str:
        """Identity within one version of a file (cache key part)."""
        return f"{self.line}:{self.col}:{self.kind}:{self.original}->{self.replacement}"

    @property
    def description(self) -> str:
        if self.kind == "call":
            return f"the call `{_short(self.original)}` is removed"
        if not self.replacement:
            return f"`{_short(self.original)}` is removed"
        if self.kind == "return":
            return f"`return {_short(self.original)}` becomes `return None`"
        return f"`{_short(self.original)}` becomes `{_short(self.replacement)}`"


def _short(text: str, limit: int = 60) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Source:
    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self._bytes = [ln.encode("utf-8") for ln in self.lines]
        self.tokens = [
            t
            for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type in (tokenize.OP, tokenize.NAME)
        ]
        self._starts = [t.start for t in self.tokens]

    def col(self, line: int, byte_col: int) -> int:
        """AST byte offset -> code point column."""
        raw = self._bytes[line - 1][:byte_col]
        return len(raw.decode("utf-8", "replace"))

    def start(self, node: ast.AST) -> tuple[int, int]:
        return node.lineno, self.col(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> tuple[int, int]:
        line = node.end_lineno  # type: ignore[attr-defined]
        return line, self.col(line, node.end_col_offset)  # type: ignore[attr-defined]

    def segment(self, start: tuple[int, int], end: tuple[int, int]) -> str:
        (l1, c1), (l2, c2) = start, end
        if l1 == l2:
            return self.lines[l1 - 1][c1:c2]
        parts = [self.lines[l1 - 1][c1:]] + self.lines[l1 : l2 - 1] + [self.lines[l2 - 1][:c2]]
        return "".join(parts)

    def op_between(
        self, start: tuple[int, int], end: tuple[int, int], words: str
    ) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """Span of the operator token(s) spelling ``words`` between two operands."""
        want = words.split()
        toks = []
        for t in self.tokens[bisect.bisect_left(self._starts, start) :]:
            if t.end > end:
                break
            toks.append(t)
        for i in range(len(toks) - len(want) + 1):
            if [t.string for t in toks[i : i + len(want)]] == want:
                return toks[i].start, toks[i + len(want) - 1].end
        return None


def apply_edit(text: str, edit: Edit) -> str:
    lines = text.splitlines(keepends=True)
    head = "".join(lines[: edit.line - 1]) + lines[edit.line - 1][: edit.col]
    tail = lines[edit.end_line - 1][edit.end_col :] + "".join(lines[edit.end_line :])
    return head + edit.text + tail


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _skipped_subtrees(tree: ast.AST) -> set[int]:
    """Nodes whose mutants mean nothing: annotations, ``__main__`` guards,
    ``__all__``/``__version__`` assignments and ``TYPE_CHECKING`` blocks."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            for sub in ast.walk(node):
                skip.add(id(sub))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mark(node.returns)
            args = node.args
            for a in args.posonlyargs + args.args + args.kwonlyargs:
                mark(a.annotation)
            for star in (args.vararg, args.kwarg):
                if star is not None:
                    mark(star.annotation)
            for d in node.decorator_list:
                mark(d)
        elif isinstance(node, ast.AnnAssign):
            mark(node.annotation)
        elif isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if test in ("__name__ == '__main__'", "TYPE_CHECKING", "typing.TYPE_CHECKING"):
                mark(node)
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if any(n.startswith("__") and n.endswith("__") for n in names):
                mark(node)
    return skip


def find_mutants(
    text: str, file: str, lines: set[int] | None = None, validate: bool = True
) -> list[Mutant]:
    """Every mutant of ``text``, or only those starting on ``lines``.

    With ``validate``, mutants that would not compile are dropped; that
    compiles the whole file once per mutant, so callers with many mutants
    validate only those they pick (``compiles``). Raises SyntaxError for a
    file that does not parse.
    """
    tree = parse_python(text)
    src = _Source(text)
    docstrings = _docstring_nodes(tree)
    skip = _skipped_subtrees(tree)
    out: list[Mutant] = []

    def add(kind: str, start: tuple[int, int], end: tuple[int, int], new: str,
            equivalent: str = "") -> None:
        if lines is not None and start[0] not in lines:
            return
        original = src.segment(start, end)
        if original == new:
            return
        edit = Edit(start[0], start[1], end[0], end[1], new)
        out.append(Mutant(file, kind, start[0], start[1], original, new, edit, equivalent))

    mutations(tree, src, skip, docstrings, add)

    valid: list[Mutant] = []
    seen: set[str] = set()
    for m in sorted(out, key=lambda m: (m.line, m.col, m.kind, m.replacement)):
        if m.key in seen:
            continue
        seen.add(m.key)
        if validate and not compiles(text, m):
            continue
        valid.append(m)
    return valid


def compiles(text: str, mutant: Mutant) -> bool:
    try:
        compile(apply_edit(text, mutant.edit), mutant.file, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def mutated_line(text: str, mutant: Mutant) -> str:
    """The mutant's first line as it reads after the edit (for evidence)."""
    new = apply_edit(text, mutant.edit)
    return new.splitlines()[mutant.line - 1] if new.splitlines() else ""


def select(mutants: list[Mutant], limit: int) -> list[Mutant]:
    """At most ``limit`` mutants, spread over as many lines as possible
    (round-robin by line) so a cap does not hide the end of a file."""
    if len(mutants) <= limit:
        return list(mutants)
    by_line: dict[tuple[str, int], list[Mutant]] = {}
    for m in mutants:
        by_line.setdefault((m.file, m.line), []).append(m)
    queues = [by_line[k] for k in sorted(by_line)]
    picked: list[Mutant] = []
    depth = 0
    while len(picked) < limit:
        progressed = False
        for q in queues:
            if depth < len(q):
                picked.append(q[depth])
                progressed = True
                if len(picked) == limit:
                    break
        if not progressed:
            break
        depth += 1
    return picked


MODULE_UNIT = "<module>"


def function_units(text: str) -> dict[int, str]:
    """Line -> the function it belongs to: the qualified name of the
    outermost ``def`` around it (``Class.method``; a nested def or lambda
    goes with the function it is written in), decorators included. Lines
    outside every function are not in the map (``MODULE_UNIT``). The unit
    mutation testing samples by: a function is judged on all its mutants."""
    out: dict[int, str] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                name = prefix + node.name
                for line in range(first, (node.end_lineno or node.lineno) + 1):
                    out[line] = name
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                # Functions defined under `if TYPE_CHECKING`, try/except ImportError.
                for part in ("body", "orelse", "finalbody"):
                    visit(getattr(node, part, []) or [], prefix)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body, prefix)

    visit(parse_python(text).body, "")
    return out
