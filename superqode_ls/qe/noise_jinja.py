"""What a jinja2 ``Environment`` (bandit B701) renders, from the module and
the project's own template files: when every template it can render is a
text file that is not HTML (``tox.jinja`` of tox.ini lines,
``piccolo_conf.py.jinja``, a workflow's ``.yml.jinja``), autoescape has no
markup to protect and HTML-escaping would corrupt the output.

The templates come from the module: the names it passes to
``get_template`` / ``select_template`` when all are literals, otherwise every
file of the ``FileSystemLoader`` folder, which must resolve inside the
project (``Path(__file__).parent / "templates"``,
``os.path.join(os.path.dirname(__file__), "templates")``). A template's kind
is its name (``.html``, ``.xml`` -> HTML; ``.py``, ``.ini``, ``.yml``,
``.dot`` -> text, the template extension stripped first); a name that says
neither is judged by its text: any tag in it makes it HTML. A folder that
does not resolve, a loader of another kind, a missing template or any HTML
one keeps the finding. The files are only read, never run.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from .ast_index import index, module_assignments
from .roles._common import read_prefix

# One judgement of a template's output by its name, for jinja2 (B701) and
# Mako (B702, noise_library.py): the engine's extension is stripped first.
_TEMPLATE_EXT = re.compile(r"(?i)\.(?:jinja2?|j2|mako|tmpl|tpl|template)$")
_HTML_EXT = re.compile(r"(?i)\.(?:html?|xhtml|xml|svg|shtml|jsp|php|vue|jinja_raw)$")
_TEXT_EXT = re.compile(r"(?i)\.(?:py|pyi|sql|ini|cfg|toml|ya?ml|json|txt|rst|md|sh|csv|dot|"
                       r"gv|conf|env|tf|dockerfile|c|h|rs|go|ts|proto|graphql|ps1|bat)$")
_ASSET_EXT = re.compile(r"(?i)\.(?:png|jpe?g|gif|ico|webp|woff2?|ttf|eot|pyc|css|map)$")
_TAG = re.compile(r"<(?:!doctype|/?[A-Za-z][\w:-]*)(?:\s[^<>]*)?/?>", re.IGNORECASE)
# A template that pulls in another (whose kind this text does not say).
_PULLS = re.compile(r"\{%-?\s*(?:include|extends|import|from)\b")
_LOADS = frozenset({"get_template", "select_template", "get_or_select_template"})
_MAX_FILES = 200
_MAX_BYTES = 256 * 1024


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _module_values(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level names bound exactly once (a rebound name resolves to nothing)."""
    seen: dict[str, ast.expr | None] = {}
    for _, target, value in module_assignments(tree):
        if isinstance(target, ast.Name):
            seen[target.id] = None if target.id in seen else value
    return {k: v for k, v in seen.items() if v is not None}


def _path(node: ast.expr | None, here: Path, names: dict[str, ast.expr], depth: int = 0) -> Path | None:
    """The folder ``node`` names, for the few ways code roots a path at its
    own file; anything else (a parameter, the working directory) is None."""
    if node is None or depth > 12:
        return None
    again = lambda n: _path(n, here, names, depth + 1)
    if isinstance(node, ast.Name):
        if node.id == "__file__":
            return here
        return again(names[node.id]) if node.id in names else None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        return p.parent if (p := again(node.value)) is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        if isinstance(node.right, ast.Constant) and isinstance(node.right.value, str):
            return p / node.right.value if (p := again(node.left)) is not None else None
        return None
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    fn = _name(node.func)
    if fn in ("resolve", "absolute") and isinstance(node.func, ast.Attribute) and not node.args:
        return again(node.func.value)
    if len(node.args) == 1 and fn in ("Path", "PurePath", "abspath", "realpath", "normpath"):
        return again(node.args[0])
    if len(node.args) == 1 and fn == "dirname":
        return p.parent if (p := again(node.args[0])) is not None else None
    if fn == "join" and node.args:
        p = again(node.args[0])
        for part in node.args[1:]:
            if p is None or not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
                return None
            p = p / part.value
        return p
    return None


def _loader_folder(env: ast.Call, here: Path, names: dict[str, ast.expr]) -> Path | None:
    loader = next((k.value for k in env.keywords if k.arg == "loader"), None)
    if isinstance(loader, ast.Name) and loader.id in names:
        loader = names[loader.id]
    if not (isinstance(loader, ast.Call) and _name(loader.func) == "FileSystemLoader"):
        return None
    arg = loader.args[0] if loader.args else next(
        (k.value for k in loader.keywords if k.arg == "searchpath"), None)
    return _path(arg, here, names)


def _template_names(tree: ast.Module, env: ast.Call) -> list[str] | None:
    """The literal names the module loads from ``env`` (bound to a module
    name or called on directly), or None when any name is computed."""
    bound = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and node.value is env
             for t in node.targets if isinstance(t, ast.Name)}
    out: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _LOADS):
            continue
        on = node.func.value
        if not (on is env or isinstance(on, ast.Name) and on.id in bound):
            continue
        arg = node.args[0] if node.args else None
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            return None
        out.append(arg.value)
    return out or None


def _string_templates(tree: ast.Module, env: ast.Call,
                      names: dict[str, ast.expr]) -> list[str] | None:
    """The texts of the templates ``env`` renders when its only use is
    ``from_string`` over literals (called on directly or on the one name
    it is bound to), or None when it is used any other way."""
    bound = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and node.value is env
             for t in node.targets if isinstance(t, ast.Name)}
    if len(bound) > 1:
        return None
    out: list[str] = []
    parents = index(tree).parents
    uses = [env] + [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in bound
                    and isinstance(n.ctx, ast.Load)]
    for use in uses:
        attr = parents.get(use)
        call = parents.get(attr) if attr is not None else None
        if use is env and bound:
            continue  # bound: its uses are the name's
        if not (isinstance(attr, ast.Attribute) and attr.attr == "from_string"
                and isinstance(call, ast.Call) and call.func is attr and len(call.args) == 1):
            return None
        arg = call.args[0]
        if isinstance(arg, ast.Name):
            arg = names.get(arg.id, arg)
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            return None
        out.append(arg.value)
    return out or None


def kind_by_name(name: str) -> str | None:
    """"html" or "text" for a template whose name says what it renders
    (``page.html.jinja``, ``script.py.mako``), else None (``page.mako``)."""
    if _HTML_EXT.search(name):
        return "html"
    bare = _TEMPLATE_EXT.sub("", name)
    if _HTML_EXT.search(bare):
        return "html"
    return "text" if _TEXT_EXT.search(bare) else None


def _kind(file: Path) -> str | None:
    """"html", "text", "asset" or None (unreadable) for one template file."""
    name = file.name
    if by_name := kind_by_name(name):
        return by_name
    if _ASSET_EXT.search(name):
        return "asset"
    raw = read_prefix(file, _MAX_BYTES)  # a FIFO planted there must not hang the filter
    if raw is None:
        return None
    return "html" if _TAG.search(raw.decode("utf-8", "replace")) else "text"


def _inside(path: Path, root: Path) -> Path | None:
    try:
        real = Path(os.path.realpath(path))
        real.relative_to(os.path.realpath(root))
    except (OSError, ValueError):
        return None
    return real


def renders_no_html(tree: ast.Module, line: int, module: Path, root: Path) -> str | None:
    """Why the jinja2 Environment on ``line`` renders no HTML, or None."""
    env = next((c for c in ast.walk(tree) if isinstance(c, ast.Call) and c.lineno == line
                and _name(c.func) == "Environment"), None)
    if env is None:
        return None
    names = _module_values(tree)
    texts = _string_templates(tree, env, names)
    if texts is not None:
        if any(_TAG.search(t) or _PULLS.search(t) for t in texts):
            return None
        return ("the only templates this Environment renders are the module's own text with no "
                "markup (from_string over a literal: Markdown, plain text): autoescape has no "
                "HTML to protect, and HTML-escaping would corrupt the output")
    folder = _loader_folder(env, module, names)
    if folder is None or (folder := _inside(folder, root)) is None or not folder.is_dir():
        return None
    wanted = _template_names(tree, env)
    if wanted is not None:
        files = [folder / w for w in wanted]
    else:
        files = []
        for base, dirs, found in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            files += [Path(base) / n for n in sorted(found) if not n.startswith(".")]
            if len(files) > _MAX_FILES:
                return None
    kinds: dict[str, str | None] = {}
    for file in files:
        # a link out of the folder, a FIFO or a missing file: nothing is proved
        if (real := _inside(file, folder)) is None or not real.is_file():
            return None
        kinds[str(file)] = _kind(real)
    if set(kinds.values()) - {"asset"} != {"text"}:
        return None
    shown = ", ".join(sorted({Path(n).name for n, k in kinds.items() if k == "text"})[:3])
    return (f"every template this Environment renders is text, not HTML ({shown}): "
            "autoescape has no markup to protect, and HTML-escaping would corrupt the output")
