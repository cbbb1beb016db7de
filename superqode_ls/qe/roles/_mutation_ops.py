"""The mutation operators: which edits each AST node gets, and which of them
are likely equivalent (no test could tell them apart from the original).

Kinds follow mutmut's and cosmic-ray's useful ones: comparison operators and
their boundaries, boolean and arithmetic operators, augmented assignments,
numeric constants (±1), strings, call arguments (removed or None),
assignments to None, break/continue, call-statement removal and
``return None``. ``_mutators.find_mutants`` turns the spans into edits.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterator

Span = tuple[tuple[int, int], tuple[int, int]]
# add(kind, start, end, replacement, equivalent-reason)
Add = Callable[..., None]

COMPARE_SWAPS: dict[type[ast.cmpop], tuple[str, tuple[str, ...]]] = {
    ast.Gt: (">", (">=", "<=")),
    ast.GtE: (">=", (">", "<")),
    ast.Lt: ("<", ("<=", ">=")),
    ast.LtE: ("<=", ("<", ">")),
    ast.Eq: ("==", ("!=", "<=")),
    ast.NotEq: ("!=", ("==",)),
    ast.Is: ("is", ("is not",)),
    ast.IsNot: ("is not", ("is",)),
    ast.In: ("in", ("not in",)),
    ast.NotIn: ("not in", ("in",)),
}
# The boundary half of a comparison swap: what the equivalence check is about.
BOUNDARY = {(">", ">="), (">=", ">"), ("<", "<="), ("<=", "<")}

BINOP_SWAPS: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "/"),
    ast.Mod: ("%", "/"),
    ast.Pow: ("**", "*"),
    ast.LShift: ("<<", ">>"),
    ast.RShift: (">>", "<<"),
    ast.BitAnd: ("&", "|"),
    ast.BitOr: ("|", "&"),
    ast.BitXor: ("^", "&"),
}

BOOL_SWAPS: dict[type[ast.boolop], tuple[str, str]] = {
    ast.And: ("and", "or"),
    ast.Or: ("or", "and"),
}

# Calls whose string arguments are messages for people, not values a test reads.
_MESSAGE_CALLS = re.compile(
    r"(^|\.)(debug|info|warning|warn|error|exception|critical|log|print)$"
)
_STRING = re.compile(r"([rRbBuUfF]{0,2})('''|\"\"\"|'|\")(.*)\2", re.DOTALL)


def _call_name(call: ast.Call) -> str:
    try:
        return ast.unparse(call.func)
    except Exception:  # noqa: BLE001 - odd node: no name
        return ""


def _messages(tree: ast.AST) -> set[int]:
    """Nodes that only make the text of an exception or a log/print line."""
    out: set[int] = set()
    for node in ast.walk(tree):
        holder: ast.AST | None = None
        if isinstance(node, ast.Raise) and node.exc is not None:
            holder = node.exc
        elif isinstance(node, ast.Call) and _MESSAGE_CALLS.search(_call_name(node)):
            holder = node
        if holder is not None:
            out.update(id(sub) for sub in ast.walk(holder))
    return out


def _same_either_way(tree: ast.AST) -> set[int]:
    """Compare nodes that only choose between their own two operands
    (``a if a < b else b``, ``if a < b: return a`` / ``return b``): at the
    boundary both paths give the same value, so moving it is equivalent."""
    out: set[int] = set()

    def pick(test: ast.expr, one: ast.expr, other: ast.expr) -> None:
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            sides = {ast.dump(test.left), ast.dump(test.comparators[0])}
            if {ast.dump(one), ast.dump(other)} == sides and len(sides) == 2:
                out.add(id(test))

    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp):
            pick(node.test, node.body, node.orelse)
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for i, stmt in enumerate(body):
            if not (isinstance(stmt, ast.If) and len(stmt.body) == 1):
                continue
            first = stmt.body[0]
            other = stmt.orelse[0] if len(stmt.orelse) == 1 else (
                body[i + 1] if not stmt.orelse and i + 1 < len(body) else None)
            if (isinstance(first, ast.Return) and isinstance(other, ast.Return)
                    and first.value is not None and other.value is not None):
                pick(stmt.test, first.value, other.value)
    return out


def _one_string_token(text: str) -> bool:
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                if t.type == tokenize.STRING]
    except (tokenize.TokenError, SyntaxError):
        return False
    return len(toks) == 1


def _string_replacement(segment: str) -> str | None:
    m = _STRING.fullmatch(segment)
    if not m or "f" in m.group(1).lower() or not _one_string_token(segment):
        return None
    prefix, quote, body = m.groups()
    return f"{prefix}{quote}XX{body}XX{quote}"


def _int_replacements(value: int) -> tuple[str, ...]:
    if value == 0:
        return ("1",)
    if value == 1:
        return ("0", "2")
    return (str(value + 1), str(value - 1))


def _constant_replacements(value: object) -> tuple[str, ...]:
    if isinstance(value, bool):
        return ("False" if value else "True",)
    if isinstance(value, int):
        return _int_replacements(value)
    if isinstance(value, float):
        return ("1.0",) if value == 0.0 else ("0.0",)
    return ()


def _arguments(node: ast.Call) -> list[ast.AST]:
    args: list[ast.AST] = [a for a in node.args]
    args += [k for k in node.keywords]
    return sorted(args, key=lambda a: (a.lineno, a.col_offset))  # type: ignore[attr-defined]


def mutations(tree: ast.AST, src, skip: set[int], docstrings: set[int], add: Add) -> None:
    """Call ``add`` for every mutation of every node not in ``skip``."""
    messages = _messages(tree)
    either = _same_either_way(tree)
    in_fstring = {id(s) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)
                  for s in ast.walk(n)}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        for kind, span, new, why in _node_mutations(node, src, docstrings, messages,
                                                    either, in_fstring):
            add(kind, span[0], span[1], new, why)


def _node_mutations(node, src, docstrings, messages, either, in_fstring
                    ) -> Iterator[tuple[str, Span, str, str]]:
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            spec = COMPARE_SWAPS.get(type(op))
            if not spec:
                continue
            span = src.op_between(src.end(operands[i]), src.start(operands[i + 1]), spec[0])
            for new in spec[1] if span else ():
                why = ""
                if (spec[0], new) in BOUNDARY and id(node) in either:
                    why = "both paths give the same value at the boundary"
                yield "compare", span, new, why
    elif isinstance(node, ast.BoolOp):
        old, new = BOOL_SWAPS[type(node.op)]
        for left, right in zip(node.values, node.values[1:]):
            span = src.op_between(src.end(left), src.start(right), old)
            if span:
                yield "boolean", span, new, ""
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        # `not x` -> `x`: drop the keyword and the space after it.
        yield "boolean", (src.start(node), src.start(node.operand)), "", ""
    elif isinstance(node, ast.BinOp):
        swap = BINOP_SWAPS.get(type(node.op))
        if swap and not _is_string_format(node):
            span = src.op_between(src.end(node.left), src.start(node.right), swap[0])
            if span:
                yield "arith", span, swap[1], ""
    elif isinstance(node, ast.AugAssign):
        swap = BINOP_SWAPS.get(type(node.op))
        if swap:
            span = src.op_between(src.end(node.target), src.start(node.value), swap[0] + "=")
            if span:
                yield "augassign", span, swap[1] + "=", ""
                yield "augassign", span, "=", ""
    elif isinstance(node, ast.Constant) and id(node) not in docstrings:
        span = (src.start(node), src.end(node))
        if isinstance(node.value, (str, bytes)):
            if id(node) in in_fstring:
                return
            text = _string_replacement(src.segment(*span))
            if text is not None:
                why = "the text of a message" if id(node) in messages else ""
                yield "string", span, text, why
        else:
            for new in _constant_replacements(node.value):
                yield "constant", span, new, ""
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield "return", (src.start(node.value), src.end(node.value)), "None", ""
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        start, end = src.start(node), src.end(node)
        why = "output or logging only" if _MESSAGE_CALLS.search(_call_name(node.value)) else ""
        # Keep the line count so every later line keeps its number.
        yield "call", (start, end), "None" + "\n" * (end[0] - start[0]), why
    elif isinstance(node, ast.Call) and not _MESSAGE_CALLS.search(_call_name(node)):
        why = "the text of a message" if id(node) in messages else ""
        for kind, span, new, _ in _argument_mutations(node, src):
            yield kind, span, new, why
    elif isinstance(node, ast.Assign) and len(node.targets) == 1:
        value = node.value
        if not (isinstance(value, ast.Constant) and value.value is None):
            yield "assign", (src.start(value), src.end(value)), "None", ""
    elif isinstance(node, (ast.Break, ast.Continue)):
        new = "continue" if isinstance(node, ast.Break) else "break"
        yield "loop", (src.start(node), src.end(node)), new, ""


def _argument_mutations(node: ast.Call, src) -> Iterator[tuple[str, Span, str, str]]:
    args = _arguments(node)
    for i, arg in enumerate(args):
        value = arg.value if isinstance(arg, ast.keyword) else arg
        if isinstance(arg, ast.Starred) or (isinstance(arg, ast.keyword) and arg.arg is None):
            continue
        if not (isinstance(value, ast.Constant) and value.value is None):
            yield "argument", (src.start(value), src.end(value)), "None", ""
        if len(args) == 1:
            continue
        # Removal: the argument and the comma that separates it.
        if i + 1 < len(args):
            span = (src.start(arg), src.start(args[i + 1]))
        else:
            span = (src.end(args[i - 1]), src.end(arg))
        if span[0][0] == span[1][0]:  # one line: keeps every line number
            yield "argument", span, "", ""


def _is_string_format(node: ast.BinOp) -> bool:
    return isinstance(node.op, ast.Mod) and isinstance(node.left, (ast.Constant, ast.JoinedStr))
