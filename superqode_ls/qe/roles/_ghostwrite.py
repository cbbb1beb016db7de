"""Write property-based tests for a project's public functions.

Copied into a scratch dir and run there as a script, in a subprocess whose
current directory is a scratch copy of the project: importing the project's
modules runs the project's code, which never happens in SuperQode's own
process. Imports only the standard library and hypothesis (a sibling module
of this file must not shadow a project's import).

usage: python ghostwrite.py SPEC.json OUT.jsonl
SPEC: {"modules": [{"rel": "pkg/mod.py", "module": "pkg.mod"}], "max_functions": 40}
  (a module's optional "lines": only functions spanning one of them)
OUT: one JSON object per function: rel, module, function, line, and either
"source" (the test) or "skipped" (why not).
"""

import ast
import builtins
import importlib
import inspect
import json
import sys
import warnings

# Functions that touch the world outside their arguments are not fuzzed:
# random paths, commands or hosts fed to them would do real damage.
SIDE_EFFECT_CALLS = {
    "open", "system", "popen", "Popen", "check_call", "check_output", "spawnv", "execv",
    "execvp", "fork", "kill", "unlink", "rmdir", "removedirs", "rmtree", "rename",
    "mkdir", "makedirs", "touch", "write_text", "write_bytes", "chmod", "chown",
    "symlink_to", "hardlink_to", "urlopen", "connect", "sendall", "exec", "eval",
    "input", "sleep", "exit", "_exit", "putenv", "breakpoint",
    # Processes, browsers, editors, the desktop (click.launch ran xdg-open
    # once per generated example): judged by the call, whatever the function
    # calling it is named.
    "launch", "open_url", "startfile", "open_new", "open_new_tab", "edit", "getchar", "pause",
    "prompt", "confirm", "spawn", "spawnl", "spawnlp", "spawnvp", "execl", "execlp",
    "execve", "execvpe", "posix_spawn", "posix_spawnp", "create_subprocess_exec",
    "create_subprocess_shell", "create_connection", "request", "urlretrieve", "getaddrinfo",
    # Mail and messages leave the machine whatever object sends them
    # (smtplib's ``sendmail``, Django's ``send_mail``). A bare ``.send()`` is
    # not one: flask's and Django's signals send in-process (``emails``'
    # ``Message(...).send()`` is seen by its module).
    "sendto", "sendmail", "send_message", "send_mail", "send_mass_mail",
    "mail_admins", "mail_managers", "starttls",
}  # fmt: skip
# ``os.<anything>`` is a side effect except these read-only helpers.
OS_READ_ONLY = {"fspath", "getenv", "getcwd", "cpu_count", "fsdecode", "fsencode"}
SIDE_EFFECT_MODULES = {
    "subprocess", "socket", "shutil", "requests", "httpx", "urllib", "http", "ftplib",
    "smtplib", "asyncio", "threading", "multiprocessing", "signal", "ctypes", "sqlite3",
    "tempfile", "webbrowser", "pty", "pexpect", "aiohttp", "urllib3", "xmlrpc", "telnetlib",
    "poplib", "imaplib", "nntplib", "paramiko", "ssl", "tkinter", "turtle", "pyautogui",
    "pyperclip", "winreg", "_winapi", "_posixsubprocess", "selectors", "grpc", "websockets",
    # Mail, network clients and services reached over the network.
    "emails", "aiosmtplib", "yagmail", "smtpd", "sendgrid", "fastapi_mail", "flask_mail",
    "django.core.mail", "mailjet_rest", "postmarker", "twilio", "slack_sdk", "boto3", "botocore",
    "aiobotocore", "pycurl", "httplib2", "treq", "tornado.httpclient", "redis", "pika",
    "aio_pika", "kombu", "celery", "paho", "zmq", "nats", "kafka", "aiokafka", "pymongo",
    "motor", "psycopg", "psycopg2", "pymysql", "asyncpg", "aiomysql", "dns", "ldap3",
    "google.cloud", "azure", "stripe", "ntplib",
}  # fmt: skip
SIDE_EFFECT_NAMES = (
    "main", "run", "write", "save", "delete", "remove", "send", "upload", "download",
    "install", "kill", "backup", "deploy", "serve", "start", "stop", "exec", "open",
    "connect", "publish", "push", "sync", "migrate", "drop", "purge", "clean",
)  # fmt: skip


def _effect_module(dotted):
    """Whether ``dotted`` is, or is inside, a module that touches the world."""
    parts = dotted.split(".")
    return any(".".join(parts[:i]) in SIDE_EFFECT_MODULES for i in range(1, len(parts) + 1))


def _call_name(node):
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def _reachable(node, defs):
    """The function and the same-module functions it calls, transitively."""
    seen, todo, out = set(), [node], []
    while todo:
        n = todo.pop()
        if n.name in seen:
            continue
        seen.add(n.name)
        out.append(n)
        for sub in ast.walk(n):
            if isinstance(sub, ast.Call):
                name = _call_name(sub)
                if name in defs and name not in seen:
                    todo.append(defs[name])
    return out


def _aliases(tree):
    """Module-level names bound to side-effect modules or their members
    (``import subprocess as sp``, ``from webbrowser import open as show``)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _effect_module(a.name):
                    out[(a.asname or a.name).split(".")[0]] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module != "os":
                for a in node.names:
                    if _effect_module(f"{node.module}.{a.name}"):
                        out[a.asname or a.name] = f"{node.module}.{a.name}"
            else:
                for a in node.names:
                    if a.name not in OS_READ_ONLY:
                        out[a.asname or a.name] = f"os.{a.name}"
    return out


def _side_effect(nodes, aliases=None, sibling=None):
    """Why the functions ``nodes`` touch the world, or None. ``aliases``:
    ``_aliases`` of their module; ``sibling(name)``: the same question for a
    function imported from another module of the project (or None)."""
    aliases = aliases or {}
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Call):
                name = _call_name(sub)
                if name in SIDE_EFFECT_CALLS:
                    return f"calls {name}()"
                f = sub.func
                if (
                    isinstance(f, ast.Attribute)
                    and isinstance(f.value, ast.Name)
                    and f.value.id == "os"
                    and f.attr not in OS_READ_ONLY
                ):
                    return f"calls os.{f.attr}()"
                if sibling is not None:
                    called = None
                    if isinstance(f, ast.Name):
                        called = f.id
                    elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                        called = f"{f.value.id}.{f.attr}"
                    why = sibling(called) if called else None
                    if why:
                        return f"calls {called}(), which {why}"
            if isinstance(sub, ast.Name) and sub.id in SIDE_EFFECT_MODULES:
                return f"uses {sub.id}"
            if isinstance(sub, ast.Name) and sub.id in aliases:
                return f"uses {aliases[sub.id]}"
            if isinstance(sub, (ast.Global, ast.Nonlocal)):
                return "changes global state"
    return None


def _module_file(path, module, node):
    """The file of the project module a ``from ... import`` names, or None
    (only the project's own modules: relative, or under the same top package)."""
    import os.path

    here = os.path.dirname(path)
    if node.level:
        base = here
        for _ in range(node.level - 1):
            base = os.path.dirname(base)
        parts = (node.module or "").split(".") if node.module else []
    else:
        top = module.split(".")[0]
        if not node.module or node.module.split(".")[0] != top:
            return None
        depth = module.count(".") + (1 if os.path.basename(path) == "__init__.py" else 0)
        base = here
        for _ in range(depth):
            base = os.path.dirname(base)
        parts = node.module.split(".")
    stem = os.path.join(base, *parts) if parts else base
    for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


def _module_name(module, path, node):
    """The dotted name of the module a ``from ... import`` names."""
    if not node.level:
        return node.module
    parts = module.split(".")
    if not path.endswith("__init__.py"):
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
    return ".".join(parts + ([node.module] if node.module else []))


class _Siblings:
    """Side effects of functions a module imports from the project's other
    modules, followed from module to module (the route ``test_email`` calls
    ``app.utils.send_email``, which sends through ``emails``; click's
    ``launch`` calls ``_termui_impl.open_url``, which starts a process).
    Each file is parsed once, at most MAX_FILES of them."""

    MAX_FILES = 300

    def __init__(self):
        self.trees = {}
        self.checkers = {}

    def _tree(self, path):
        if path not in self.trees:
            self.trees[path] = None
            if len(self.trees) > self.MAX_FILES:
                return None
            try:
                with open(path, encoding="utf-8") as fh:
                    self.trees[path] = ast.parse(fh.read())
            except (OSError, SyntaxError, ValueError):
                pass
        return self.trees[path]

    def checker(self, tree, path, module):
        if path in self.checkers:
            return self.checkers[path]
        imported = {}  # local name -> (ImportFrom node, its name there)
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    imported[a.asname or a.name] = (node, a.name)
        cache = {}

        def sibling(name):
            """``name``: a function imported from the project, or ``mod.func``
            with ``mod`` a project module imported by ``from pkg import mod``."""
            head, _, attr = name.partition(".")
            if head not in imported:
                return None
            if name not in cache:
                cache[name] = None  # a cycle between modules ends here
                node, real = imported[head]
                if attr:  # ``from pkg import mod`` then ``mod.func()``
                    sub = ast.ImportFrom(module=f"{node.module}.{real}" if node.module else real,
                                         names=[], level=node.level)
                    node, real = sub, attr
                target = _module_file(path, module, node)
                other = self._tree(target) if target else None
                if other is not None:
                    defs = {n.name: n for n in other.body
                            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
                    if real in defs:
                        inner = self.checker(other, target, _module_name(module, path, node))
                        cache[name] = _side_effect(_reachable(defs[real], defs), _aliases(other),
                                                   inner)
            return cache[name]

        self.checkers[path] = sibling
        return sibling


def _resolve(expr, module):
    if isinstance(expr, ast.Call):
        expr = expr.func
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    obj = getattr(module, expr.id, getattr(builtins, expr.id, None))
    for attr in reversed(parts):
        obj = getattr(obj, attr, None)
    if isinstance(obj, type) and issubclass(obj, Exception):
        return obj
    return None


def _raised(nodes, module):
    """Exception types raised on purpose (a ``raise`` statement): documented
    behaviour, not a crash."""
    out = []
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Raise) and sub.exc is not None:
                exc = _resolve(sub.exc, module)
                if exc is not None and exc not in out:
                    out.append(exc)
    return tuple(out)


def _why_not(func, node, nodes, aliases=None, sibling=None):
    if isinstance(node, ast.AsyncFunctionDef):
        return "async function"
    if any(isinstance(s, (ast.Yield, ast.YieldFrom)) for s in ast.walk(node)):
        return "generator"
    lowered = node.name.lower()
    for word in SIDE_EFFECT_NAMES:
        if lowered == word or lowered.startswith(word + "_"):
            return f"may have side effects (name starts with {word!r})"
    effect = _side_effect(nodes, aliases, sibling)
    if effect:
        return f"may have side effects ({effect})"
    if not inspect.isfunction(inspect.unwrap(func)):
        return "not a plain function"
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return "no signature"
    params = [
        p
        for p in sig.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.default is p.empty
    ]
    if not params:
        return "takes no required arguments"
    for p in params:
        if p.annotation is p.empty:
            return f"parameter {p.name!r} has no type annotation"
    return None


def _span(node):
    """The lines of a function, its decorators included."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return range(first, (node.end_lineno or node.lineno) + 1)


def main():
    with open(sys.argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    out = open(sys.argv[2], "w", encoding="utf-8")  # noqa: SIM115 - one file for the run

    def emit(rec):
        out.write(json.dumps(rec) + "\n")
        out.flush()

    warnings.simplefilter("ignore")
    from hypothesis.extra import ghostwriter

    budget = int(spec["max_functions"])
    siblings = _Siblings()
    for entry in spec["modules"]:
        rel, name = entry["rel"], entry["module"]
        try:
            with open(entry["path"], encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
        except (OSError, SyntaxError, ValueError) as e:
            emit({"rel": rel, "module": name, "skipped": f"cannot parse: {e}"})
            continue
        defs = {
            n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        public = [n for n in defs.values() if not n.name.startswith("_")]
        if "lines" in entry:  # --since: only the functions the change touched
            touched = set(entry["lines"])
            public = [n for n in public if touched.intersection(_span(n))]
        if not public:
            continue
        try:
            module = importlib.import_module(name)
        except BaseException as e:  # noqa: BLE001 - any failure of project code
            emit({"rel": rel, "module": name, "skipped": f"import failed: {type(e).__name__}: {e}"})
            continue
        aliases = _aliases(tree)
        sibling = siblings.checker(tree, entry["path"], name)
        for node in public:
            rec = {"rel": rel, "module": name, "function": node.name, "line": node.lineno}
            func = getattr(module, node.name, None)
            if func is None or not callable(func):
                rec["skipped"] = "not found after import"
            elif budget <= 0:
                rec["skipped"] = "over the function limit"
            else:
                nodes = _reachable(node, defs)
                rec["skipped"] = _why_not(func, node, nodes, aliases, sibling)
                if not rec["skipped"]:
                    try:
                        source = ghostwriter.fuzz(func, except_=_raised(nodes, module))
                    except BaseException as e:  # noqa: BLE001
                        rec["skipped"] = f"ghostwriter failed: {type(e).__name__}: {e}"
                    else:
                        if "st.nothing()" in source:
                            rec["skipped"] = "no strategy for a parameter's type"
                        else:
                            budget -= 1
                            rec["source"] = source
                            rec.pop("skipped")
            emit(rec)
    out.close()


if __name__ == "__main__":
    main()
