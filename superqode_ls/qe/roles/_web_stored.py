"""Stored XSS (``_web_flows``' ``stored-xss``): a value read from the
database rendered through a path that marks it safe, so what one user
saved runs as script in another's browser:

- a view hands a template a value read from the database (an ORM query:
  ``Task.objects.get(...)``, ``Post.query.all()``, ``get_object_or_404``;
  a cursor's ``execute(...).fetchone()``; or a project function that
  returns one, such as ``posts_db.get_post(id)`` in ``db.py``) and the
  template prints it, its fields or the items of a loop over it with
  ``|safe`` or inside ``{% autoescape false %}``;
- ``Markup(...)`` / ``mark_safe(...)`` of such a value (or of flask-login's
  ``current_user``, a database row) in the view itself.

Reported at the render (or ``Markup``) line, medium: the stored text is
usually, not always, a user's. Where a function of the same file writes
request data (``Post(body=request.form["body"])``, ``posts_db.add_post(...,
article, ...)``, ``task.text = request.POST["text"]``, an ``INSERT`` built
from it), the finding names that write too. A value the request gave
directly is ``reflected-xss``; a value with no database read in it (a
constant, a setting) stays quiet.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from ...models import Severity
from ._web_sinks import Hit, _func_name
from ._web_templates import Read, first_unsafe, rendered, safe_use

# a query's last call: what hands back rows
_ROWS = {"fetchone", "fetchall", "fetchmany", "first", "one", "one_or_none", "scalar",
         "scalars", "all", "get", "filter", "filter_by", "get_or_404", "first_or_404",
         "order_by", "limit", "paginate", "exclude", "select_related", "values", "execute",
         "latest", "last", "earliest"}
# what a query chain goes through (``Post.query``, ``Task.objects``,
# ``db.execute``); not ``session``: Flask's is the signed cookie
# (``session.get("user")``), and SQLAlchemy's goes through query/execute
_DB_OWNERS = {"query", "objects", "cursor", "execute", "db", "conn", "connection"}
_DB_CALLS = {"get_object_or_404", "get_list_or_404", "query_db"}
# a database row flask-login keeps for the request
_DB_NAMES = {"current_user"}
_MARK_SAFE = {"Markup", "mark_safe"}
# a call that saves what it is given (its name says so)
_WRITES = re.compile(r"(?i)^(add|create|insert|save|update|new|store|write|edit|register|post"
                     r"|comment|bulk_create|get_or_create|update_or_create)(_\w*)?$")
_SQL_WRITE = re.compile(r"(?i)\b(insert\s+into|update\s+\w+\s+set)\b")

# a template whose name says it is no page (modoboa's
# ``imap_migration/offlineimap.conf``, a plain-text mail's ``.txt``): what it
# prints unescaped lands in a file or a text body, not in a browser's HTML
_NOT_A_PAGE = re.compile(r"(?i)\.(conf|cfg|ini|txt|sh|ya?ml|toml|env|service|py|sql|csv)$")

# (call) -> True where it returns what a project function read from the database
Returns = Callable[[ast.Call], bool]


def _chain(node: ast.AST) -> set[str]:
    """The names along ``a.b(c).d`` (``Post``, ``query``, ``filter_by``...)."""
    out = set()
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            if isinstance(node, ast.Name):
                out.add(node.id)
            return out


def db_read(node: ast.AST, values: dict[str, ast.AST], returns: Returns, depth: int = 2) -> bool:
    """An expression holding a value read from the database (not one that
    went through ``Markup()``, reported itself, nor through an escape, a
    sanitiser or a number's conversion, nor one drawn as a QR code)."""
    for n in _walk_unmarked(node):
        if isinstance(n, ast.Name) and n.id in _DB_NAMES:
            return True
        if isinstance(n, ast.Name) and depth and n.id in values and values[n.id] is not node \
                and db_read(values[n.id], values, returns, depth - 1):
            return True
        if isinstance(n, ast.Call):
            name = _func_name(n)
            if name in _DB_CALLS or returns(n):
                return True
            if name in _ROWS and isinstance(n.func, ast.Attribute) \
                    and _chain(n.func.value) & _DB_OWNERS:
                return True
    return False


# What makes stored text safe to mark (an escape, an HTML sanitiser), and
# what draws it as an image rather than printing it (securedrop's
# ``Markup(user.totp.qrcode_svg(user.username))``: the name is encoded in the
# QR code's squares, never written into the markup as text).
_MADE_SAFE = {"escape", "conditional_escape", "escape_silent", "clean", "linkify",
              "sanitize", "sanitise", "quote", "urlencode", "quote_plus", "int", "float",
              "len", "bool"}
_DRAWN = re.compile(r"(?i)^(?:make_|to_|render_)?(?:qr_?code|barcode)(?:_\w+)?$")


def _walk_unmarked(node: ast.AST) -> Iterator[ast.AST]:
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Call) and (_func_name(n) in _MARK_SAFE or _func_name(n) in _MADE_SAFE
                                        or _DRAWN.match(_func_name(n))):
            continue
        yield n
        todo.extend(ast.iter_child_nodes(n))


def stored_xss(call: ast.Call, values: dict[str, ast.AST], rel: str, read: Read | None,
               returns: Returns, write: Callable[[ast.AST, str], str]) -> Iterator[Hit]:
    """The hit of one render or ``Markup`` call, if it marks stored data safe."""
    name = _func_name(call)
    if name in _MARK_SAFE:
        if call.args and db_read(call.args[0], values, returns):
            yield _hit(call, f"{name}() marks it safe", write(call.args[0], ""))
        return
    if read is None:
        return
    found = rendered(call, values)
    if found is None:
        return
    template, context = found
    if _NOT_A_PAGE.search(template):
        return  # a configuration or plain-text file: no browser reads it as HTML
    unsafe = first_unsafe(rel, template, [k for k, v in context.items()
                                          if db_read(v, values, returns)], read, safe_use)
    if unsafe is not None:
        key, path, line = unsafe
        yield _hit(call, f"{path}:{line} prints {key!r} with |safe or autoescape off",
                   write(context[key], key))


def _hit(call: ast.Call, how: str, write: str) -> Hit:
    saved = f" It is saved from request data by {write}." if write else ""
    return (call, "stored-xss", "Stored data rendered unescaped",
            (f"A value read from the database goes into the page unescaped ({how}): text a "
             f"user saved runs as script in every reader's browser (stored XSS).{saved} "
             "Let the template escape it, or clean it with an HTML sanitiser (nh3, bleach) "
             "when it is saved."), Severity.medium)


def writes(call: ast.Call, owners: set[str], values: dict[str, ast.AST]) -> bool:
    """A call that saves what it is given into what the read came from
    (``owners``: the names along the read, ``Post`` of ``Post.query``,
    ``posts_db`` of ``posts_db.get_post``): that model's constructor, a
    call named for saving on it, an INSERT or UPDATE."""
    name = _func_name(call)
    if isinstance(call.func, ast.Name):
        return name in owners and name[:1].isupper()
    if _WRITES.match(name) and _chain(call.func) & owners:
        return True
    sql = call.args[0] if name == "execute" and call.args else None
    if isinstance(sql, ast.Name):
        sql = values.get(sql.id)  # query = f"INSERT ..."; db.execute(query)
    return sql is not None and any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and _SQL_WRITE.search(n.value)
        for n in ast.walk(sql))


def owners_of(node: ast.AST, values: dict[str, ast.AST]) -> set[str]:
    """The names along a read (through the local names it uses), less the
    query machinery every read shares."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            out |= _chain(n.func)
        elif isinstance(n, ast.Name) and n.id in values and values[n.id] is not node:
            out |= {m for c in ast.walk(values[n.id]) if isinstance(c, ast.Call)
                    for m in _chain(c.func)}
    return out - _DB_OWNERS - _ROWS - _DB_CALLS
