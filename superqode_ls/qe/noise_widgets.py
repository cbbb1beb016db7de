"""Markup in a form widget over the form's own declarations (B704, B703).

A WTForms widget is called with the field to render (``__call__(self,
field, **kwargs)``) and must return ``Markup``: that is the widget
protocol, and the template puts its output in the page as it is. The
XSS bandit warns of is the field's *value* (what the user typed) put in
that HTML unescaped. A widget whose HTML is built only from

- literals, translations of literals, ``escape``/``html_params`` (which
  escapes every value it is given),
- the field's declared name, id, label, type or description (the form's
  code sets them; the label renders itself escaped),
- its subfields rendered whole (``str(subfield)`` or ``subfield()`` for
  ``subfield in field``: each through its own widget, which escapes its
  value), a subfield's ``label.text`` (OpenOversight's list widget),
- the widget's own settings (``self.html_tag``), set where the form
  declares the widget and not changed while it renders,
- a field attribute read with ``getattr`` and such a default
  (``getattr(field, "yes_text", _l("Yes"))``), or a render-time argument
  (``kwargs.pop("id", field.id)``: what the template passes),
- a choice between such texts whatever decides it (``" checked" if
  field.data else ""``),

also through local names, ``+=``, a list it fills and ``"".join``, puts no
user text in the page (changedetection.io's ternary radio widget, its
table widget). The field's data, raw data or ``_value()`` in the HTML, or a
name not followed, keeps the finding shown.
"""

from __future__ import annotations

import ast

from .noise_defaults import callee

WHY = ("a form widget's HTML built from the form's own declarations (names, labels, "
       "literals, subfields that render and escape themselves): the field's value is not in it")

_FORM_MODULES = frozenset({"wtforms", "flask_wtf"})
_MARKUP = frozenset({"Markup", "mark_safe", "SafeString", "SafeText"})
_DECLARED_ATTRS = frozenset({"name", "id", "short_name", "label", "type", "description"})
_ESCAPES = frozenset({"escape", "html_params", "conditional_escape", "escape_html"})
_TRANSLATIONS = frozenset({"_", "_l", "gettext", "lazy_gettext", "gettext_lazy", "ngettext",
                           "pgettext"})
_KWARG_READS = frozenset({"pop", "get", "setdefault"})
_DEPTH = 10


def widget_markup(tree: ast.Module, line: int) -> str | None:
    """Why every Markup call on ``line`` is a widget's HTML of declared text."""
    if not _imports_forms(tree):
        return None
    found = False
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef) or func.name != "__call__":
            continue
        if not (func.lineno <= line <= (func.end_lineno or func.lineno)):
            continue
        params = [a.arg for a in func.args.args]
        if len(params) < 2:
            return None
        w = _Widget(func, params[1], func.args.kwarg.arg if func.args.kwarg else None)
        for call in ast.walk(func):
            if isinstance(call, ast.Call) and callee(call) in _MARKUP \
                    and call.lineno <= line <= (call.end_lineno or call.lineno):
                if len(call.args) != 1 or call.keywords or not w.declared(call.args[0], _DEPTH):
                    return None
                found = True
    return WHY if found else None


def _imports_forms(tree: ast.Module) -> bool:
    for n in tree.body if isinstance(tree, ast.Module) else []:
        names = [a.name for a in n.names] if isinstance(n, ast.Import) else (
            [n.module or ""] if isinstance(n, ast.ImportFrom) else [])
        if any(m.split(".")[0] in _FORM_MODULES for m in names):
            return True
    return False


class _Widget:
    def __init__(self, func: ast.FunctionDef, field: str, kwargs: str | None) -> None:
        self.func, self.field, self.kwargs = func, field, kwargs
        self.owner = func.args.args[0].arg if func.args.args else ""
        self.rebound = {t.attr for n in ast.walk(func) if isinstance(n, ast.Assign | ast.AugAssign)
                        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                        for t in ast.walk(t) if isinstance(t, ast.Attribute)}
        self.values: dict[str, list[ast.AST]] = {}
        self.subfields: set[str] = set()
        self.unknown: set[str] = {field}
        if kwargs:
            self.unknown.add(kwargs)
        for n in ast.walk(func):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    self._bind(t, n.value)
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                self._bind(n.target, n.value)
            elif isinstance(n, (ast.For, ast.comprehension)):
                if isinstance(n.target, ast.Name) and isinstance(n.iter, ast.Name) \
                        and n.iter.id == field:
                    self.subfields.add(n.target.id)
                else:
                    self._bind(n.target, None)
            elif isinstance(n, (ast.With, ast.NamedExpr, ast.ExceptHandler)):
                self._unknown_targets(n)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                    and isinstance(n.func.value, ast.Name) \
                    and n.func.attr in ("append", "extend", "insert"):
                args = n.args[1:] if n.func.attr == "insert" else n.args
                extend = n.func.attr == "extend"
                self.values.setdefault(n.func.value.id, []).extend(
                    ast.List(elts=[a], ctx=ast.Load()) if not extend else a for a in args)
        for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs):
            if a.arg != field:
                self.unknown.add(a.arg)

    def _bind(self, target: ast.AST, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            if value is None:
                self.unknown.add(target.id)
            else:
                self.values.setdefault(target.id, []).append(value)
        else:
            for n in ast.walk(target):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    self.unknown.add(n.id)

    def _unknown_targets(self, node: ast.AST) -> None:
        if isinstance(node, ast.ExceptHandler) and node.name:
            self.unknown.add(node.name)
        elif isinstance(node, ast.NamedExpr):
            self.unknown.add(node.target.id)
        elif isinstance(node, ast.With):
            for item in node.items:
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, None)

    def declared(self, e: ast.AST, depth: int, seen: frozenset[str] = frozenset()) -> bool:
        if depth <= 0:
            return False
        d = depth - 1
        if isinstance(e, ast.Constant):
            return isinstance(e.value, (str, int, float)) or e.value is None
        if isinstance(e, ast.JoinedStr):
            return all(self.declared(v.value, d, seen) for v in e.values
                       if isinstance(v, ast.FormattedValue))
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Mod)):
            right = e.right.elts if isinstance(e.right, ast.Tuple) else [e.right]
            return self.declared(e.left, d, seen) and all(self.declared(x, d, seen)
                                                          for x in right)
        if isinstance(e, ast.IfExp):
            return self.declared(e.body, d, seen) and self.declared(e.orelse, d, seen)
        if isinstance(e, (ast.List, ast.Tuple)):
            return all(self.declared(x, d, seen) for x in e.elts)
        if isinstance(e, ast.Attribute):
            # ``subfield.label.text``: the label's text as the form declares it
            if e.attr == "text" and isinstance(e.value, ast.Attribute) \
                    and e.value.attr == "label" and self._field_like(e.value.value):
                return True
            # the widget's own setting (``self.html_tag``), given where the form
            # declares the widget, not changed while it renders
            if isinstance(e.value, ast.Name) and e.value.id == self.owner \
                    and e.attr not in self.rebound:
                return True
            return e.attr in _DECLARED_ATTRS and self._field_like(e.value)
        if isinstance(e, ast.Call):
            return self._declared_call(e, d, seen)
        if isinstance(e, ast.Name):
            if e.id in seen:
                return True
            if e.id in self.subfields:
                return True  # a subfield renders itself through its own widget
            if e.id in self.unknown or e.id not in self.values:
                return False
            return all(self.declared(v, d, seen | {e.id}) for v in self.values[e.id])
        return False

    def _field_like(self, e: ast.AST) -> bool:
        return isinstance(e, ast.Name) and (e.id == self.field or e.id in self.subfields)

    def _declared_call(self, e: ast.Call, d: int, seen: frozenset[str]) -> bool:
        name = callee(e)
        if name in _ESCAPES:
            return True
        if isinstance(e.func, ast.Name) and e.func.id in self.subfields:
            return True  # ``subfield()``: rendered through its own widget, escaped
        if name in _TRANSLATIONS and isinstance(e.func, ast.Name):
            return bool(e.args) and all(isinstance(a, ast.Constant) for a in e.args)
        if name == "str" and len(e.args) == 1:
            return self.declared(e.args[0], d, seen)
        if name == "getattr" and len(e.args) == 3 and self._field_like(e.args[0]) \
                and isinstance(e.args[1], ast.Constant):
            return self.declared(e.args[2], d, seen)
        if name in _KWARG_READS and isinstance(e.func, ast.Attribute) \
                and isinstance(e.func.value, ast.Name) and e.func.value.id == self.kwargs:
            return all(self.declared(a, d, seen) for a in e.args[1:2])
        if name == "join" and isinstance(e.func, ast.Attribute) and len(e.args) == 1:
            return self.declared(e.func.value, d, seen) and self._items(e.args[0], d, seen)
        return False

    def _items(self, e: ast.AST, d: int, seen: frozenset[str]) -> bool:
        """Every item of the list ``e`` is declared text."""
        if isinstance(e, (ast.List, ast.Tuple)):
            return all(self.declared(x, d, seen) for x in e.elts)
        if isinstance(e, ast.Name) and e.id not in self.unknown and e.id in self.values:
            return all(self._items(v, d - 1, seen) for v in self.values[e.id]) if d > 0 \
                else False
        return False
