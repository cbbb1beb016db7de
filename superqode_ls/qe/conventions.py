"""Findings a framework's convention or the test environment explains
(noise, kept and counted; ``qe/noise.py`` applies them after
``qe/context.py``):

- graphene's resolvers: ``@staticmethod def resolve_name(self, info)`` is
  how graphene passes the parent object; ruff's PLW0211 ("first argument of
  a static method named self") is its convention, not a slip. A static
  method with ``self`` that is no resolver stays;
- a bare ``except:`` (E722) whose handler answers the error (returns an
  error response, logs, raises): a style opinion. One that swallows
  everything with ``pass``/``continue`` inside a loop stays: the loop can
  no longer be stopped with Ctrl-C (``KeyboardInterrupt`` is caught too);
- an environment default of another type (PLW1508) given to argparse's
  ``add_argument(..., type=int, default=os.getenv("PORT", 8000))``: argparse
  converts a string default with ``type`` and keeps an int one, so both
  work. Without ``type`` (``action="store_true", default=getenv("SSL", 0)``:
  the string ``"0"`` is true) it stays;
- the unused import Django's ``startapp`` writes into a new app's
  ``admin.py``/``models.py``/``tests.py``/``views.py`` next to its
  ``# Create your models here.`` comment: generated, not written. Another
  unused import in that file stays;
- a FastAPI dependency or parameter declared as a default (B008 on
  ``db: Session = Depends(get_db)``, ``Query(...)``, ``Body(...)``): how
  FastAPI reads its parameters, not a shared mutable default. Another call
  in a default (``datetime.now()``) stays;
- a test module that cannot be imported because a third-party package is
  missing (``ModuleNotFoundError: fastapi``): the test environment lacks
  it, a setup problem and not a finding about the code. An import of the
  project's own module that fails stays;
- ``subprocess.run`` without ``check`` (PLW1510) whose result the code
  keeps and reads (``res = run(...)`` then ``res.returncode`` /
  ``res.stdout``): the outcome is looked at, not silently dropped (a
  style choice, ``info``). A call whose result is thrown away stays;
- a Python 2 file's syntax errors (``print "x"``, ``except E, e:``): one
  cause, so the first is shown and the rest are noise that names it. A
  Python 3 file's syntax errors all stay.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from ..models import Finding, Severity
from .context import ParsedModules, mark_noise

Lines = Callable[[str], "list[str] | None"]

# "tests/test_main.py:4: in <module>\n    from fastapi.testclient import ..."
_IMPORT_LINE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.MULTILINE)
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
# what pytest's report of a failed import says (its traceback may be cut
# before the ModuleNotFoundError line)
_IMPORTING = ("ImportError while importing test module", "ImportError while loading conftest",
              "No module named", "in import_module", "_find_and_load")


def _function_at(tree: ast.AST, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno == line:
            return node
    return None


def _graphene_resolver(tree: ast.AST, line: int) -> bool:
    func = _function_at(tree, line)
    if func is None:
        return False
    names = [a.arg for a in func.args.args]
    return func.name.startswith("resolve_") or names[1:2] == ["info"]


def _swallowed_in_loop(tree: ast.AST, line: int) -> bool:
    """A bare except at ``line`` whose body only passes or continues, in a loop."""
    # Only the nodes whose lines hold ``line`` can lead to its handler (an
    # ``except`` starts its own line, so one handler at most is there): a
    # walk of the whole tree per file was a fifth of the noise filter's CPU
    # on sqlalchemy (33 E722s in 18 modules).
    stack = [(tree, False)]
    while stack:
        node, in_loop = stack.pop()
        if isinstance(node, ast.ExceptHandler) and node.type is None and node.lineno == line:
            if in_loop:
                return all(isinstance(s, ast.Pass | ast.Continue) for s in node.body)
            continue
        inner = in_loop or isinstance(node, ast.For | ast.While | ast.AsyncFor)
        for child in ast.iter_child_nodes(node):
            end = getattr(child, "end_lineno", None)
            # a node without lines (a match case, arguments) may hold statements
            if end is None or child.lineno <= line <= end:
                stack.append((child, inner))
    return False


# The stubs ``django-admin startapp`` writes: the import and its comment.
_STARTAPP = {
    "django.contrib.admin": "# Register your models here.",
    "django.db.models": "# Create your models here.",
    "django.test.TestCase": "# Create your tests here.",
    "django.shortcuts.render": "# Create your views here.",
}
_UNUSED_NAME = re.compile(r"`([\w.]+)` imported but unused")


def _startapp_stub(f: Finding, lines: Lines) -> bool:
    m = _UNUSED_NAME.search(f.message or f.title or "")
    comment = _STARTAPP.get(m.group(1)) if m else None
    text = lines(f.file or "") if comment else None
    return text is not None and any(line.strip() == comment for line in text)


def _result_read(tree: ast.AST, line: int) -> bool:
    """The call at ``line`` is assigned to a name whose ``returncode``,
    ``stdout`` or ``stderr`` the same function reads."""
    # the innermost scope first: functions in the order of the walk, then the module
    scopes = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for func in sorted(scopes, key=lambda n: -n.lineno) + [tree]:
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and node.value.lineno == line and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                           and n.value.id == name
                           and n.attr in ("returncode", "stdout", "stderr")
                           for n in ast.walk(func))
    return False


def _argparse_default(tree: ast.AST, line: int, col: int) -> bool:
    """The flagged getenv() is the default of an add_argument() with a type."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "add_argument" \
                and any(kw.arg == "type" for kw in node.keywords):
            default = next((kw.value for kw in node.keywords if kw.arg == "default"), None)
            if default is not None and any(
                    getattr(n, "lineno", 0) == line and getattr(n, "col_offset", -9) <= col
                    <= getattr(n, "end_col_offset", -9) for n in ast.walk(default)):
                return True
    return False


# FastAPI's parameter declarations (fastapi.params), made once by design
_FASTAPI_PARAMS = {"Depends", "Security", "Query", "Path", "Body", "Header", "Cookie", "Form",
                   "File"}
_B008_CALL = re.compile(r"function call `([\w.]+)`")


def _fastapi_default(f: Finding, lines: Lines) -> bool:
    """B008 on a FastAPI parameter declaration, or on the call that makes
    the dependency inside one (``Depends(RoleChecker([...]))``)."""
    m = _B008_CALL.search(f.message or f.title or "")
    if not m:
        return False
    if m.group(1).rsplit(".", 1)[-1] in _FASTAPI_PARAMS:
        return True
    text = lines(f.file) if f.file and f.range else None
    at = f.range.start_line if f.range else 0
    line = text[at - 1] if text and 0 < at <= len(text) else ""
    before = line[: max(0, (f.range.start_col if f.range else 1) - 1)].rstrip()
    return before.endswith(tuple(f"{p}(" for p in _FASTAPI_PARAMS))


def _missing_package(f: Finding, lines: Lines) -> str | None:
    """The third-party package a test module's import error names, where the
    project has no module of that name."""
    text = "\n".join([f.message, *(e.message or "" for e in f.evidence)])
    if not any(w in text for w in _IMPORTING):
        return None
    m = _NO_MODULE.search(text)
    if m is None and ("cannot import name" in text or "dependency-api" in f.tags):
        return None  # the package is there, without that name: the code's (unit role says why)
    name = m.group(1) if m else None
    if name is None:
        # the import statement pytest stopped at: the flagged line, or the
        # last one the traceback quotes
        file_lines = lines(f.file) if f.file else None
        at = f.range.start_line if f.range else 0
        flagged = file_lines[at - 1] if file_lines and 0 < at <= len(file_lines) else ""
        snippets = [flagged, *(e.snippet or "" for e in f.evidence),
                    text.rsplit("<module>", 1)[-1]]
        found = [a or b for chunk in snippets for a, b in _IMPORT_LINE.findall(chunk)]
        name = found[0] if found else None
    if not name or name.startswith("."):
        return None
    top = name.split(".")[0]
    for where in (f"{top}.py", f"{top}/__init__.py", f"src/{top}/__init__.py", f"src/{top}.py",
                  f"{top}/__main__.py"):
        if lines(where) is not None:
            return None  # the project's own module: its import failing is about the code
    return top


_RELATIVE_IMPORT = re.compile(r"^\s*from\s+(\.+)(\w+)\s+import\b")
_BUILD_FILES = ("pyproject.toml", "setup.cfg", "setup.py", ".gitignore")


def _generated_module(f: Finding, lines: Lines) -> str | None:
    """The path of the module a project file's import fails on where the
    checkout lacks it and the build writes it (hatch-vcs' or setuptools-scm's
    ``_version.py``: ``version-file``/``write_to`` names it, or .gitignore)."""
    if not (f.file and f.range and f.file.endswith(".py")):
        return None
    own = lines(f.file) or []
    n = f.range.start_line
    m = _RELATIVE_IMPORT.match(own[n - 1]) if 1 <= n <= len(own) else None
    if m is None or len(m.group(1)) != 1:
        return None
    path = f"{f.file.rsplit('/', 1)[0]}/{m.group(2)}.py" if "/" in f.file else f"{m.group(2)}.py"
    if lines(path) is not None or lines(path[:-3] + "/__init__.py") is not None:
        return None
    name = path.rsplit("/", 1)[-1]
    for build in _BUILD_FILES:
        text = "\n".join(lines(build) or [])
        if path in text or (build == ".gitignore" and re.search(
                rf"(?m)^[^#\n]*(?:^|/){re.escape(name)}\s*$", text)):
            return path
    return None


# Python 2 statements: print and exec without parentheses, except E, e:
_PYTHON2 = re.compile(r"^\s*(?:print\s+[\"'\w%]|exec\s+[\"']|except\s+[\w.]+\s*,\s*\w+\s*:)")


def _python2_firsts(findings: list[Finding], lines: Lines) -> dict[str, int]:
    """Each Python 2 file with syntax errors: the line of its first one."""
    firsts: dict[str, int] = {}
    for f in findings:
        if f.rule_id.upper() == "INVALID-SYNTAX" and f.file and f.range and f.noise is None:
            firsts[f.file] = min(firsts.get(f.file, f.range.start_line), f.range.start_line)
    return {rel: at for rel, at in firsts.items()
            if (text := lines(rel)) is not None and any(_PYTHON2.match(t) for t in text)}


def apply_conventions(findings: Iterable[Finding], lines: Lines | None,
                      modules: ParsedModules | None = None) -> list[Finding]:
    """``modules``: the parses to share with the context checks (over ``lines``)."""
    out = []
    trees = (modules or ParsedModules(lines)) if lines is not None else None
    findings = list(findings)
    python2 = _python2_firsts(findings, lines) if lines is not None else {}
    for f in findings:
        rule = f.rule_id.upper()
        if f.noise is not None or trees is None or lines is None:
            out.append(f)
            continue
        if rule == "PLW0211" and f.file and f.range and f.file.endswith(".py"):
            tree = trees.tree(f.file)
            if tree is not None and _graphene_resolver(tree, f.range.start_line):
                f = mark_noise(f, "a graphene resolver: a static method whose first argument "
                                  "is the parent object, by the framework's convention",
                               Severity.info)
            elif tree is not None and _dunder_new(tree, f.range.start_line):
                f = mark_noise(f, "__new__ is given the class first, whatever the name: "
                                  "calling it self is a naming note", Severity.info)
        elif rule == "E722" and f.file and f.range and f.file.endswith(".py"):
            tree = trees.tree(f.file)
            if tree is not None and not _swallowed_in_loop(tree, f.range.start_line):
                f = mark_noise(f, "a style opinion: the bare except answers the error")
        elif rule == "PLW1508" and f.file and f.range and f.file.endswith(".py"):
            tree = trees.tree(f.file)
            if tree is not None and _argparse_default(tree, f.range.start_line,
                                                      f.range.start_col - 1):
                f = mark_noise(f, "argparse converts the default (add_argument(type=...)): "
                                  "a default that is no str works", Severity.info)
        elif rule == "PLW1510" and f.file and f.range and f.file.endswith(".py"):
            tree = trees.tree(f.file)
            if tree is not None and _result_read(tree, f.range.start_line):
                f = mark_noise(f, "the code keeps the result and reads it (returncode/stdout): "
                                  "its outcome is not dropped", Severity.info)
        elif rule == "F401" and f.file and f.file.endswith(".py") and _startapp_stub(f, lines):
            f = mark_noise(f, "the import Django's startapp writes into a new app (generated)",
                           Severity.info)
        elif rule == "B008" and _fastapi_default(f, lines):
            f = mark_noise(f, "a FastAPI parameter declaration (Depends/Query/Body...), "
                              "which FastAPI reads from the default by design", Severity.info)
        elif rule == "INVALID-SYNTAX" and f.file in python2 and f.range \
                and f.range.start_line != python2[f.file]:
            f = mark_noise(f, f"the same cause as line {python2[f.file]}: a Python 2 file "
                              "(one syntax error per Python 2 statement)")
        elif rule == "COLLECTION-ERROR" and (generated := _generated_module(f, lines)):
            f = mark_noise(f, f"{generated} is written when the project is built (its build "
                              "configuration names it); the test environment did not build the "
                              "project: a setup problem, not a finding about the code",
                           Severity.info)
        elif rule == "COLLECTION-ERROR" and (package := _missing_package(f, lines)):
            f = mark_noise(f, f"the test environment lacks the package {package!r}: a setup "
                              "problem, not a finding about the code", Severity.info)
        out.append(f)
    return out


def _dunder_new(tree: ast.Module, line: int) -> bool:
    """``def __new__(self, ...)`` at ``line``: Python passes the class first."""
    return any(isinstance(n, ast.FunctionDef) and n.name == "__new__" and n.lineno <= line
               <= (n.body[0].lineno if n.body else n.lineno) for n in ast.walk(tree))

