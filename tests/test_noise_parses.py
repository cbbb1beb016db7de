"""The noise filter's context step parses each module once, and only where a
check needs its tree; its shortcuts give the answers of the full checks."""

from __future__ import annotations

import ast

import pytest

from superqode_ls.models import Range
from superqode_ls.qe.conventions import _swallowed_in_loop
from superqode_ls.qe.noise import FileLines, filter_findings
from tests.role_helpers import lint_finding

_finding = lint_finding


@pytest.fixture
def parses(monkeypatch):
    """How many times the filter parsed Python (each call's source)."""
    seen: list[str] = []
    real = ast.parse

    def counting(source, *args, **kw):
        seen.append(source)
        return real(source, *args, **kw)

    monkeypatch.setattr(ast, "parse", counting)
    return seen


# Bare excepts in every place a loop, a match case (no line numbers of its
# own), a nested function, an else branch or a one-line handler puts them.
TRICKY = """import functools


def plain():
    try:
        pass
    except:
        pass


async def walk(items, stream):
    for item in items:
        match item:
            case {"k": v}:
                try:
                    v()
                except:
                    continue
            case _:
                try: item()
                except: pass
    else:
        try:
            items.clear()
        except:
            pass
    async for chunk in stream:
        @functools.cache
        def inner():
            try:
                return chunk
            except:
                return None
        try:
            inner()
        except ValueError:
            pass
        except:
            pass
    while items:
        try:
            items.pop()
        except:
            try:
                items.clear()
            except:
                continue
"""


def _full_walk(tree: ast.AST) -> dict[int, bool]:
    """The bare handlers in loops over the whole tree (what the check answers)."""
    found = {}
    stack = [(tree, False)]
    while stack:
        node, in_loop = stack.pop()
        if in_loop and isinstance(node, ast.ExceptHandler) and node.type is None:
            found[node.lineno] = all(isinstance(s, ast.Pass | ast.Continue) for s in node.body)
        inner = in_loop or isinstance(node, ast.For | ast.While | ast.AsyncFor)
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return found


def test_bare_except_search_answers_as_a_walk_of_the_whole_module_on_every_line():
    tree = ast.parse(TRICKY)
    expected = _full_walk(tree)
    # the module holds both answers, or the comparison proves little
    assert set(expected.values()) == {True, False}
    for line in range(len(TRICKY.splitlines()) + 2):
        assert _swallowed_in_loop(tree, line) == expected.get(line, False), line


BOTH = """import os

os = os


def poll(queue):
    while True:
        try:
            queue.get()
        except:
            break
"""


def test_a_module_the_context_and_the_conventions_both_judge_is_parsed_once(tmp_path, parses):
    (tmp_path / "app.py").write_text(BOTH)
    res = filter_findings([_finding("PLW0127", "app.py", 3), _finding("E722", "app.py", 10)],
                          read_line=FileLines(tmp_path), path_classes={})
    by_rule = {f.rule_id: f for f in res.findings}
    assert "re-exports" in (by_rule["PLW0127"].noise or "")  # the context's check ran
    assert "style opinion" in (by_rule["E722"].noise or "")  # and the conventions' check
    assert parses.count(BOTH.rstrip("\n")) == 1


def test_a_syntax_error_is_judged_without_parsing_its_module(tmp_path, parses):
    (tmp_path / "old.py").write_text("print 'hello'\nx = (\n")
    res = filter_findings([_finding("invalid-syntax", "old.py", 1, category="syntax"),
                           _finding("invalid-syntax", "old.py", 2, category="syntax")],
                          read_line=FileLines(tmp_path), path_classes={})
    second = next(f for f in res.findings if f.range.start_line == 2)
    assert "the same cause as line 1" in (second.noise or "")  # judged as a Python 2 file
    assert not [s for s in parses if "hello" in str(s)]


TEXT = "".join(f"x{n} = {n}{'  # noqa' if n in (3, 58) else ''}\n" for n in range(1, 61))


@pytest.mark.parametrize(("start", "end", "end_col", "suppressed"), [
    (3, None, None, True),  # on the flagged line
    (1, 3, None, True),  # on the range's last line
    (1, 3, 1, False),  # a range that ends at column 1 of line 3 does not flag it
    (4, 2, None, False),  # an end before the start: the start line alone
    (2, 60, None, True),
    (4, 60, None, False),  # line 58 is past the 50 lines after the start
    (8, 60, None, True),  # and within them
    (59, 60, None, False),
    (2, 0, None, False),  # no end: the start line
    (61, 70, None, False),  # past the end of the file
])
def test_suppression_over_the_file_lines_reads_what_the_line_reader_does(
        tmp_path, start, end, end_col, suppressed):
    (tmp_path / "a.py").write_text(TEXT)
    lines = FileLines(tmp_path)
    f = _finding("F401", "a.py", start,
                 range=Range(start_line=start, start_col=1, end_line=end, end_col=end_col))

    def read_line(rel, n):  # a reader without .lines: one call per line
        return lines(rel, n)

    fast = filter_findings([f], read_line=lines).suppressed
    slow = filter_findings([f], read_line=read_line).suppressed
    assert fast == slow == int(suppressed)


def test_the_collector_is_paused_while_the_filter_runs_and_left_as_it_was(tmp_path):
    import gc

    (tmp_path / "a.py").write_text("x = 1\n")
    seen = []

    def read_line(rel, n):  # called by the filter's first step
        seen.append(gc.isenabled())
        return FileLines(tmp_path)(rel, n)

    assert gc.isenabled()
    filter_findings([_finding("F401", "a.py", 1)], read_line=read_line)
    assert seen and not any(seen)  # off while the filter ran
    assert gc.isenabled()  # and on again after it
    gc.disable()
    try:
        filter_findings([_finding("F401", "a.py", 1)], read_line=read_line)
        assert not gc.isenabled()  # off before: the filter does not turn it on
    finally:
        gc.enable()
