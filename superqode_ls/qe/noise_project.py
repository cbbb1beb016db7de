"""What the project's layout and the flagged module prove about a finding
(noise.py, after the library step), each a rule a maintainer would apply:

- **a maintainer's script** (security and secrets findings; a provider's
  token stays, a dead import stays): the packaging script (``setup.py``
  calling ``setup(``), the project's invoke tasks (a module that imports
  ``invoke``'s ``task``), and, in a project that ships a package and is no
  web application, a script beside it that the package never imports and
  the packaging files never name (a top-level folder that is no package,
  ``scripts/dump_global.py``; a top-level module run as ``__main__``,
  ``updatezinfo.py``). It runs on a maintainer's machine with their
  inputs (a download from a fixed URL, the package's own data, a test
  password); in a web application, or once the packaging ships it, it stays;
- **a package's ``__init__`` importing from its own modules** (F401): the
  import makes the name importable from the package, which is what the
  module is for (an API or a name kept for compatibility); an unused import
  of another package there stays;
- **``exec`` of a Python file the code names** (B102):
  ``exec(open(os.path.join(pkg, "_version.py")).read())``, a user's own
  ``hooks.py`` in their data folder: whoever writes that file chooses what
  runs in any case; a path a caller passes, code from a request, the
  network or a string built in the code stays;
- **a password rule's value that is itself a password setting's name**
  (B105-B107: ``{"password": "passwd"}`` renames a key): no password;
- **``pickle.load`` of the package's own data file** (B301): the file is
  opened on a path made from the module's ``__file__`` (babel's locale
  data), directly or through a module-level name or a function of the
  module; a path from anywhere else stays;
- **an unused import in alembic's ``env.py``** (F401, a module that takes
  ``from alembic import context``): it is imported for its side effects
  (microblog-api's ``from microblog import app`` configures the database);
  the same import elsewhere stays;
- **an unused import the module's doctests read** (F401, where the project
  runs its doctests: ``--doctest-modules``, ``DocTestSuite``, Sphinx's
  doctest; see ``doctests``): glom's ``from pprint import pprint`` serves its
  ``>>> pprint(...)`` examples; where no doctests run, it stays;
- **a demo Django site's settings the package does not ship** (django-silk's
  ``project/``): see ``noise_demo``; a settings module for CI or a
  developer's machine beside the one the entry points use (wger's
  ``settings/ci.py``): see ``noise_settings``;
- **a file the project's pre-commit configuration excludes from every hook**
  (a top-level ``exclude:``, black's ``^(profiling/|tests/data/)``): a
  linter's or bandit's finding there is in data or scripts the project's
  own linters never read; a provider's token stays.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import yaml

from ..models import Finding, Severity
from .ast_index import index
from .context import mark_noise
from .doctests import runs_doctests, tree_doctest_names, unused_import_names
from .noise_demo import DemoSites, demo_settings
from .noise_library import is_web_project, module_of, python_files
from .noise_paths import provider_token
from .noise_reexports import OWN_REEXPORT, own_import
from .noise_settings import side_settings
from .roles._common import read_head, read_prefix

Lines = Callable[[str], "list[str] | None"]

_SETUP_CALL = re.compile(r"^\s*(?:setuptools\.)?setup\(", re.MULTILINE)
_INVOKE_TASK = re.compile(r"^\s*from\s+invoke\s+import\s+[^\n]*\btask\b", re.MULTILINE)
_MAIN_GUARD = re.compile(r"^if\s+__name__\s*==\s*['\"]__main__['\"]", re.MULTILINE)
_PACKAGING = ("setup.py", "setup.cfg", "pyproject.toml")
_SCRIPT_CATEGORIES = frozenset({"security", "secrets"})
_RULES = frozenset({"F401", "B102", "B301", "B105", "B106", "B107"})
# a value that is itself the name of a password setting ({"password":
# "passwd"}) renames a key: it is no password
_PASSWORD_NAME = re.compile(r"(?i)^(db_?|database_?)?(pass(word|wd)?|pwd)$")


def project_noise(findings: list[Finding], lines_of: Lines | None,
                  root: str | os.PathLike[str] | None,
                  canonical: Callable[[str], str]) -> list[Finding]:
    """``findings`` with what the project's layout and the flagged module
    prove not worth acting on marked as noise (severity lowered one level
    for a maintainer's script, as for the project's dev tooling)."""
    if lines_of is None:
        return findings
    base = Path(root) if root is not None else None
    scripts: dict[str, str | None] = {}
    trees: dict[str, ast.Module | None] = {}
    docs: dict[str, frozenset[str]] = {}  # file -> the names its doctests read
    ran: list[str | None] = []  # where the project runs its doctests, read once
    webs: list[bool] = []
    imports: list[set[str] | None] = []  # the project's imported names, read once

    def web() -> bool:
        if not webs:
            webs.append(base is None or is_web_project(base))
        return webs[0]

    excluded = precommit_exclude(base) if base is not None else None
    sites = DemoSites(base)
    out = []
    for f in findings:
        if f.noise is not None or not f.file or not f.file.endswith(".py"):
            out.append(f)
            continue
        if (excluded is not None and f.tool in _LINTERS and not provider_token(f)
                and excluded.search(f.file)):
            out.append(mark_noise(f, f"the project's pre-commit configuration excludes the file "
                                  f"from every hook (exclude: {excluded.pattern}): data or "
                                  "scripts its own linters never read", Severity.info))
            continue
        if (why := demo_settings(f, sites, lines_of)) or (
                why := side_settings(f, base, lines_of)):
            out.append(mark_noise(f, why, Severity.low))
            continue
        if f.category in _SCRIPT_CATEGORIES and not provider_token(f):
            if f.file not in scripts:
                scripts[f.file] = _maintainer_script(f.file, lines_of, base, web, imports)
            if why := scripts[f.file]:
                out.append(mark_noise(f, why, f.severity.lower()))
                continue
        rule = canonical(f.rule_id)
        if rule in _RULES and f.range and (lines := lines_of(f.file)) is not None:
            if f.file not in trees:
                trees[f.file] = module_of(lines)
            tree = trees[f.file]
            why = None if tree is None else _why(f, rule, tree)
            if why is None and rule == "F401" and tree is not None and base is not None:
                if not ran:
                    ran.append(runs_doctests(base))
                if ran[0] is not None:
                    if f.file not in docs:
                        docs[f.file] = tree_doctest_names(tree)
                    why = _doctest_use(f, tree, ran[0], docs[f.file])
            if why:
                f = mark_noise(f, why, Severity.info if rule == "F401" else Severity.low)
        out.append(f)
    return out


_LINTERS = frozenset({"ruff", "bandit", "mypy"})
_PRECOMMIT = ".pre-commit-config.yaml"
# pre-commit's exclude is a Python regex the project wrote: only a plain one
# is used (no quantified group, few quantifiers, short), so that a hostile
# pattern cannot make the filter backtrack for ever on a path.
_RISKY_REGEX = re.compile(r"\)[*+?{]|\{|\(\?[^:]")


def precommit_exclude(root: Path) -> re.Pattern[str] | None:
    """The top-level ``exclude:`` regex of the project's pre-commit
    configuration (black's ``^(profiling/|tests/data/)``), or None when
    there is none, it is not a plain pattern, or the file is unreadable."""
    path = root / _PRECOMMIT
    try:
        raw = read_prefix(path, 256_001)
        if raw is None or len(raw) > 256_000:
            return None
        data = yaml.safe_load(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    pat = data.get("exclude") if isinstance(data, dict) else None
    if not isinstance(pat, str) or not pat.strip() or pat.strip() == "^$" or len(pat) > 300:
        return None
    if _RISKY_REGEX.search(pat) or sum(pat.count(q) for q in "*+?") > 4:
        return None
    try:
        return re.compile(pat)
    except re.error:
        return None


def _why(f: Finding, rule: str, tree: ast.Module) -> str | None:
    assert f.file is not None and f.range is not None
    line = f.range.start_line
    if rule in ("B105", "B106", "B107"):
        if (value := _password_name_value(tree, line)) is not None:
            return (f"the value {value!r} is the name of a password setting (a key "
                    "renamed or looked up), not a password")
        return None
    if rule == "F401" and f.file.rsplit("/", 1)[-1] == "__init__.py":
        return OWN_REEXPORT if own_import(tree, line, f.file) else None
    elif rule == "F401" and f.file.rsplit("/", 1)[-1] == "env.py" and _alembic_env(tree):
        return ("alembic's env.py imports the application and its models for their side "
                "effects (they configure the database and register the tables autogenerate "
                "compares): removing the import breaks the migrations")
    elif rule == "B102":
        if _exec_of_file(tree, line):
            return ("exec of a Python file's text (the project's own version file, a user's "
                    "hook file): whoever writes that file chooses what runs in any case")
    elif rule == "B301" and _own_data_load(tree, line):
        return ("pickle of the package's own data file (its path is made from the "
                "module's __file__), not of anything a user or the network gives")
    return None


def _doctest_use(f: Finding, tree: ast.Module, where: str, names: frozenset[str]) -> str | None:
    """Why an unused import is used: the module's docstring examples read
    the name and the project runs its doctests (glom's ``pprint``)."""
    assert f.range is not None
    hit = sorted(unused_import_names(f.message, tree, f.range.start_line) & names)
    if not hit:
        return None
    return (f"used by the module's doctests, which the project runs ({where}): its "
            f"examples read {hit[0]!r}; removing the import fails them")


def _alembic_env(tree: ast.Module) -> bool:
    """The module is an alembic environment script: it takes alembic's
    ``context`` at its top level (``from alembic import context``)."""
    return any(isinstance(n, ast.ImportFrom) and n.module == "alembic"
               and any(a.name == "context" for a in n.names) for n in tree.body)


def _password_name_value(tree: ast.Module, line: int) -> str | None:
    """The value on ``line`` given to a password key, when every such value
    there is itself a password setting's name (``{"password": "passwd"}``)."""
    pairs: list[tuple[ast.AST | None, ast.AST]] = []
    for n in index(tree).nodes_at(line):
        if isinstance(n, ast.Dict):
            pairs += list(zip(n.keys, n.values, strict=True))
        elif isinstance(n, ast.keyword) and n.arg:
            pairs.append((ast.Constant(n.arg), n.value))
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(
                n.targets[0], ast.Name):
            pairs.append((ast.Constant(n.targets[0].id), n.value))
    values = [v.value for k, v in pairs if isinstance(k, ast.Constant) and isinstance(
        k.value, str) and _PASSWORD_NAME.match(k.value.lower().rsplit("_", 1)[-1])
              and isinstance(v, ast.Constant) and isinstance(v.value, str)]
    if values and all(_PASSWORD_NAME.match(v) for v in values):
        return values[0]
    return None


# -- a maintainer's script ---------------------------------------------------


def _maintainer_script(rel: str, lines_of: Lines, root: Path | None, web: Callable[[], bool],
                       imports: list[set[str] | None]) -> str | None:
    parts = rel.split("/")
    lines = lines_of(rel)
    if lines is None:
        return None
    text = "\n".join(lines)
    if parts[-1] == "setup.py" and _SETUP_CALL.search(text):
        return "the packaging script: it runs on a maintainer's machine, with their inputs"
    if _INVOKE_TASK.search(text):
        return "the project's invoke tasks: dev tooling run on a maintainer's machine"
    if root is None or len(parts) > 2:
        return None
    if len(parts) == 2:
        folder = root / parts[0]
        if (folder / "__init__.py").exists():
            return None
    elif not _MAIN_GUARD.search(text):
        return None
    if not _ships_package(root) or web():
        return None
    stem = parts[-1][:-3]
    # a top-level folder that any module imports is a package (a namespace
    # package has no __init__.py), not a folder of scripts
    names = [stem] if len(parts) == 1 else [stem, parts[0]]
    if _named_by_packaging(root, rel, stem):
        return None
    if not imports:
        imports.append(imported_names(root))
    if imports[0] is None or any(name in imports[0] for name in names):
        return None
    where = f"the {parts[0]}/ folder (no package)" if len(parts) == 2 else "the top level"
    return (f"a maintainer's script in {where}: the project ships a package that never "
            "imports it and its packaging does not name it")


@lru_cache(maxsize=64)
def _ships_package(root: Path) -> bool:
    """A package at the top level or under ``src/``: the code users install."""
    for base in (root, root / "src"):
        try:
            entries = list(base.iterdir())
        except OSError:
            continue
        if any(e.is_dir() and (e / "__init__.py").exists() for e in entries):
            return True
    return False


# A line of the packaging that runs a script at build time (setup.py's
# ``check_call([sys.executable, 'scripts/x.py'])``) does not install it.
_RUNS = re.compile(r"subprocess|check_call|check_output|\bsystem\(|\brun\(|\bcall\(")


def _named_by_packaging(root: Path, rel: str, stem: str) -> bool:
    """The packaging files install it (``py_modules``, ``scripts``, an entry point)."""
    pattern = re.compile(rf"['\"]{re.escape(stem)}['\"]|{re.escape(rel)}|\b{re.escape(stem)}:")
    for name in _PACKAGING:
        text = read_head(root / name, 256_000)
        if text is None:
            continue
        if any(pattern.search(line) and not _RUNS.search(line) for line in text.splitlines()):
            return True
    return False


_SKIP = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox",
                   "build", "dist", ".superqode"})


_IMPORT_LINE = re.compile(r"(?m)^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import|import[ \t]+([^\n#]+))")


def imported_names(root: Path, limit: int = 3000) -> set[str] | None:
    """Every module name the project's modules import, each dotted prefix
    too (``from a.b import c``: ``a``, ``a.b``), read in one bounded walk;
    None past the bound (then every script counts as imported and stays)."""
    names: set[str] = set()
    for path in python_files(root, _SKIP, limit):
        if path is None:
            return None
        text = read_head(path, 65536)
        if text is None:
            continue
        for m in _IMPORT_LINE.finditer(text):
            mods = [m.group(1)] if m.group(1) else [
                part.split(" as ")[0].strip() for part in m.group(2).split(",")]
            for mod in mods:
                parts = mod.strip("() ").split(".")
                names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return names


# -- the module's own code ---------------------------------------------------


def _calls_at(tree: ast.Module, line: int, name: str) -> list[ast.Call]:
    return [n for n in index(tree).calls_over(line) if _name(n.func) == name]


def _name(e: ast.AST) -> str:
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute):
        return e.attr
    return ""


def _function_at(tree: ast.Module, line: int) -> ast.AST:
    return index(tree).function_at(line) or tree


def _mentions_request(scope: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "request" for n in ast.walk(scope))


def _assigned(scope: ast.AST, name: str) -> list[ast.AST]:
    """What ``name`` is bound to in ``scope`` (``x = ...``, ``with ... as x``)."""
    out: list[ast.AST] = []
    for n in ast.walk(scope):
        if isinstance(n, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in n.targets):
            out.append(n.value)
        elif isinstance(n, ast.withitem) and isinstance(n.optional_vars, ast.Name) \
                and n.optional_vars.id == name:
            out.append(n.context_expr)
    return out


def _opened(e: ast.AST, scope: ast.AST) -> list[ast.AST] | None:
    """The path arguments of the ``open`` that gives the file object ``e``
    (``open(p)``, ``Path(p).open()``, a name bound to one), or None."""
    if isinstance(e, ast.Name):
        bound = _assigned(scope, e.id)
        if not bound:
            return None
        paths: list[ast.AST] = []
        for b in bound:
            got = _opened(b, scope)
            if got is None:
                return None
            paths += got
        return paths
    if isinstance(e, ast.Call):
        if isinstance(e.func, ast.Name) and e.func.id in ("open", "io.open") and e.args:
            return [e.args[0]]
        if isinstance(e.func, ast.Attribute) and e.func.attr == "open":
            return [e.func.value]
    return None


def _file_text(e: ast.AST, scope: ast.AST, seen: frozenset[str] = frozenset()) -> bool:
    """``e`` is the text of a Python file the code names: ``f.read()`` of
    ``open(<path ending in a '.py' literal>)``, ``Path(...).read_text()`` of
    one, ``compile(<that>, ...)``, or a name bound to one of those (``seen``:
    the names on the way, so ``code = compile(code, ...)`` ends)."""
    if isinstance(e, ast.Call):
        if isinstance(e.func, ast.Name) and e.func.id == "compile" and e.args:
            return _file_text(e.args[0], scope, seen)
        if isinstance(e.func, ast.Attribute) and e.func.attr == "read_text":
            return _named_python_file(e.func.value, scope)
        if isinstance(e.func, ast.Attribute) and e.func.attr == "read" and not e.args:
            paths = _opened(e.func.value, scope)
            return bool(paths) and all(_named_python_file(p, scope) for p in paths)
    if isinstance(e, ast.Name) and e.id not in seen:
        bound = _assigned(scope, e.id)
        return bool(bound) and all(_file_text(b, scope, seen | {e.id}) for b in bound)
    return False


def _named_python_file(path: ast.AST, scope: ast.AST) -> bool:
    """The path names its Python file in the code (``"hooks.py"``,
    ``os.path.join(pkg, "_version.py")``) and takes nothing from the
    function's parameters (a path a caller passes stays)."""
    named = any(isinstance(n, ast.Constant) and isinstance(n.value, str)
                and n.value.endswith(".py") for n in ast.walk(path))
    args = getattr(scope, "args", None)
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} if args else set()
    return named and not _mentions(path, params)


def _exec_of_file(tree: ast.Module, line: int) -> bool:
    scope = _function_at(tree, line)
    if _mentions_request(scope):
        return False
    calls = _calls_at(tree, line, "exec")
    return bool(calls) and all(c.args and _file_text(c.args[0], scope) for c in calls)


def _file_names(tree: ast.Module) -> tuple[set[str], dict[str, ast.AST]]:
    """Module-level names made from ``__file__``, and the module's functions."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _mentions(node.value, {"__file__"}):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef,
                                                                ast.AsyncFunctionDef))}
    return names, functions


def _mentions(e: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(e))


def _from_file(e: ast.AST, scope: ast.AST, names: set[str], functions: dict[str, ast.AST],
               depth: int = 3) -> bool:
    """The path ``e`` is made from ``__file__``: directly, through a module
    name made from it, a local name bound to such a path, or a call of the
    module's function whose every return is one."""
    if depth < 0:
        return False
    if _mentions(e, names | {"__file__"}):
        return True
    for n in ast.walk(e):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            bound = _assigned(scope, n.id)
            if bound and all(_from_file(b, scope, names, functions, depth - 1) for b in bound):
                return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in functions:
            fn = functions[n.func.id]
            returns = [r.value for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value]
            if returns and all(_from_file(r, fn, names, functions, depth - 1) for r in returns):
                return True
    return False


def _own_data_load(tree: ast.Module, line: int) -> bool:
    calls = [c for c in _calls_at(tree, line, "load") if c.args]
    if not calls:
        return False
    scope = _function_at(tree, line)
    names, functions = _file_names(tree)
    for call in calls:
        paths = _opened(call.args[0], scope)
        if not paths or not all(_from_file(p, scope, names, functions) for p in paths):
            return False
    return True
