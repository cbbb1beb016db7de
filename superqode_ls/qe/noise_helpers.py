"""Two findings that name the project's own code as if it were the risky
call (called from ``noise_idioms.idiom_noise``): an unused import in a
Django app's ``AppConfig.ready()`` (F401, the side-effect import that
connects its signals), and tarfile's unchecked extraction (B202) on a
call of the project's own function named for it (tox's
``safe_extractall``)."""

from __future__ import annotations

import ast

from .ast_index import index
from .codegen import Scopes


def app_ready_import(scopes: Scopes, line: int) -> str | None:
    """Why an unused import (F401) on ``line`` is Django's side-effect import:
    a module of the app imported in its ``AppConfig.ready()`` (wger's
    ``import wger.core.signals``), which connects the signal handlers and
    registers the checks the module defines. An import of another package
    there, or the same import anywhere else, stays."""
    for func in scopes.functions:
        if func.name != "ready" or not (func.lineno <= line <= (func.end_lineno or func.lineno)):
            continue
        cls = scopes.parent.get(func)
        if not (isinstance(cls, ast.ClassDef) and any(
                ast.unparse(b).rsplit(".", 1)[-1] == "AppConfig" for b in cls.bases)):
            return None
        app = next((v.value for s in cls.body if isinstance(s, ast.Assign) for t in s.targets
                    if isinstance(t, ast.Name) and t.id == "name"
                    and isinstance(v := s.value, ast.Constant) and isinstance(v.value, str)), None)
        for node in ast.walk(func):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno == line:
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                    "." * node.level + (node.module or "")]
                if all(n.startswith(".") or (app and (n == app or n.startswith(app + ".")))
                       for n in names):
                    return ("imported in the app's AppConfig.ready() for its side effects: "
                            "Django's way to connect the module's signal handlers and checks")
        return None
    return None


def own_extract_helper(scopes: Scopes, line: int) -> str | None:
    """Why tarfile's unchecked extraction (B202) on ``line`` is no such call:
    bandit matched a function of the project's own by its name (tox's
    ``safe_extractall(tar, work_dir)``, defined in the module or imported
    from the project's). Its body, where ``TarFile.extractall`` is called,
    is judged there. A method call (``tar.extractall()``), a bound method
    kept in a name, or a function from another package stays."""
    calls = [c for c in scopes.calls_on(line) if isinstance(c.func, ast.Name)
             and c.func.id.endswith("extractall")]
    if not calls or any(isinstance(c.func, ast.Attribute) and c.func.attr.endswith(
            "extractall") for c in scopes.calls_on(line)):
        return None
    name = calls[0].func.id  # type: ignore[attr-defined]
    source = None
    for node in ast.walk(scopes.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            source = "defined in this module"
        elif isinstance(node, ast.ImportFrom) and any(
                (a.asname or a.name) == name for a in node.names):
            if node.level == 0:
                return None  # another package's: nothing here says what it checks
            source = f"imported from {'.' * node.level}{node.module or ''}"
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and any(
                isinstance(t, ast.Name) and t.id == name for t in ast.walk(node)
                if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)):
            return None  # ``extractall = tar.extractall``: the method itself
    if source is None:
        return None
    return (f"not tarfile's extractall: {name}() is the project's own function ({source}); "
            "the extraction it makes is judged where it calls TarFile.extractall")


def members_checked(scopes: Scopes, line: int) -> str | None:
    """Why ``TarFile.extractall`` on ``line`` is checked after all: earlier in
    its function a loop over the archive's members (``getmembers()``) raises
    on one of them (luigi's ``SafeExtractor``: a member whose path leaves
    the folder is a "path traversal" error). A loop that only logs, or no
    loop, stays."""
    calls = [c for c in scopes.calls_on(line) if isinstance(c.func, ast.Attribute)
             and c.func.attr == "extractall"]
    fn = index(scopes.tree).function_at(line)
    if not calls or fn is None:
        return None
    for loop in ast.walk(fn):
        if not (isinstance(loop, (ast.For, ast.AsyncFor)) and loop.lineno < line
                and isinstance(loop.iter, ast.Call)
                and getattr(loop.iter.func, "attr", None) == "getmembers"):
            continue
        if any(isinstance(n, ast.If) and any(isinstance(r, ast.Raise) for r in ast.walk(n))
               for n in ast.walk(loop)):
            return ("every member's path is checked first: the loop over getmembers() before it "
                    "raises on one that does not pass")
    return None

