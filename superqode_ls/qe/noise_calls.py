"""What a flagged call is given, for the library rules (noise_library.py):
the command parameter a method passes on unchanged, a command fixed but for
the running interpreter's path, SQL filled with placeholder lists only."""

from __future__ import annotations

import ast
import re

from .ast_index import index

_COMMAND_PARAM = re.compile(r"(?i)^(?:cmd|command|commands|cmdline|command_line|shell_command)$")
COMMAND_WORD = re.compile(r"\b(?:cmd|command|commands|cmdline|command_line|shell_command)\b",
                           re.IGNORECASE)


def _classes(tree: ast.Module) -> list[ast.ClassDef]:
    """The module's classes (nested in classes or module-level blocks too),
    without walking into functions: the whole tree is walked for none."""
    out: list[ast.ClassDef] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.ClassDef):
            out.append(node)
            todo.extend(node.body)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            todo.extend([*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", []),
                         *(s for h in getattr(node, "handlers", []) for s in h.body)])
    return out


def passed_parameter(tree: ast.Module, line: int) -> str | None:
    """The command parameter of the function around ``line`` when a call on
    that line gets it unchanged as its command (first argument or ``args=``)."""
    fn: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for cls in _classes(tree):
        for node in cls.body:  # a method: a class's API, not a module's helper
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and node.lineno <= line <= (node.end_lineno or node.lineno)
                    and (fn is None or node.lineno > fn.lineno)):
                fn = node
    if fn is None:
        return None
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        first = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg in ("args", "command", "cmd")), None)
        if (isinstance(first, ast.Name) and first.id in params and _COMMAND_PARAM.match(first.id)
                and not _rebound(fn, first.id)):
            return first.id
    return None


def _is_executable(e: ast.AST) -> bool:
    return (isinstance(e, ast.Attribute) and e.attr == "executable"
            and isinstance(e.value, ast.Name) and e.value.id == "sys")


def _fixed_but_interpreter(e: ast.AST) -> bool:
    """Text built from literals and ``sys.executable`` only."""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, str)
    if _is_executable(e):
        return True
    if isinstance(e, ast.JoinedStr):
        return all(isinstance(v, ast.Constant) or (isinstance(v, ast.FormattedValue)
                                                   and _is_executable(v.value)) for v in e.values)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Mod)):
        right = e.right.elts if isinstance(e.right, ast.Tuple) else [e.right]
        return _fixed_but_interpreter(e.left) and all(_fixed_but_interpreter(r) for r in right)
    if (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "format"
            and isinstance(e.func.value, ast.Constant) and not e.keywords):
        return all(_fixed_but_interpreter(a) for a in e.args)
    return False


def interpreter_only(tree: ast.Module, line: int) -> bool:
    """A call on ``line`` whose command mentions ``sys.executable`` and is otherwise literal."""
    for node in index(tree).nodes_at(line):
        if isinstance(node, ast.Call) and node.args:
            first = node.args[0]
            if any(_is_executable(x) for x in ast.walk(first)) and _fixed_but_interpreter(first):
                return True
    return False


_PLACEHOLDER_TEXT = re.compile(r"^\s*(?:\?|%s|:\w+|\$\d+)?\s*$")


def _placeholder_text(e: ast.AST) -> bool:
    return isinstance(e, ast.Constant) and isinstance(e.value, str) and bool(
        _PLACEHOLDER_TEXT.match(e.value))


def _placeholder_list(e: ast.AST, assigned: dict[str, list[ast.AST]], depth: int = 2) -> bool:
    """``", ".join("?" for _ in xs)``, ``",".join(["%s"] * n)``, ``"?" * n`` or a
    local name only ever given one of them."""
    if isinstance(e, ast.Name) and depth > 0:
        values = assigned.get(e.id, [])
        return bool(values) and all(_placeholder_list(v, assigned, depth - 1) for v in values)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
        return _placeholder_text(e.left) or (isinstance(e.left, ast.List) and all(
            _placeholder_text(x) for x in e.left.elts))
    if (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "join"
            and isinstance(e.func.value, ast.Constant) and isinstance(e.func.value.value, str)
            and not e.func.value.value.strip(", ") and len(e.args) == 1):
        arg = e.args[0]
        if isinstance(arg, (ast.GeneratorExp, ast.ListComp)):
            return _placeholder_text(arg.elt)
        return _placeholder_list(arg, assigned, depth - 1)
    return False


def placeholders_only(tree: ast.Module, line: int) -> bool:
    """The SQL text built on ``line`` fills in placeholder lists only."""
    at = index(tree)
    scope: ast.AST = at.function_at(line) or tree
    assigned = at.assigned(scope)
    filled: list[ast.AST] = []
    for node in at.nodes_at(line):
        if isinstance(node, ast.JoinedStr):
            filled += [v.value for v in node.values if isinstance(v, ast.FormattedValue)]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "format" and isinstance(node.func.value, ast.Constant)):
            filled += [*node.args, *(k.value for k in node.keywords)]
        elif (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)
              and isinstance(node.left, ast.Constant)):
            filled += node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
    return bool(filled) and all(_placeholder_list(v, assigned) for v in filled)


def _rebound(fn: ast.AST, name: str) -> bool:
    """``name`` is assigned in ``fn`` (then it may no longer be what the caller passed)."""
    for node in ast.walk(fn):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False
