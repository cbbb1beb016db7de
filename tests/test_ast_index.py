"""The noise rules' questions by line, answered from one walk of a module:
the same answers as walking the module for each finding, one index per
module while it is recent, and a bound on how many are kept."""

from __future__ import annotations

import ast

from superqode_ls.qe import ast_index

SRC = '''\
def outer(c, t):
    q = "?"
    def inner(x):
        return run(x, f"SELECT {t}")
    c.execute("SELECT %s" % q, run(
        t))
    return inner

class K:
    async def m(self):
        exec(open("hooks.py").read())
x = 1
'''


def _naive_function_at(tree, line):
    best = None
    for node in ast.walk(tree):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.lineno <= line <= (node.end_lineno or node.lineno)
                and (best is None or node.lineno > best.lineno)):
            best = node
    return best


def test_each_answer_is_the_one_a_walk_per_line_gives():
    tree = ast.parse(SRC)
    at = ast_index.index(tree)
    for line in range(1, SRC.count("\n") + 2):
        assert at.function_at(line) is _naive_function_at(tree, line), line
        assert at.nodes_at(line) == [n for n in ast.walk(tree) if getattr(n, "lineno", None) == line]
        assert at.calls_over(line) == [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                                       and n.lineno <= line <= (n.end_lineno or n.lineno)]
    assert at.function_at(4).name == "inner" and at.function_at(5).name == "outer"
    assert at.function_at(11).name == "m" and at.function_at(12) is None
    assert [c.lineno for c in at.calls_over(6)] == [5, 5]  # the two calls that span two lines
    assert set(at.assigned(at.function_at(2))) == {"q"}
    assert set(at.assigned(tree)) == {"q", "x"}


def test_a_module_is_indexed_once_while_recent_and_the_kept_are_bounded():
    trees = [ast.parse(SRC) for _ in range(ast_index._KEEP + 3)]
    first = ast_index.index(trees[0])
    assert ast_index.index(trees[0]) is first
    for t in trees[1:]:
        ast_index.index(t)
    assert len(ast_index._recent) <= ast_index._KEEP
    # The oldest was let go: asked again, it is indexed anew (its answers the same).
    again = ast_index.index(trees[0])
    assert again is not first and again.function_at(4).name == "inner"


def test_the_filter_lets_the_modules_go_when_it_ends(tmp_path):
    from superqode_ls.qe.noise import FileLines, filter_findings
    from tests.role_helpers import lint_finding

    (tmp_path / "m.py").write_text("def f(c, t):\n    c.execute(f'SELECT * FROM {t}')\n")
    ast_index.index(ast.parse(SRC))
    found = lint_finding("B608", "m.py", 2, role="security_tester", tool="bandit",
                         category="security")
    filter_findings([found], read_line=FileLines(tmp_path))
    assert not ast_index._recent  # the long-lived server keeps no tree between runs


def test_a_tree_is_parsed_once_while_kept_and_let_go_with_the_indexes():
    ast_index.clear()
    tree = ast_index.parsed(SRC)
    assert tree is not None and ast_index.parsed(SRC) is tree
    assert ast_index.parsed("def (:\n") is None  # does not parse: None, also when asked again
    assert ast_index.parsed("def (:\n") is None
    ast_index.clear()
    assert ast_index.parsed(SRC) is not tree  # let go: parsed anew
    ast_index.clear()


def test_the_kept_trees_are_bounded_by_their_text(monkeypatch):
    ast_index.clear()
    monkeypatch.setattr(ast_index, "_MAX_CHARS", 3 * len(SRC))
    texts = [SRC + f"y{i} = {i}\n" for i in range(6)]
    first = ast_index.parsed(texts[0])
    for t in texts[1:]:
        ast_index.parsed(t)
    assert ast_index._chars <= 3 * len(SRC)
    assert texts[0] not in ast_index._trees and ast_index.parsed(texts[0]) is not first
    ast_index.clear()
    assert ast_index._chars == 0 and not ast_index._trees


FLAGGED = '''import hashlib
import os


def key(path, seen={}):
    for name in os.listdir(path):
        print(prev)
        prev = name
    return hashlib.md5(path.encode()).hexdigest()
'''


def test_the_filter_parses_a_flagged_module_once_for_all_its_rules(make_repo, monkeypatch):
    """The context step and the rules after it (carried names, evidence,
    compatibility...) share one tree of the module: pyload's 96 flagged
    modules were parsed 284 times."""
    from superqode_ls.qe.noise import FileLines, filter_findings
    from superqode_ls.qe.roles.lint import LintTester
    from superqode_ls.qe.roles.security import SecurityTester
    from tests.role_helpers import make_ctx, run_role

    repo = make_repo({"app/keys.py": FLAGGED,
                      "pyproject.toml": '[tool.ruff.lint]\nselect = ["B006", "F821"]\n'})
    findings = [*run_role(SecurityTester(), make_ctx(repo)).findings,
                *run_role(LintTester(), make_ctx(repo)).findings]
    assert {f.rule_id for f in findings} >= {"B324", "B006", "F821"}
    text = "\n".join(FLAGGED.splitlines())
    parses = []
    real = ast.parse

    def counting(source, *a, **k):
        if source == text:
            parses.append(source)
        return real(source, *a, **k)

    monkeypatch.setattr(ast, "parse", counting)
    filter_findings(findings, read_line=FileLines(repo), threshold=0.7)
    assert len(parses) == 1, len(parses)
