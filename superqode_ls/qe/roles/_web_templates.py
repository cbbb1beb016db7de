"""Request text rendered unescaped by a template (``_web_flows``' reflected
XSS through a template file): ``render(request, "search.html", {"q": q})``
or ``render_template("search.html", q=q)`` with ``q`` from the request,
where the template prints it with ``|safe`` or inside ``{% autoescape
false %}`` (``off`` in Django). A template that prints it plainly (escaped)
stays quiet, and so does ``|safe`` on a value the request did not give.

Templates are looked up the way the frameworks find them: a ``templates/``
folder beside the view's module or above it. A name that leaves the
project (``..``, an absolute path) is not read.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ._web_sinks import _const_str, _func_name, _keyword

Read = Callable[[str], "str | None"]

# (call name) -> index of the template name, index of the context dict
RENDERS = {"render_template": (0, None), "render": (1, 2), "render_to_response": (0, 1),
           "TemplateResponse": (1, 2), "render_to_string": (0, 1)}
_AUTOESCAPE_OFF = re.compile(r"\{%-?\s*autoescape\s+(?:false|off)\s*-?%\}(.*?)"
                             r"\{%-?\s*endautoescape\s*-?%\}", re.DOTALL | re.IGNORECASE)


def rendered(call: ast.Call, values: dict[str, ast.AST]) -> tuple[str, dict[str, ast.AST]] | None:
    """The template a render call names and the values it gives it by key."""
    where = RENDERS.get(_func_name(call))
    if where is None:
        return None
    name_at, context_at = where
    name = _const_str(call.args[name_at]) if len(call.args) > name_at else \
        _const_str(_keyword(call, "template_name") or _keyword(call, "template_name_or_list"))
    if not name:
        return None
    out: dict[str, ast.AST] = {kw.arg: kw.value for kw in call.keywords if kw.arg}
    context = call.args[context_at] if context_at is not None and len(call.args) > context_at \
        else _keyword(call, "context")
    if isinstance(context, ast.Name):
        context = values.get(context.id)
    if isinstance(context, ast.Dict):
        out.update({k: v for key, v in zip(context.keys, context.values, strict=True)
                    if key is not None and (k := _const_str(key))})
    return name, out


def template_text(rel: str, name: str, read: Read) -> tuple[str, str] | None:
    """The template file ``name`` seen from the module ``rel``, and its path."""
    if name.startswith("/") or ".." in name.split("/"):
        return None  # fail closed: never read outside the project
    parts = rel.split("/")[:-1]
    for depth in range(len(parts), -1, -1):
        path = "/".join([*parts[:depth], "templates", name])
        text = read(path)
        if text is not None:
            return path, text
    return None


def first_unsafe(rel: str, name: str, keys: list[str], read: Read,
                 line_of: Callable[[str, str], int | None]) -> tuple[str, str, int] | None:
    """The first of ``keys`` the template ``name`` (seen from ``rel``) prints
    unescaped, by ``line_of`` (``unsafe_line``, ``safe_use``): key, the
    template's path and the line."""
    found = template_text(rel, name, read) if keys else None
    if found is None:
        return None
    path, text = found
    for key in keys:
        line = line_of(text, key)
        if line is not None:
            return key, path, line
    return None


def unsafe_line(text: str, key: str) -> int | None:
    """The line where the template prints ``key`` unescaped, if any."""
    safe = re.compile(r"\{\{-?\s*" + re.escape(key) + r"\s*\|\s*safe\b")
    plain = re.compile(r"\{\{-?\s*" + re.escape(key) + r"\s*(?:-?\}\}|\|)")
    m = safe.search(text)
    if m:
        return text.count("\n", 0, m.start()) + 1
    for block in _AUTOESCAPE_OFF.finditer(text):
        inner = plain.search(block.group(1))
        if inner:
            return text.count("\n", 0, block.start(1) + inner.start()) + 1
    return None


def safe_use(text: str, key: str) -> int | None:
    """The line where the template prints ``key``, one of its fields
    (``key.title``, ``key["body"]``) or an item of a loop over it (``{% for
    c in key %}...{{ c.text|safe }}``) unescaped, if any (stored XSS)."""
    names = {key} | {m.group(1) for m in re.finditer(
        r"\{%-?\s*for\s+(\w+)(?:\s*,\s*\w+)?\s+in\s+" + re.escape(key) + r"\b", text)}
    alt = "|".join(re.escape(n) for n in sorted(names))
    value = r"\{\{-?\s*(?:" + alt + r")(?:\.\w+|\[[^\]]*\])*\s*"
    m = re.search(value + r"\|\s*safe\b", text)
    if m:
        return text.count("\n", 0, m.start()) + 1
    plain = re.compile(value + r"(?:-?\}\}|\|)")
    for block in _AUTOESCAPE_OFF.finditer(text):
        inner = plain.search(block.group(1))
        if inner:
            return text.count("\n", 0, block.start(1) + inner.start()) + 1
    return None
