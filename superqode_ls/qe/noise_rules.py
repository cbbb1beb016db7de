"""Noise rules for secrets written where they are no credential and for a
weak hash that makes an identifier (called from ``qe/context.py``):

- a password in an example or template file (``.env.example``,
  ``config.sample.yml``, ``settings.py.dist``, ``example.env``...): a
  placeholder the reader replaces. Only the password rules of the secrets
  scan (``secret-generic``, ``secret-config-password``) are lowered: a value
  in a real credential format (an AWS key id, a private key block, a GitHub
  or Slack token) is caught by its own rule and stays shown;
- a database password in a CI workflow that runs tests
  (``.github/workflows/*.yml``, ``.gitlab-ci.yml``...): the throwaway
  database of the job's service container or test matrix
  (``services: postgres: env: POSTGRES_PASSWORD``, ``db_password: root``).
  Any other secret there (a deploy token), a workflow that deploys, and a
  provider token stay;
- MD5/SHA-1 (B324) whose result is an identifier: returned by a function
  named for a key or id (``unique_key``, ``cache_key``) or held in a name
  that is only used to build a rate-limit or cache key (``hashed`` passed
  to ``TokenBucket.authorize(f"em-{hashed}", ...)`` or ``cache.set``).
  A hash of a password, one compared with a stored value, or one that
  names a signature, token or MAC stays (a keyed ``sha1(secret + data)``
  as a signature is exactly the flaw B324 warns of).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..models import Finding
from .codegen import Scopes, _own_nodes

# The secrets scan's password rules: a value a person typed, which in an
# example file is a placeholder. Provider-format rules are not here.
PASSWORD_SECRET_RULES = frozenset({"secret-generic", "secret-config-password"})

# An example or template file: the word as a dotted or dashed part of the
# file's name (``.env.example``, ``config.sample.yml``, ``env-example``,
# ``example.env``). A Python module named ``example.py`` or
# ``template.py`` is code, not a template of a configuration file.
_EXAMPLE_WORD = r"(?:example|examples|sample|template|tmpl|tpl|dist|default)"
_EXAMPLE_NAME = re.compile(rf"(?i)(?:^|[._-]){_EXAMPLE_WORD}(?:$|[._-])")
_CODE_SUFFIX = (".py", ".pyi", ".js", ".ts", ".go", ".rb", ".java", ".php", ".html", ".md")


def example_file(path: str | None) -> bool:
    """``path`` is an example or template of a configuration file."""
    if not path:
        return False
    name = path.rsplit("/", 1)[-1]
    if name.lower().endswith(_CODE_SUFFIX):
        return False
    return bool(_EXAMPLE_NAME.search(name))


def example_placeholder(f: Finding) -> str | None:
    """Why a password in an example file is noise, or None."""
    if f.rule_id.lower() not in PASSWORD_SECRET_RULES or any(
            r.lower().startswith("secret-") and r.lower() not in PASSWORD_SECRET_RULES
            for r in f.related_rules):
        return None
    if not example_file(f.file):
        return None
    return "a placeholder in an example or template file (the reader puts their own value)"


_CI_FILE = re.compile(r"(^|/)(\.github/workflows/[^/]+\.ya?ml|\.gitlab-ci\.ya?ml|"
                      r"\.circleci/config\.ya?ml|\.travis\.ya?ml|bitbucket-pipelines\.ya?ml|"
                      r"azure-pipelines\.ya?ml|\.drone\.ya?ml|\.woodpecker\.ya?ml)$")
# The key of a database's password: POSTGRES_PASSWORD, MYSQL_ROOT_PASSWORD,
# db_password, PGPASSWORD, MONGO_INITDB_ROOT_PASSWORD, REDIS_PASSWORD.
_DB_PASSWORD_KEY = re.compile(
    r"(?i)^\s*-?\s*[\"']?((?:postgres(?:ql)?|pg|mysql|mariadb|mongo\w*|redis|db|database|"
    r"sql|mssql|sa|oracle|clickhouse|rabbitmq|test_?db)_?(?:root_?|user_?|initdb_?root_?)?"
    r"(?:password|passwd|pwd)|pgpassword|sa_password)[\"']?\s*[:=]")
# A job that ships something: its secrets are no test database's.
_DEPLOYS = re.compile(r"(?i)\b(deploy|publish|release)\b")  # not "upload": coverage and artifacts
_RUNS_TESTS = re.compile(r"(?i)\b(test|tests|pytest|tox|nox|unittest|check)\b")


def ci_test_database(f: Finding, lines: list[str] | None) -> str | None:
    """Why a password in a CI workflow is its test database's, or None."""
    if f.rule_id.lower() not in PASSWORD_SECRET_RULES or not f.range or not lines:
        return None
    if not (f.file and _CI_FILE.search(f.file)):
        return None
    n = f.range.start_line
    if not 1 <= n <= len(lines):
        return None
    text = "\n".join(lines)
    if _DEPLOYS.search(text) or not _RUNS_TESTS.search(text):
        return None
    line = lines[n - 1]
    if _DB_PASSWORD_KEY.match(line):
        return "the test database's password in a CI workflow (a throwaway service, no credential)"
    if _under_services(lines, n) and re.search(r"(?i)passw|pwd", line):
        return "a CI service container's password (a throwaway database, no credential)"
    return None


def _under_services(lines: list[str], n: int) -> bool:
    """Line ``n`` is inside a ``services:`` block (by indentation)."""
    indent = len(lines[n - 1]) - len(lines[n - 1].lstrip())
    for k in range(n - 2, -1, -1):
        line = lines[k]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        own = len(line) - len(line.lstrip())
        if own < indent:
            if re.match(r"\s*services\s*:", line):
                return True
            indent = own
            if own == 0:
                return False
    return False


# What an identifier's name says; and what a protecting value's says.
_ID_NAME = re.compile(r"(?i)(^|_)(key|id|ident|identifier|etag|cache|bucket|slug|uid|uuid|"
                      r"fingerprint|checksum|hashed|digest|hash)(_|$|s$)|(cache|lookup|unique|"
                      r"bucket|rate|limit|throttle)_?key")
_PROTECTS_NAME = re.compile(r"(?i)sign|token|passw|pwd|secret|mac|auth_?key|api_?key|"
                            r"private|verify|nonce|salt|otp|csrf|session")
# Calls that take a key to count or cache under, not to check.
_KEY_CALL = re.compile(r"(?i)^(authorize|ratelimit|rate_limit|throttle|limit|incr|incr_by|"
                       r"get|set|add|delete|get_or_set|get_many|set_many|touch|exists|expire|"
                       r"setdefault|hit|consume|allow|check_rate)$")
_CACHE_OWNER = re.compile(r"(?i)cache|bucket|redis|limit|throttl|memo|store|counter")
_HASH_CALL = frozenset({"md5", "sha1", "new"})


def identifier_hash(scopes: Scopes, line: int) -> str | None:
    """Why every weak hash on ``line`` only makes an identifier, or None."""
    calls = [c for c in scopes.calls_on(line) if _hash_call(c)]
    if not calls:
        return None
    for call in calls:
        if any(re.search(r"(?i)passw|pwd|token", ast.unparse(a)) for a in call.args):
            return None  # a hash of a password or a token
        if not _only_identifier(scopes, call):
            return None
    return "the hash makes an identifier (a key to count or cache under), protecting nothing"


def _hash_call(call: ast.Call) -> bool:
    f = call.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    return name in _HASH_CALL


def _statement(scopes: Scopes, node: ast.AST) -> ast.AST:
    while node in scopes.parent and not isinstance(node, ast.stmt):
        node = scopes.parent[node]
    return node


def _only_identifier(scopes: Scopes, call: ast.Call) -> bool:
    stmt = _statement(scopes, call)
    scope = scopes.function_of(call)
    if _compared(scopes, call):
        return False
    if isinstance(stmt, ast.Return):
        name = getattr(scope, "name", "")
        return bool(_ID_NAME.search(name)) and not _PROTECTS_NAME.search(name)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(
            stmt.targets[0], ast.Name):
        name = stmt.targets[0].id
        if _PROTECTS_NAME.search(name) or not _ID_NAME.search(name):
            return False
        uses = [n for n in _own_nodes(scope) if isinstance(n, ast.Name) and n.id == name
                and isinstance(n.ctx, ast.Load)]
        return bool(uses) and all(_key_use(scopes, u) for u in uses)
    return False


def _compared(scopes: Scopes, node: ast.AST) -> bool:
    up = scopes.parent.get(node)
    while up is not None and not isinstance(up, ast.stmt):
        if isinstance(up, ast.Compare) or (isinstance(up, ast.Call) and re.search(
                r"compare_digest|verify|check", ast.unparse(up.func))):
            return True
        up = scopes.parent.get(up)
    return False


def _key_use(scopes: Scopes, use: ast.AST) -> bool:
    """``use`` (a load of the hash's name) goes, perhaps through an
    f-string or ``+``, into a call that counts or caches under a key."""
    node = use
    up = scopes.parent.get(node)
    while isinstance(up, (ast.FormattedValue, ast.JoinedStr, ast.BinOp)):
        node, up = up, scopes.parent.get(up)
    if not isinstance(up, ast.Call) or node is up.func:
        return False
    f = up.func
    if not isinstance(f, ast.Attribute):
        return isinstance(f, ast.Name) and bool(_KEY_CALL.match(f.id)) and f.id != "get"
    if not _KEY_CALL.match(f.attr):
        return False
    owner = ast.unparse(f.value)
    return f.attr in ("authorize", "ratelimit", "rate_limit", "throttle", "consume",
                      "check_rate") or bool(_CACHE_OWNER.search(owner))


def self_reread(scopes: Scopes, line: int) -> str | None:
    """Why ``self = ...`` (ruff's PLW0642) on ``line`` is deliberate: the
    new value is the same object read again from its own identity (Django's
    ``Check.objects.select_for_update().get(id=self.id)`` under a lock,
    ``self.copy()``, ``type(self)(...)``). ``self = other`` stays."""
    for node in ast.walk(scopes.tree):
        if (isinstance(node, ast.Assign) and node.lineno <= line <= (node.end_lineno or line)
                and any(isinstance(t, ast.Name) and t.id in ("self", "cls") for t in node.targets)):
            target = next(t.id for t in node.targets if isinstance(t, ast.Name))
            if any(isinstance(n, ast.Name) and n.id == target for n in ast.walk(node.value)):
                return f"{target} is read again from its own identity (a fresh or locked copy)"
    return None


# Django's split settings: base.py (or dev.py) holds a development key and the
# production module, next to it, sets its own. Only production modules that
# read the key from the environment or make a random one, never falling back
# to the development key, count.
_PROD_SETTINGS = ("production.py", "prod.py", "live.py", "deploy.py")
_KEY_ASSIGN = re.compile(r"^\s*SECRET_KEY\s*=(.*)$")
_FROM_ENV = re.compile(r"^\s*(?:os\.)?(?:environ\[\s*['\"]\w+['\"]\s*\]|(?:environ\.get|getenv)"
                       r"\(\s*['\"]\w+['\"]\s*\))\s*(?:#.*)?$")
_RANDOM = re.compile(r"get_random_secret_key\(|\bsecrets\.|\brandom\.|token_(?:hex|urlsafe)\(")
_SETTINGS_KEY = re.compile(r"^\s*SECRET_KEY\s*=\s*[rbu]?['\"]")


def dev_settings_key(f: Finding, lines: Callable[[str], list[str] | None]) -> str | None:
    """Why a literal ``SECRET_KEY`` in a settings package's base or
    development module is no production key, or None."""
    if not (f.file and f.range and "/settings/" in f"/{f.file}"):
        return None
    own = lines(f.file) or []
    n = f.range.start_line
    if not (1 <= n <= len(own) and _SETTINGS_KEY.match(own[n - 1])):
        return None
    folder = f.file.rsplit("/", 1)[0]
    for name in _PROD_SETTINGS:
        prod = lines(f"{folder}/{name}")
        prod = prod or []
        values = []
        for k, m in enumerate(map(_KEY_ASSIGN.match, prod)):
            if m:
                value = m.group(1)
                if value.count("(") > value.count(")"):  # wrapped: the next two lines too
                    value = " ".join([value, *prod[k + 1:k + 3]])
                values.append(value)
        if values and all(_FROM_ENV.match(v) or _RANDOM.search(v) for v in values):
            return (f"a development key: the production settings ({folder}/{name}) read "
                    "SECRET_KEY from the environment or make a random one")
    return None


# ruff's F811 on a name bound by an import no one used: "Redefinition of
# unused `itemgetter` from line 1".
_REDEFINED = re.compile(r"[Rr]edefinition of unused `([^`]+)` from line (\d+)")


def unused_import_redefined(f: Finding, unused: set[tuple[str, int, str]]) -> str | None:
    """Why F811 is the same cause as an F401 shown at the first binding:
    ``unused`` holds (file, line, name) of each unused import (F401) in the
    findings. Removing that import fixes both; one finding says it. An F811
    whose first binding is a function or a used import stays."""
    if f.rule_id.upper() != "F811" or not f.file:
        return None
    m = _REDEFINED.search(f.message or "")
    if m is None:
        return None
    name, first = m.group(1), int(m.group(2))
    if (f.file, first, name) not in unused:
        return None
    return f"the same unused import as F401 on line {first}: removing it there fixes this too"


_UNUSED_IMPORT = re.compile(r"^`([^`]+)` imported but unused")


def unused_imports(findings: list[Finding]) -> set[tuple[str, int, str]]:
    """(file, line, name) of each F401 in ``findings``: the imported name
    (``operator.itemgetter`` binds ``itemgetter``; ``import os.path`` binds
    ``os``) and its full dotted form."""
    out = set()
    for f in findings:
        m = _UNUSED_IMPORT.match(f.message or "") if f.rule_id.upper() == "F401" else None
        if m and f.file and f.range:
            full = m.group(1).split(" as ")[-1]
            out |= {(f.file, f.range.start_line, n)
                    for n in (full, full.rsplit(".", 1)[-1], full.split(".", 1)[0])}
    return out


def reraise_helper(scopes: Scopes, line: int) -> str | None:
    """Why a bare ``raise`` outside an ``except`` (ruff's PLE0704) works: it
    is in a function that the module calls only from ``except`` handlers
    (httpie's ``handle_generic_error(e)``, a nested helper of ``main``), so
    an exception is being handled whenever it runs and the ``raise``
    re-raises it. A function called anywhere else, or not called in its
    module at all (who calls it cannot be seen), stays."""
    func = None
    for node in scopes.functions:
        if node.lineno <= line <= (node.end_lineno or node.lineno) \
                and (func is None or node.lineno > func.lineno):
            func = node
    if func is None:
        return None
    calls = [n for n in ast.walk(scopes.tree) if isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Name) and n.func.id == func.name)
        or (isinstance(n.func, ast.Attribute) and n.func.attr == func.name))]
    if not calls or not all(_in_handler(scopes, c) for c in calls):
        return None
    return (f"{func.name}() is called only from except handlers: the bare raise re-raises the "
            "exception being handled")


def _in_handler(scopes: Scopes, node: ast.AST) -> bool:
    """``node`` runs inside an ``except`` block of its own function."""
    up = scopes.parent.get(node)
    while up is not None and not isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef
                                            | ast.Lambda | ast.ClassDef | ast.Module):
        if isinstance(up, ast.ExceptHandler):
            return True
        up = scopes.parent.get(up)
    return False


# A store's calls that take a key first (a cache's, valkey's/redis's, a
# dict's): ``valkey_client.set(TOKEN_KEY, token, ex=...)`` stores the token
# under the name, the name is no token.
_STORE_READ = frozenset({"get", "delete", "exists", "expire", "ttl", "incr", "decr", "hget",
                         "hgetall", "hdel", "persist", "pop", "getdel", "touch"})
_STORE_WRITE = frozenset({"set", "setex", "setnx", "hset", "getset", "set_many", "add",
                          "get_or_set"})


def storage_key(scopes: Scopes, line: int) -> str | None:
    """Why the module-level string constant assigned on ``line`` is the key
    a value is stored under (searxng's ``TOKEN_KEY = 'SearXNG_limiter.token'``
    read back with ``valkey_client.get(TOKEN_KEY)``, the token written with
    ``.set(TOKEN_KEY, token, ex=...)``), or None. Every use of the name in
    the module must be a store's key, and one a write of another value under
    it; a use anywhere else (a header, a signing call) keeps it a secret."""
    target = None
    for node in scopes.tree.body:
        if (isinstance(node, (ast.Assign, ast.AnnAssign)) and node.lineno <= line
                <= (node.end_lineno or node.lineno) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                target = targets[0].id
    if target is None:
        return None
    written = None
    uses = 0
    for node in ast.walk(scopes.tree):
        if not (isinstance(node, ast.Name) and node.id == target):
            continue
        if not isinstance(node.ctx, ast.Load):
            if node.lineno != line:
                return None  # assigned again elsewhere: not one constant
            continue
        uses += 1
        call = scopes.parent.get(node)
        if not (isinstance(call, ast.Call) and call.args and call.args[0] is node
                and isinstance(call.func, ast.Attribute)):
            return None
        verb = call.func.attr
        if verb in _STORE_WRITE and len(call.args) >= 2 and not (
                isinstance(call.args[1], ast.Name) and call.args[1].id == target):
            written = f"{ast.unparse(call.func)}({target}, {ast.unparse(call.args[1])})"
        elif verb not in _STORE_READ and verb not in _STORE_WRITE:
            return None
    if written is None or not uses:
        return None
    return f"the name a value is stored under ({written}), not a secret"


# What only a shell does with a command line: expand a variable (cmd.exe's
# %WINDIR%, a POSIX $HOME), a glob, a pipe or a redirection, a list.
_NEEDS_SHELL = re.compile(r"%\w+%|\$\{?\w+|[*?|<>;&`~]")
_SHELL_CALLS = frozenset({"Popen", "run", "call", "check_call", "check_output"})


def fixed_shell_list(scopes: Scopes, line: int) -> str | None:
    """Why ``shell=True`` (B602) on ``line`` runs a fixed command that needs
    the shell: poetry-core's ``check_output([where, "git"], shell=True)``
    with ``where = "%WINDIR%\\System32\\where.exe"``, which only cmd.exe
    expands. Every word is text the module fixes (a literal, or a name only
    given literals); bandit rates a list high as it does not read names. A
    parameter, an attribute or a call in the command stays."""
    calls = [c for c in scopes.calls_on(line) if _shell_true(c)]
    if not calls:
        return None
    words: list[str] = []
    for call in calls:
        if not call.args or not isinstance(call.args[0], (ast.List, ast.Tuple)):
            return None
        scope = scopes.function_of(call)
        for e in call.args[0].elts:
            if not scopes.constant(e, scope):
                return None
            if isinstance(e, ast.Constant) and isinstance(e.value, str):
                words.append(e.value)
            elif isinstance(e, ast.Name):
                words += [v.value for v in scopes._assigned(e.id, scope) or
                          scopes._assigned(e.id, scopes.tree)
                          if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    needs = next((m.group(0) for w in words if (m := _NEEDS_SHELL.search(w))), None)
    if needs is None:
        return None
    return (f"a command fixed in the code that needs the shell (it expands {needs}): no "
            "input reaches it")


def _shell_true(call: ast.Call) -> bool:
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in _SHELL_CALLS and any(
        k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in call.keywords)
