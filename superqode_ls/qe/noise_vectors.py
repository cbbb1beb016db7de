"""A credential-looking literal in a table of test vectors: false.

Product code sometimes keeps the examples its parser was checked against
beside it: ArchiveBox's ``URL_REGEX_TESTS = [("http://us:pa@ex.co:42/...",
["http://us:pa@ex.co:42/..."]), ...]`` pairs each input URL with the URLs
the regex must find in it. A ``user:password@host`` there is example
userinfo for the parser, no credential of anything.

The evidence is the table's shape and its own name, both required: a
module-level name whose words say TEST(S), EXAMPLE(S), SAMPLE(S), VECTOR(S)
or CASES, bound to a list or tuple of at least three rows, every row a
tuple (or list) of literals only -- input and expected output -- and the
flagged line inside that table. A single URL constant (``TEST_DB_URL =
"postgres://u:p@db/app"``), a table under another name (``MIRRORS``), or a
row holding anything but literals stays shown. A provider's token is not a
password rule's finding and is never judged here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..models import Finding, Severity
from .ast_index import module_assignments
from .context import mark_noise
from .noise_library import module_of

Lines = Callable[[str], "list[str] | None"]

VECTOR_RULES = frozenset({"HARDCODED-DB-PASSWORD", "SECRET-GENERIC", "SECRET-CONFIG-PASSWORD",
                          "B105", "B106"})
WHY = ("example input of {name}, a table of test vectors (input and expected output) in the "
       "code: example userinfo for the code under test, no credential")
_NAME_WORD = re.compile(r"(^|_)(TESTS?|EXAMPLES?|SAMPLES?|VECTORS?|CASES)(_|$)")
_MIN_ROWS = 3
_TABLE = re.compile(r"(?im)^\w*(TESTS?|EXAMPLES?|SAMPLES?|VECTORS?|CASES)\w*\s*(:[^=\n]*)?=\s*[\[(]")


def vector_noise(findings: list[Finding], lines_of: Lines,
                 canonical: Callable[[str], str]) -> list[Finding]:
    """The findings, a password rule's inside a table of test vectors marked noise."""
    tables: dict[str, list[tuple[str, int, int]]] = {}
    out = []
    for f in findings:
        rules = {canonical(f.rule_id), *map(canonical, f.related_rules)}
        if (f.noise is None and f.file and f.file.endswith(".py") and f.range
                and rules & VECTOR_RULES):
            if f.file not in tables:
                lines = lines_of(f.file)
                # (the text first: most flagged modules have no such table to parse for)
                tree = module_of(lines) if lines is not None and _TABLE.search(
                    "\n".join(lines)) else None
                tables[f.file] = vector_tables(tree) if tree is not None else []
            line = f.range.start_line
            name = next((n for n, a, b in tables[f.file] if a <= line <= b), None)
            if name is not None:
                f = mark_noise(f, WHY.format(name=name), Severity.low)
        out.append(f)
    return out


def vector_tables(tree: ast.Module) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of each module-level table of test vectors."""
    out = []
    for node, target, value in module_assignments(tree):
        if not (isinstance(target, ast.Name) and _NAME_WORD.search(target.id.upper())):
            continue
        if (isinstance(value, (ast.List, ast.Tuple)) and len(value.elts) >= _MIN_ROWS
                and all(_row(r) for r in value.elts)):
            out.append((target.id, node.lineno, node.end_lineno or node.lineno))
    return out


def _row(e: ast.expr) -> bool:
    """A row of vectors: two or more values, all literals."""
    return isinstance(e, (ast.Tuple, ast.List)) and len(e.elts) >= 2 and all(
        _literal(v) for v in e.elts)


def _literal(e: ast.expr) -> bool:
    try:
        ast.literal_eval(e)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True
