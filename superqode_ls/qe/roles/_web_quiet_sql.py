"""SQL formatted only from the code's own text (``_web_quiet``'s SQL rule):
what may be formatted into a query without any value from outside reaching
it.

- a literal, a choice between literals, an f-string of literals;
- a local only given such values, or looped over a literal list
  (``for table in ["recs_loc", "recs_float"]``; the loop's body may use the
  name in other statements, only another binding of it counts);
- a name made from random text (``f"t{secrets.token_hex(16)}"``, ``uuid4().hex``):
  a scratch table's name, nothing from outside;
- ``self.NAME`` / ``Cls.NAME`` whose class gives it a literal, with no other
  assignment to ``.NAME`` in the module (``_counts_table_name = "_counts"``);
- ``" AND ".join(where)`` of a local list made of literals and only added to
  with literals (``where.append("sql like '%USING FTS4%'")``);
- an identifier quoted by a function of the module that doubles the quote
  character inside it (``'"{}"'.format(name.replace('"', '""'))``), the way
  SQL escapes a quoted identifier;
- a template of the code's own (an f-string, ``"...".format(...)``, ``+``, a
  ``join`` of a comprehension) filled only with the above
  (``" and ".join(f"{quote_identifier(c)} = ?" for c in cols)``).

A parameter, a value from a call of anything else, a list given other
values, or a quoting function that does not double the quote stays.
"""

from __future__ import annotations

import ast

from ..codegen import Scopes

# Calls whose result is random text: a scratch name, never a value from outside.
_RANDOM = frozenset({"token_hex", "token_urlsafe", "uuid4", "uuid1", "hex"})
_QUOTES = ('"', "`", "]")


def assigned_values(func: ast.AST, name: str) -> list[ast.AST] | None:
    """Every value ``name`` gets in ``func``; None when one is unknown (a
    loop, an unpacking, a ``with ... as``)."""
    out: list[ast.AST] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == name:
                    out.append(node.value)
                elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)):
                    return None
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name) \
                and node.target.id == name:
            if node.value is None:
                continue
            out.append(node.value)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension | ast.withitem | ast.NamedExpr):
            target = getattr(node, "target", None) or getattr(node, "optional_vars", None)
            if target is not None and any(isinstance(n, ast.Name) and n.id == name
                                          for n in ast.walk(target)):
                return None
    return out


def constant_text(s: Scopes, e: ast.AST, func: ast.AST | None, depth: int = 3) -> bool:
    """``e`` is only the code's own text (the module docstring lists the shapes)."""
    if isinstance(e, ast.Constant):
        return True
    if isinstance(e, ast.IfExp):
        return constant_text(s, e.body, func, depth) and constant_text(s, e.orelse, func, depth)
    if isinstance(e, ast.JoinedStr):
        return all(isinstance(v, ast.Constant) or isinstance(v, ast.FormattedValue) and (
            _random(v.value) or depth > 0 and constant_text(s, v.value, func, depth - 1))
            for v in e.values)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and depth > 0:
        return constant_text(s, e.left, func, depth - 1) and constant_text(
            s, e.right, func, depth - 1)
    if isinstance(e, ast.Attribute):
        return _class_constant(s, e)
    if isinstance(e, ast.Call):
        return (_joined_literals(e, func) or _quoted_identifier(s, e)
                or depth > 0 and _built_of_own_text(s, e, func, depth - 1))
    if not isinstance(e, ast.Name) or depth <= 0 or func is None:
        return False
    loops = [n for n in ast.walk(func) if isinstance(n, ast.For | ast.comprehension)
             and isinstance(n.target, ast.Name) and n.target.id == e.id]
    if loops:
        return not _bound_otherwise(func, e.id) and all(
            isinstance(n.iter, ast.List | ast.Tuple | ast.Set)
            and all(isinstance(x, ast.Constant) for x in n.iter.elts) for n in loops)
    values = assigned_values(func, e.id)
    return bool(values) and all(constant_text(s, v, func, depth - 1) for v in values)


def _built_of_own_text(s: Scopes, e: ast.Call, func: ast.AST | None, depth: int) -> bool:
    """``"{} = ?".format(<own text>, ...)`` or ``" and ".join(<own text> for c in cols)``:
    a template of the code's own, filled only with its own text (a quoted
    identifier takes any name)."""
    if not (isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Constant)):
        return False
    if e.func.attr == "format":
        return all(constant_text(s, a, func, depth) for a in (*e.args, *(
            k.value for k in e.keywords)))
    if e.func.attr == "join" and len(e.args) == 1:
        arg = e.args[0]
        if isinstance(arg, ast.ListComp | ast.GeneratorExp):
            return not arg.generators[0].ifs and constant_text(s, arg.elt, func, depth)
        if isinstance(arg, ast.Name) and func is not None:
            values = assigned_values(func, arg.id)
            return bool(values) and all(
                isinstance(v, ast.ListComp | ast.GeneratorExp)
                and constant_text(s, v.elt, func, depth) for v in values)
    return False


def _bound_otherwise(func: ast.AST, name: str) -> bool:
    """``name`` is the target of a binding other than a ``for`` loop's."""
    for n in ast.walk(func):
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
            targets = [n.target]
        elif isinstance(n, ast.withitem):
            targets = [n.optional_vars] if n.optional_vars is not None else []
        else:
            continue
        if any(isinstance(x, ast.Name) and x.id == name for t in targets for x in ast.walk(t)):
            return True
    return False


def _random(e: ast.AST) -> bool:
    """``secrets.token_hex(16)``, ``uuid.uuid4().hex``: random text."""
    if isinstance(e, ast.Attribute) and e.attr == "hex":
        return isinstance(e.value, ast.Call) and _random(e.value)
    if isinstance(e, ast.Call):
        f = e.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        return name in _RANDOM and name != "hex"
    return False


def _class_constant(s: Scopes, e: ast.Attribute) -> bool:
    """``self.NAME``/``Cls.NAME`` given a literal in a class body, and
    assigned nowhere else in the module."""
    if not isinstance(e.value, ast.Name):
        return False
    given = [n.value for n in ast.walk(s.tree) if isinstance(n, ast.ClassDef)
             for n in n.body if isinstance(n, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == e.attr for t in n.targets)]
    stored = any(isinstance(n, ast.Attribute) and n.attr == e.attr
                 and not isinstance(n.ctx, ast.Load) for n in ast.walk(s.tree))
    return bool(given) and not stored and all(
        isinstance(v, ast.Constant) and isinstance(v.value, str) for v in given)


def _joined_literals(e: ast.Call, func: ast.AST | None) -> bool:
    """``" AND ".join(where)``: a local list of literals only added to with literals."""
    if not (isinstance(e.func, ast.Attribute) and e.func.attr == "join"
            and isinstance(e.func.value, ast.Constant) and len(e.args) == 1
            and isinstance(e.args[0], ast.Name) and func is not None):
        return False
    name = e.args[0].id
    values = assigned_values(func, name)
    if not values or not all(isinstance(v, ast.List) and all(
            isinstance(x, ast.Constant) for x in v.elts) for v in values):
        return False
    for n in ast.walk(func):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load):
            up = next((p for p in ast.walk(func) if isinstance(p, ast.Attribute)
                       and p.value is n), None)
            if up is None:
                if not _argument_of(func, n, e):
                    return False
                continue
            call = next((c for c in ast.walk(func) if isinstance(c, ast.Call)
                         and c.func is up), None)
            if up.attr not in ("append", "insert", "extend") or call is None or not all(
                    isinstance(a, ast.Constant) or isinstance(a, ast.List | ast.Tuple)
                    and all(isinstance(x, ast.Constant) for x in a.elts)
                    for a in call.args):
                return False
    return True


def _argument_of(func: ast.AST, n: ast.Name, join: ast.Call) -> bool:
    """``n`` is the join's own argument, or only read by ``len``/``bool``/a test."""
    if n in join.args:
        return True
    return any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
               and c.func.id in ("len", "bool") and n in c.args for c in ast.walk(func)) or any(
        isinstance(t, ast.If | ast.While | ast.IfExp) and t.test is n for t in ast.walk(func))


def _quoted_identifier(s: Scopes, e: ast.Call) -> bool:
    """A call of the module's function that doubles the quote inside the
    identifier it quotes (``name.replace('"', '""')``)."""
    if not isinstance(e.func, ast.Name):
        return False
    defs = [n for n in s.tree.body if isinstance(n, ast.FunctionDef) and n.name == e.func.id]
    if len(defs) != 1:
        return False
    returns = [r.value for r in ast.walk(defs[0]) if isinstance(r, ast.Return)]
    return bool(returns) and all(r is not None and _doubles_quote(r) for r in returns)


def _doubles_quote(e: ast.AST) -> bool:
    for n in ast.walk(e):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and n.func.attr == "replace" and len(n.args) == 2 \
                and all(isinstance(a, ast.Constant) for a in n.args):
            old, new = n.args[0].value, n.args[1].value
            if old in _QUOTES and new == old * 2:
                return True
    return False
