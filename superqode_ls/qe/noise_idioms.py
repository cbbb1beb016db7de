"""Noise rules for findings that are true to the letter but that the code
around them proves harmless or deliberate (called from ``qe/context.py``):

- a weak hash (B324) of fresh cryptographic randomness only
  (``sha1(os.urandom(64)).hexdigest()`` for a CSRF token): the digest is
  as unguessable as its input, the hash only formats it. A hash of
  anything else (a password, a user id next to the randomness) stays;
- a weak hash (B324) in a function the module uses only as an HMAC's
  digest (``digest_method = staticmethod(_lazy_sha1)``, ``digestmod=``):
  HMAC-SHA1 rests on no collision resistance and is still sound (RFC 2104,
  RFC 6194). MD5 there, and a SHA-1 used anywhere else, stay;
- a module-level ``name = name`` (PLW0127) of an imported name: the
  re-export idiom (it marks the import used); of a name the module binds
  nowhere else, the module is run with that name given (exec with its
  globals) and the line names it; inside a function, or of a name the
  module binds otherwise, it stays;
- a mutable default (B006), empty or of constants only, that the function
  only reads, and a call default (B008) of a class of the module that keeps
  no state (``noise_defaults``): nothing can change the shared object;
- ``DEBUG = True`` (``debug-mode``) in a development or test
  configuration: a config class named for it (``DevConfig``, ``TestingConfig``)
  in a module whose production class (``ProdConfig``) has debug off, or a
  settings package's development module (``settings/dev.py``) next to a
  production module that does not turn it on. A lone ``Config`` or
  ``settings.py`` with debug on, or a production class inheriting it, stays;
- syntax newer than the project's oldest Python (ruff: "Cannot use named
  assignment expression on Python 3.7 (syntax was added in Python 3.8)") in
  a script outside the project's packages and root (``extras/profiling/``,
  no ``__init__.py``): a developer's tool run with a newer Python, which no
  user installs. In a package, under ``src/``, at the root (``setup.py``),
  or any other syntax error, it stays;
- a syntax error in a notebook (``.ipynb``) of a project that ships a
  package: a demo run cell by cell (tqdm's exercise cell ``tqdm.`` under
  "# your code here"), never imported;
- an unused import inside ``try``/``except ImportError`` (ruff's F401 "to
  test for availability", Django's ``manage.py``): the import is the check;
  an app's own module imported in its ``AppConfig.ready()`` (wger's
  ``import wger.core.signals``): Django's side-effect import;
- a missing copyright notice (CPY001) in a file whose header is an SPDX
  license identifier: the notice is there in the standard form;
- a guarded web value, a debug server on the loopback address, a
  documentation example key: see ``qe/noise_guards.py``;
- a closure that never outlives its iteration (B023), an undefined name
  asked for under ``except NameError`` (F821): see ``qe/noise_closures.py``;
- TLS hostname checks turned off in the branch a setting chooses, beside one
  that turns them on: see ``qe/noise_tls.py``;
- tarfile's unchecked extraction (B202) on a call of the project's own
  function named for it (tox's ``safe_extractall(tar, path)``): bandit
  matches the name; the function's own ``extractall`` is judged where it is;
  and ``TarFile.extractall`` after a loop over the archive's members that
  raises on one (luigi's ``SafeExtractor``): every path is checked first;
- a zero-width space (PLE2515) in a string of natural-language text (Lao,
  Thai, Khmer and other scripts break words with it): the character is the
  text's own; in a string of ASCII text it stays.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..models import Finding, Severity
from .codegen import Scopes
from .noise_closures import closure_used_in_iteration, group_not_reused, name_error_handled
from .noise_defaults import callee, default_only_read
from .noise_guards import (
    DEBUG_RULES,
    GUARDED_RULES,
    allow_listed,
    documentation_example,
    local_debug_server,
)
from .noise_helpers import app_ready_import, members_checked, own_extract_helper
from .noise_tls import verify_chosen

Lines = Callable[[str], "list[str] | None"]

# The rules (canonical ids) these checks judge: only their files are parsed.
# (a secret-* rule too: ``is_idiom_rule``)
IDIOM_RULES = frozenset({"B324", "PLW0127", "B006", "B008", "B023", "B031", "TLS-NO-HOSTNAME-CHECK", "F821", "DEBUG-MODE", "INVALID-SYNTAX", "F401",
                         "PLE2515", "CPY001", "B105", "B106", "B107", "B202", *GUARDED_RULES,
                         *DEBUG_RULES})


def is_idiom_rule(rule: str) -> bool:
    """``rule`` (canonical) is one these checks judge."""
    return rule in IDIOM_RULES or rule.startswith("SECRET-")


def idiom_noise(f: Finding, rule: str, parsed: Callable[[], Scopes | None],
                lines: Lines | None) -> tuple[str, Severity] | None:
    """(why, the severity to show) when ``f`` is noise by one of the rules
    above, or None. ``rule``: the canonical rule id; ``parsed()``: the
    parsed module of ``f.file`` (None when it is not Python or does not
    parse), asked for only by the rules that need it."""
    if f.noise is not None or not f.file or not f.range:
        return None
    line = f.range.start_line
    if rule == "F401":
        if "test for availability" in (f.message or ""):
            return _AVAILABILITY, Severity.info
        scopes = parsed()
        why = app_ready_import(scopes, line) if scopes is not None else None
        return (why, Severity.info) if why else None
    if rule == "CPY001":
        head = (lines(f.file) or [])[:10] if lines is not None else []
        return (_SPDX, Severity.info) if any("SPDX-License-Identifier" in t for t in head) \
            else None
    if rule == "PLE2515":
        why = zero_width_space_in_text(f, lines) if lines is not None else None
        return (why, Severity.info) if why else None
    if rule == "INVALID-SYNTAX" and f.file.endswith(".ipynb"):
        why = notebook_beside_a_package(f, lines) if lines is not None else None
        return (why, Severity.low) if why else None
    if rule.startswith("SECRET-") or rule in ("B105", "B106", "B107"):
        text = lines(f.file) if lines is not None else None
        why = documentation_example(text[line - 1] if text and 0 < line <= len(text) else None)
        return (why, Severity.info) if why else None
    if rule == "INVALID-SYNTAX":
        # judged on its text: no parse (the file mostly does not parse anyway)
        why = newer_python_script(f, lines) if lines is not None else None
        return (why, Severity.low) if why else None
    scopes = parsed()
    if rule in DEBUG_RULES:
        why = (_dev_config_class(scopes, line) or local_debug_server(scopes, line)
               if scopes is not None else None) or (
            _dev_settings_module(f.file, lines) if lines is not None and rule != "B201" else None)
        return (why, Severity.low) if why else None
    if rule in GUARDED_RULES:
        why = allow_listed(scopes, line) if scopes is not None else None
        return (why, Severity.low) if why else None
    if scopes is None:
        return None
    if rule == "B324" and f.rule_id.lower() != "weak-password-hash":
        why = random_input_hash(scopes, line) or hmac_digest(scopes, line)
        return (why, Severity.low) if why else None
    if rule == "PLW0127":
        why = reexport_self_assignment(scopes, line)
        return (why, Severity.info) if why else None
    if rule in ("B006", "B008"):
        why = default_only_read(scopes, line, f.range.start_col - 1)
        return (why, Severity.info) if why else None
    if rule == "B023":
        why = closure_used_in_iteration(scopes, line, f.range.start_col - 1)
        return (why, Severity.info) if why else None
    if rule == "TLS-NO-HOSTNAME-CHECK":
        why = verify_chosen(scopes, line)
        return (why, Severity.low) if why else None
    if rule == "B031":
        why = group_not_reused(scopes, line, f.range.start_col - 1)
        return (why, Severity.info) if why else None
    if rule == "F821":
        why = name_error_handled(scopes, line, f.message or f.title or "")
        return (why, Severity.low) if why else None
    if rule == "B202":
        why = own_extract_helper(scopes, line) or members_checked(scopes, line)
        return (why, Severity.info) if why else None
    return None


# -- weak hashes -----------------------------------------------------------

_WEAK = frozenset({"md5", "sha1"})
# Cryptographic randomness: what a call of these returns cannot be guessed.
_RANDOM_CALL = re.compile(r"^(?:os\.urandom|urandom|secrets\.token_(?:bytes|hex|urlsafe)|"
                          r"token_(?:bytes|hex|urlsafe)|uuid\.uuid4|uuid4|"
                          r"(?:random\.)?SystemRandom\(\)\.\w+|secrets\.\w+)$")
# Calls that only change the form of a value (they add nothing guessable).
_FORMAT_CALL = frozenset({"str", "bytes", "repr", "encode", "hex", "format", "bytearray"})


def _weak_hash_calls(scopes: Scopes, line: int) -> list[ast.Call]:
    out = []
    for call in scopes.calls_on(line):
        name = callee(call)
        if name == "new" and call.args and isinstance(call.args[0], ast.Constant):
            name = str(call.args[0].value).lower()
        if name in _WEAK:
            out.append(call)
    return out


def random_input_hash(scopes: Scopes, line: int) -> str | None:
    """Why every weak hash on ``line`` hashes fresh randomness only, or None."""
    calls = _weak_hash_calls(scopes, line)
    if not calls:
        return None
    for call in calls:
        data = call.args[1:] if callee(call) == "new" else call.args
        if not data or not all(_only_random(a) for a in data):
            return None
    return ("it hashes fresh cryptographic randomness only (os.urandom, secrets, uuid4): the "
            "digest is as unguessable as its input, the hash only formats it")


def _only_random(e: ast.AST) -> bool:
    """``e`` is built from cryptographic randomness, literals and calls that
    only change a value's form; at least one random call in it."""
    random = False
    for node in ast.walk(e):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if _RANDOM_CALL.match(name):
                random = True
            elif callee(node) not in _FORMAT_CALL:
                return False
        elif isinstance(node, ast.Name) and not _in_callee(node, e):
            return False  # a variable: what it holds is not known here
    return random


def _in_callee(name: ast.Name, root: ast.AST) -> bool:
    """``name`` names the function called: a builtin (``str``) or the
    module of a random call (``os`` in ``os.urandom``); not the value whose
    method is called (``user_id`` in ``user_id.encode()``)."""
    for node in ast.walk(root):
        if isinstance(node, ast.Call) and (node.func is name or (
                _RANDOM_CALL.match(ast.unparse(node.func))
                and any(n is name for n in ast.walk(node.func)))):
            return True
    return False


_DIGEST_TARGET = re.compile(r"(?i)digest|hash_?func|hashfunc|digestmod")


def hmac_digest(scopes: Scopes, line: int) -> str | None:
    """Why a SHA-1 on ``line`` is only an HMAC's digest function, or None:
    it is returned by a function whose every mention in the module hands it
    over as a digest (``digest_method = staticmethod(f)``, ``digestmod=f``,
    ``hmac.new(key, msg, f)``), never called for a hash of its own."""
    calls = _weak_hash_calls(scopes, line)
    if not calls or any(_hash_name(c) != "sha1" for c in calls):
        return None
    for call in calls:
        stmt = call
        while stmt in scopes.parent and not isinstance(stmt, ast.stmt):
            stmt = scopes.parent[stmt]
        func = scopes.function_of(call)
        if not isinstance(stmt, ast.Return) or not isinstance(
                func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        uses = [n for n in ast.walk(scopes.tree) if isinstance(n, ast.Name)
                and n.id == func.name and isinstance(n.ctx, ast.Load)]
        if not uses or not all(_as_digest(scopes, u) for u in uses):
            return None
    return ("SHA-1 as an HMAC's digest (the function is only handed to a signer as its "
            "digest): HMAC-SHA1 needs no collision resistance and is still sound")


def _hash_name(call: ast.Call) -> str:
    name = callee(call)
    if name == "new" and call.args and isinstance(call.args[0], ast.Constant):
        return str(call.args[0].value).lower()
    return name


def _as_digest(scopes: Scopes, use: ast.Name) -> bool:
    node: ast.AST = use
    up = scopes.parent.get(node)
    if isinstance(up, ast.Call) and callee(up) == "staticmethod" and node in up.args:
        node, up = up, scopes.parent.get(up)
    if isinstance(up, ast.keyword):
        return bool(up.arg and _DIGEST_TARGET.search(up.arg))
    if isinstance(up, ast.Assign) and node is up.value:
        return all(_DIGEST_TARGET.search(ast.unparse(t)) for t in up.targets)
    return isinstance(up, ast.Call) and node in up.args[2:3] and ast.unparse(up.func) in (
        "hmac.new", "hmac.HMAC", "HMAC")


# -- lint idioms -----------------------------------------------------------

def reexport_self_assignment(scopes: Scopes, line: int) -> str | None:
    """Why ``name = name`` on ``line`` re-exports an import, or None."""
    top = _module_level(scopes.tree)
    for stmt in top:
        if not (isinstance(stmt, ast.Assign) and stmt.lineno <= line <= (stmt.end_lineno or 0)):
            continue
        if not (len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Name) and stmt.value.id == stmt.targets[0].id):
            return None
        name = stmt.value.id
        imported = any(isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno < stmt.lineno
                       and any((a.asname or a.name.split(".")[0]) == name for a in n.names)
                       for n in top)
        if imported:
            return (f"{name} = {name} re-exports the imported name at module level (the "
                    "assignment marks the import used): deliberate")
        if not _bound_elsewhere(scopes.tree, name, stmt):
            return (f"{name} = {name} with {name} bound nowhere in the module: the module "
                    "is run with the name given to it (exec with its globals), and the "
                    "line names what it expects")
    return None


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's own statements, also those inside its top-level ``with``,
    ``try`` and ``if`` blocks (pyramid imports and re-exports under
    ``with warnings.catch_warnings():``), not those of functions or classes."""
    out: list[ast.stmt] = []
    todo = list(tree.body)
    while todo:
        stmt = todo.pop(0)
        out.append(stmt)
        if isinstance(stmt, (ast.With, ast.If, ast.Try, ast.TryStar)):
            for part in ("body", "orelse", "finalbody"):
                todo.extend(getattr(stmt, part, []))
            for h in getattr(stmt, "handlers", []):
                todo.extend(h.body)
    return out


def _bound_elsewhere(tree: ast.Module, name: str, stmt: ast.stmt) -> bool:
    """``name`` bound by any statement of the module but ``stmt``."""
    for n in ast.walk(tree):
        if n is stmt:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name and not (
                stmt.lineno <= n.lineno <= (stmt.end_lineno or stmt.lineno)):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name:
            return True
        if isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name.split(".")[0]) == name for a in n.names):
            return True
        if isinstance(n, ast.Global) and name in n.names:
            return True
    return False


# -- debug on in a development configuration --------------------------------

_DEV_NAME = re.compile(r"(?i)dev|develop|test|local|debug")
_PROD_NAME = re.compile(r"(?i)prod|live|deploy|release")


def _dev_config_class(scopes: Scopes, line: int) -> str | None:
    classes = {c.name: c for c in scopes.tree.body if isinstance(c, ast.ClassDef)}
    own = next((c for c in classes.values()
                if c.lineno <= line <= (c.end_lineno or c.lineno)), None)
    if own is None or not _DEV_NAME.search(own.name) or _PROD_NAME.search(own.name):
        return None
    prods = [c for c in classes.values() if _PROD_NAME.search(c.name)]
    if not prods or any(_debug_of(c, classes, 0) is not False for c in prods):
        return None
    return (f"debug on in {own.name}, a development or test configuration: the production "
            f"one ({prods[0].name}) has it off")


def _debug_of(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], depth: int) -> bool | None:
    """The class's DEBUG as a literal (its own, else its bases' in this
    module); None when not known."""
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "DEBUG" for t in stmt.targets):
            value = stmt.value
            return bool(value.value) if isinstance(value, ast.Constant) else None
    if depth > 8:
        return None
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            return _debug_of(classes[base.id], classes, depth + 1)
    # only base classes from outside the module (object, a framework's
    # Config): Flask, Django and the like default to debug off
    return False if all(isinstance(b, ast.Name) and b.id == "object" for b in cls.bases) \
        else None


_DEV_MODULES = ("dev.py", "development.py", "local.py", "test.py", "tests.py", "testing.py",
                "ci.py", "debug.py")
_PROD_MODULES = ("production.py", "prod.py", "live.py", "deploy.py")
# A literal that turns debug on; a value read from the environment is the
# deployment's choice, off unless it is set.
_DEBUG_ON = re.compile(r"^\s*DEBUG\s*=\s*(?:True\b|1\b|[\"']\w)")
_STAR_IMPORT = re.compile(r"^\s*from\s+\.(\w+)\s+import\s+\*")


def _dev_settings_module(rel: str, lines: Lines) -> str | None:
    """``settings/dev.py`` with debug on, next to a production module that
    does not set DEBUG to anything but False, nor star-imports a module that
    does."""
    parts = rel.split("/")
    if len(parts) < 2 or parts[-2] != "settings" or parts[-1] not in _DEV_MODULES:
        return None
    folder = "/".join(parts[:-1])
    for name in _PROD_MODULES:
        if lines(f"{folder}/{name}") is None:
            continue
        if _turns_debug_on(folder, name, lines, 0):
            return None
        return (f"debug on in a development settings module: the production settings "
                f"({folder}/{name}) do not turn it on")
    return None


def _turns_debug_on(folder: str, name: str, lines: Lines, depth: int) -> bool:
    """The settings module ``name`` (or one it star-imports from its
    package) may set DEBUG to anything but False; unknown counts as on."""
    text = lines(f"{folder}/{name}")
    if text is None or depth > 4:
        return True
    if any(_DEBUG_ON.match(t) for t in text):
        return True
    return any(_turns_debug_on(folder, f"{m.group(1)}.py", lines, depth + 1)
               for t in text if (m := _STAR_IMPORT.match(t)))


# ruff's report of syntax a newer Python accepts: "... on Python 3.7 (syntax
# was added in Python 3.8)".
_NEWER_SYNTAX = re.compile(r"on Python 3\.\d+ \(syntax was (?:added|changed) in Python 3\.\d+")


def newer_python_script(f: Finding, lines: Lines) -> str | None:
    """Why a syntax error is a development script's newer syntax, or None."""
    if not f.file or not _NEWER_SYNTAX.search(f"{f.message} {f.title}"):
        return None
    parts = f.file.split("/")
    if len(parts) < 2 or parts[0] == "src" or not parts[-1].endswith(".py"):
        return None
    folder = "/".join(parts[:-1])
    if lines(f"{folder}/__init__.py") is not None:
        return None  # a package's module: users import it on the oldest Python
    return (f"a development script outside the project's packages ({folder}/) written for "
            "a newer Python than the project's oldest: no user installs or imports it")


_SPDX = ("the file declares its license and holders by an SPDX header (SPDX-License-"
         "Identifier), which the rule's copyright pattern does not read")
_AVAILABILITY = ("the import tests whether the package is installed (inside try/except "
                 "ImportError): the import is the check")
_PACKAGE_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def notebook_beside_a_package(f: Finding, lines: Lines) -> str | None:
    """Why a notebook's syntax error is a demo's, or None."""
    if not any(lines(p) is not None for p in _PACKAGE_FILES):
        return None
    return ("a syntax error in a notebook cell beside the project's package: a demo run cell "
            "by cell (an exercise left to the reader), never imported")


def zero_width_space_in_text(f: Finding, lines: Lines) -> str | None:
    """Why a zero-width space on the finding's line is natural-language
    text's own: the line has letters of a script outside ASCII."""
    text = lines(f.file) if f.file and f.range else None
    n = f.range.start_line if f.range else 0
    if not text or not 1 <= n <= len(text):
        return None
    if not any(c.isalpha() and ord(c) > 0x2FF for c in text[n - 1]):
        return None
    return ("a zero-width space in natural-language text (scripts such as Lao, Thai or Khmer "
            "mark word breaks with it): the character is the text's own")
