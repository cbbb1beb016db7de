"""The package's shape, read from its source with ``ast``: no import cycle
(imports inside functions count, typing-only ones too), no module over 800
lines, and imports only go down the layers

    server, cli  ->  engine  ->  qe  ->  agent  ->  workspace  ->  models, config, events, errors, runtime

and the front ends (server, cli, __main__) reach the engine only through its
front door, ``superqode_ls.engine``: besides their own modules they import
nothing of the package but ``engine`` and the shared models, config, events,
errors and runtime (FRONT_DOOR).

Violations that other work is removing right now are listed in KNOWN_*, each
with its owner; the lead empties the lists at merge. Anything not listed fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "superqode_ls"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE
MAX_LINES = 800

# Higher imports lower (or its own layer), never the other way round.
LAYERS = {
    "server": 4,
    "cli": 4,
    "__main__": 4,
    "engine": 3.5,
    "qe": 3,
    "agent": 2,
    "workspace": 1,
    "models": 0,
    "config": 0,
    "events": 0,
    "errors": 0,
    "runtime": 0,
    "__init__": 0,
}

# (importer, imported) edges against the layer order that are being removed.
KNOWN_LAYER_VIOLATIONS: dict[tuple[str, str], str] = {}

# Import cycles being broken: each entry is the set of modules of one cycle
# (a strongly connected component); a component must fit inside one entry.
KNOWN_CYCLES: dict[frozenset[str], str] = {}

# Modules over MAX_LINES being split by their owner.
KNOWN_LARGE: dict[str, str] = {}

FRONT_ENDS = ("server", "cli", "__main__")
# What a front end may import of the package besides the front ends
# themselves: the engine API and the shared bottom layer (``runtime``: the
# process settings the front end makes; ``__init__``: the version).
FRONT_DOOR = ("engine", "models", "config", "events", "errors", "runtime", "__init__")


def _modules() -> dict[str, Path]:
    """Dotted names without the package prefix (``workspace.guard``; a package
    is its folder's name, ``workspace.branches``)."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts) or "__init__"] = path
    return out


MODULES = _modules()


def _resolve(importer: str, is_pkg: bool, node: ast.ImportFrom | ast.Import) -> list[str]:
    """Package modules ``node`` imports (the deepest existing module of each name)."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = importer.split(".") if importer != "__init__" else []
            if not is_pkg:
                base = base[:-1]
            up = node.level - 1
            if up > len(base):
                return []
            base = base[: len(base) - up] if up else base
            mod = ".".join([PACKAGE, *base, *([node.module] if node.module else [])])
        else:
            mod = node.module or ""
        names = [f"{mod}.{a.name}" for a in node.names] + [mod]
    out = []
    for name in names:
        if name != PACKAGE and not name.startswith(PACKAGE + "."):
            continue
        parts = name.split(".")[1:]
        while parts and ".".join(parts) not in MODULES:
            parts.pop()
        target = ".".join(parts) or "__init__"
        if target in MODULES and target not in out:
            out.append(target)
    # ``from .x import y``: y is a module of x, or a name in x; never both.
    if isinstance(node, ast.ImportFrom) and len(out) > 1:
        specific = [t for t in out if any(t.endswith("." + a.name) for a in node.names)]
        out = specific + [t for t in out if t not in specific and not specific]
    return out


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_pkg = path.name == "__init__.py"
        edges = graph.setdefault(name, set())
        for node in ast.walk(tree):  # every import, wherever it sits
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges.update(t for t in _resolve(name, is_pkg, node) if t != name)
    return graph


GRAPH = _graph()


def _layer(module: str) -> int:
    return LAYERS[module.split(".")[0]]


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(frozenset(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer():
    assert sorted(m for m in MODULES if m.split(".")[0] not in LAYERS) == []


def test_no_new_import_cycle():
    new = [
        sorted(comp) for comp in _cycles(GRAPH) if not any(comp <= known for known in KNOWN_CYCLES)
    ]
    assert new == [], f"import cycles: {new}"


def test_no_import_against_the_layer_order():
    bad = sorted(
        (src, dst)
        for src, dsts in GRAPH.items()
        for dst in dsts
        if _layer(dst) > _layer(src) and (src, dst) not in KNOWN_LAYER_VIOLATIONS
    )
    assert bad == [], f"imports against the layer order: {bad}"


def test_no_module_over_the_line_limit():
    big = sorted(
        (name, n)
        for name, path in MODULES.items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and name not in KNOWN_LARGE
    )
    assert big == [], f"modules over {MAX_LINES} lines: {big}"


def _behind_the_front_door(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(front-end module, module it imports) pairs that pass the engine by."""
    return sorted(
        (src, dst)
        for src, dsts in graph.items()
        if src.split(".")[0] in FRONT_ENDS
        for dst in dsts
        if dst.split(".")[0] not in FRONT_ENDS + FRONT_DOOR
    )


def test_front_ends_use_only_the_engine_api():
    """server/, cli/ and __main__ import the engine only through
    ``superqode_ls.engine`` (imports inside functions and under
    TYPE_CHECKING count: ``ast.walk`` sees them all)."""
    assert _behind_the_front_door(GRAPH) == []


def test_known_lists_hold_only_what_is_still_there():
    """A violation that is gone leaves its KNOWN entry: drop it, so it cannot
    come back unnoticed."""
    layer_edges = {(s, d) for s, ds in GRAPH.items() for d in ds if _layer(d) > _layer(s)}
    assert sorted(set(KNOWN_LAYER_VIOLATIONS) - layer_edges) == []
    cycles = _cycles(GRAPH)
    assert [sorted(k) for k in KNOWN_CYCLES if not any(c <= k for c in cycles)] == []


# The reader itself, on small made-up packages: each rule can fail.


def _tmp_graph(files: dict[str, str]) -> dict[str, set[str]]:
    global MODULES
    saved = MODULES
    MODULES = {name: Path(name) for name in files}
    try:
        graph: dict[str, set[str]] = {}
        for name, text in files.items():
            is_pkg = name in {n.rsplit(".", 1)[0] for n in files if "." in n}
            edges = graph.setdefault(name, set())
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    edges.update(t for t in _resolve(name, is_pkg, node) if t != name)
        return graph
    finally:
        MODULES = saved


def test_an_import_inside_a_function_closes_a_cycle():
    graph = _tmp_graph(
        {
            "workspace": "",
            "workspace.a": "from .b import x\n",
            "workspace.b": "def f():\n    from . import a\n",
        }
    )
    assert _cycles(graph) == [frozenset({"workspace.a", "workspace.b"})]


def test_an_upward_import_is_seen():
    graph = _tmp_graph(
        {
            "models": "def f():\n    from superqode_ls.qe import pipeline\n",
            "qe": "",
            "qe.pipeline": "from ..models import Finding\n",
        }
    )
    assert graph["models"] == {"qe.pipeline"} and graph["qe.pipeline"] == {"models"}
    assert _layer("qe.pipeline") > _layer("models")


def test_a_front_end_passing_the_engine_by_is_seen():
    graph = _tmp_graph(
        {
            "cli": "",
            "cli.run": "from ..engine import runs\nfrom ..models import Finding\n",
            "server": "",
            "server.a": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from ..workspace.recovery import SessionInfo\n"
                "def f():\n    from ..qe import baseline\n"
            ),
            "engine": "",
            "engine.runs": "",
            "models": "",
            "qe": "",
            "qe.baseline": "",
            "workspace": "",
            "workspace.recovery": "",
        }
    )
    assert _behind_the_front_door(graph) == [
        ("server.a", "qe.baseline"), ("server.a", "workspace.recovery")]


@pytest.mark.parametrize("module", ["workspace.guard", "workspace.branches", "cli"])
def test_real_modules_are_read(module):
    assert GRAPH[module], f"{module} imports nothing of the package?"
    assert "errors" in GRAPH["config"]
