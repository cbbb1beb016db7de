"""The server package's shape, read from its source with ``ast``: no import
cycle between its modules (imports inside functions and under TYPE_CHECKING
count), the server class imports no feature, and features do not import one
another (they share state through ``SuperQodeServer``)."""

from __future__ import annotations

import ast
from pathlib import Path

import superqode_ls.server as pkg

SERVER = Path(pkg.__file__).parent
PREFIX = "superqode_ls.server"


def _module_name(path: Path) -> str:
    return path.stem


def _imports(path: Path) -> set[str]:
    """Server modules ``path`` imports, anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from . import x / from .x import y
                if node.module:
                    out.add(node.module.split(".")[0])
                else:
                    out.update(a.name for a in node.names)
            elif node.level == 0 and node.module and node.module.startswith(PREFIX + "."):
                out.add(node.module[len(PREFIX) + 1:].split(".")[0])
            elif node.level == 0 and node.module == PREFIX:
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(PREFIX + "."):
                    out.add(a.name[len(PREFIX) + 1:].split(".")[0])
    return out


def graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in SERVER.glob("*.py")}
    return {name: {m for m in _imports(p) if m in modules and m != name}
            for name, p in modules.items()}


def features() -> set[str]:
    out = set()
    for p in SERVER.glob("*.py"):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.FunctionDef) and n.name == "register" for n in tree.body):
            out.add(p.stem)
    return out


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(g.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (c := visit(m)):
                return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(g):
        if n not in state and (c := visit(n)):
            return c
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_inside_the_server():
    g = graph()
    assert "server" in g and "setup" in g
    assert find_cycle(g) is None


def test_the_server_class_imports_no_feature_and_features_not_each_other():
    g = graph()
    feats = features()
    # Every feature is registered by setup, and only there.
    assert feats <= g["setup"], feats - g["setup"]
    assert not (g["server"] & feats), g["server"] & feats
    for name in feats:
        assert not (g[name] & feats), f"{name} imports feature(s) {g[name] & feats}"
    for name, deps in g.items():
        if name not in ("setup", "__main__"):
            assert "setup" not in deps, name


def test_setup_lists_every_feature_module():
    from superqode_ls.server import setup

    assert {m.__name__.rsplit(".", 1)[1] for m in setup.FEATURES} == features()
