"""SQL identifiers from the code's own definitions (``_web_defs``' values):
a table, column or schema name cannot be a bound parameter, so a library
formats it in and binds the values (luigi's ``INSERT INTO {marker_table}
(update_id, target_table) VALUES (%s, %s)``).

- ``self.table`` / ``self.marker_table`` / ``self.columns``: an attribute
  whose name says table, column or schema, read on ``self``/``cls``, that
  the module sets only in a class body or a constructor (a class attribute,
  the project's configuration, a constructor's argument), never from a
  request;
- ``Cls.method()`` of a class of the module whose every return is built
  only from the names of ``dataclasses.fields(...)`` (piccolo's
  ``RowMeta.get_column_name_str()``): the dataclass's own field names.

A value formatted in (``self.update_id``), any other attribute, or an
identifier the module sets from request data stays.
"""

from __future__ import annotations

import ast
import re
import weakref

from ..codegen import Scopes

_IDENT = re.compile(r"(?i)_?(?:\w+_)?(?:table|tablename|column|schema|col)(?:_?names?)?s?")
_REQUEST = frozenset({"request", "req", "args", "kwargs", "form", "GET", "POST", "query_params",
                      "params", "query", "json", "get_json", "body", "data", "cookies",
                      "headers", "input", "argv", "environ"})
_CONSTRUCTORS = frozenset({"__init__", "__post_init__", "__new__"})
_FROM_REQUEST: weakref.WeakKeyDictionary[Scopes, frozenset[str]] = weakref.WeakKeyDictionary()


def _request_set(s: Scopes) -> frozenset[str]:
    """Attribute names the module assigns from anything that reads a request,
    or sets after construction (``def retarget(self, other): self.table =
    other``: whatever a later caller passes)."""
    if s not in _FROM_REQUEST:
        out = set()
        for fn in ast.walk(s.tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if fn.name not in _CONSTRUCTORS:
                out |= {t.attr for n in ast.walk(fn) for t in ast.walk(n)
                        if isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign)
                        and isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store)}
            if not _abstract(fn):
                out.add(fn.name)  # a property that computes it (rows of a query): not a definition
        for n in ast.walk(s.tree):
            if isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign) and n.value is not None:
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                named = {x.attr for t in targets for x in ast.walk(t) if isinstance(x, ast.Attribute)}
                if named and any(isinstance(x, ast.Name) and x.id in _REQUEST
                                 or isinstance(x, ast.Attribute) and x.attr in _REQUEST
                                 for x in ast.walk(n.value)):
                    out |= named
        _FROM_REQUEST[s] = frozenset(out)
    return _FROM_REQUEST[s]


def _abstract(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """An abstract property a subclass defines (luigi's ``def table(self):
    return None`` under ``@abc.abstractproperty``): only a docstring,
    ``pass``, ``...``, ``return None`` or ``raise NotImplementedError``."""
    body = [st for st in fn.body if not (isinstance(st, ast.Expr)
                                         and isinstance(st.value, ast.Constant))]
    return all(isinstance(st, ast.Pass | ast.Raise) or isinstance(st, ast.Return) and (
        st.value is None or isinstance(st.value, ast.Constant) and st.value.value is None)
        for st in body)


def own_identifier(s: Scopes, e: ast.Attribute) -> bool:
    """``self.table``-like: an identifier the class defines, never request data."""
    return (isinstance(e.value, ast.Name) and e.value.id in ("self", "cls")
            and bool(_IDENT.fullmatch(e.attr)) and e.attr not in _request_set(s))


def _field_names(e: ast.AST) -> bool:
    """``", ".join(i.name for i in dataclasses.fields(cls))``."""
    if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "join"
            and isinstance(e.func.value, ast.Constant) and len(e.args) == 1
            and isinstance(e.args[0], ast.GeneratorExp | ast.ListComp)):
        return False
    comp = e.args[0]
    it = comp.generators[0].iter if len(comp.generators) == 1 else None
    fn = it.func if isinstance(it, ast.Call) else None
    return (isinstance(fn, ast.Attribute | ast.Name)
            and (fn.attr if isinstance(fn, ast.Attribute) else fn.id) == "fields"
            and isinstance(comp.elt, ast.Attribute) and comp.elt.attr == "name"
            and isinstance(comp.elt.value, ast.Name)
            and comp.elt.value.id == getattr(comp.generators[0].target, "id", None))


def dataclass_fields(s: Scopes, e: ast.Call) -> bool:
    """``Cls.method()`` of a module class returning only its fields' names."""
    if e.args or e.keywords or not (isinstance(e.func, ast.Attribute)
                                    and isinstance(e.func.value, ast.Name)):
        return False
    classes = [c for c in s.tree.body if isinstance(c, ast.ClassDef) and c.name == e.func.value.id]
    if len(classes) != 1:
        return False
    defs = [d for d in classes[0].body if isinstance(d, ast.FunctionDef) and d.name == e.func.attr]
    returns = [r.value for d in defs for r in ast.walk(d) if isinstance(r, ast.Return)]
    return len(defs) == 1 and bool(returns) and all(
        r is not None and _field_names(r) for r in returns)
