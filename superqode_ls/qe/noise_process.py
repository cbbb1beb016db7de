"""A "command" handed to the project's own method of that name, in a
package that starts no process: noise.

SuperQode's ``command-injection`` rule flags a command line formatted from
a value and passed to a helper named for running one (``run_cmd``,
``execute_command``...), because that helper's body, often in another
module, is where bandit sees only ``os.popen(cmd)``. Many projects use the
same words for something else: a database or cache client's
``execute_command("CLUSTER " + arg, *args)`` sends a protocol command (its
name and arguments as separate items of a message), and no shell or
program is involved.

So the finding is noise when both hold:

- the helper's name is defined by the package the finding is in (a
  ``def NAME`` there): the call reaches the project's own code, not a
  dependency's (paramiko's ``exec_command`` runs a remote shell);
- no module of that package (tests aside) can start a process: none
  imports ``subprocess``, ``pty``, a process or SSH library (``pexpect``,
  ``sh``, ``plumbum``, ``fabric``, ``invoke``, ``paramiko``...) or calls
  ``os.system``/``os.popen``/``os.exec*``/``os.spawn*``/
  ``asyncio.create_subprocess_*``. Then no helper of it, however named, can
  hand the text to a shell.

Fails closed: a package that starts a process anywhere, a helper it does
not define, a package too large to read whole (``_MAX_FILES``), or a file
it cannot read keeps the finding shown. A package is the finding's top
folder when that holds ``__init__.py`` (a script beside it cannot be
imported from it), else the whole project.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

from ..models import Finding, Severity
from .ast_index import index
from .context import mark_noise
from .noise_defaults import callee
from .noise_library import module_of, python_files
from .roles._common import is_test_path, read_bounded

Lines = Callable[[str], "list[str] | None"]

RULES = frozenset({"command-injection"})
# the names ``_web``'s rule takes for a helper that runs a command line
_HELPER = re.compile(r"(?i)^(run_?(cmd|command|shell)|exec(ute)?_?(cmd|command|shell)"
                     r"|shell_?(exec|run|cmd)|system_?(cmd|command))$")
_PROCESS_MODULES = (r"subprocess|pty|pexpect|sh|plumbum|sarge|delegator|fabric|invoke|paramiko"
                    r"|asyncssh|spur|envoy|commands|popen2")
_STARTS_PROCESS = re.compile(
    rf"(?m)^\s*(?:import\s+(?:[\w.]+\s*,\s*)*(?:{_PROCESS_MODULES})\b"
    rf"|from\s+(?:{_PROCESS_MODULES})(?:\.\w+)*\s+import\b"
    r"|from\s+os\s+import\s+[^\n]*\b(?:system|popen|exec\w*|spawn\w*|posix_spawn\w*|startfile)\b"
    r"|from\s+asyncio\s+import\s+[^\n]*\bcreate_subprocess_)"
    r"|\bos\.(?:system|popen|exec\w+|spawn\w+|posix_spawn\w*|startfile)\s*\("
    r"|\bcreate_subprocess_(?:exec|shell)\b|\b__import__\s*\(|\bimport_module\s*\(")
_MAX_FILES = 4000
_SKIP = frozenset({".git", ".venv", "venv", "env", "node_modules", "__pycache__", ".tox", ".nox",
                   "site-packages", "build", "dist"})
_MAX_BYTES = 2_000_000
WHY = ("a command handed to {name}(), which this package defines, in a package that starts no "
       "process anywhere (no subprocess, os.system, pty or SSH library): a protocol or "
       "client command, no shell reads it")


class _Package:
    """What one package's modules define and whether any starts a process,
    read once per filter run."""

    def __init__(self, root: Path, top: str | None):
        self.defined: set[str] = set()
        self.spawns = False
        # (no link followed, hidden folders and environments left out)
        for found in python_files(root / top if top else root, _SKIP, _MAX_FILES):
            if found is None:
                self.spawns = True  # not read whole: nothing proved
                return
            path = Path(found)
            if is_test_path(path.relative_to(root).as_posix()):
                continue
            raw = read_bounded(path, _MAX_BYTES)
            if raw is None:
                self.spawns = True
                return
            text = raw.decode("utf-8", "replace")
            if _STARTS_PROCESS.search(text):
                self.spawns = True
                return
            self.defined.update(m.group(1) for m in re.finditer(
                r"(?m)^\s*(?:async\s+)?def\s+(\w+)\s*\(", text) if _HELPER.match(m.group(1)))


def _top(root: Path, rel: str) -> str | None:
    parts = rel.split("/")
    if len(parts) > 1 and (root / parts[0] / "__init__.py").is_file():
        return parts[0]
    return None


def _helper_at(tree: ast.Module, line: int) -> str | None:
    """The name of the command helper called on ``line``."""
    for call in index(tree).calls_over(line):
        if _HELPER.match(name := callee(call)):
            return name
    return None


def process_noise(findings: list[Finding], lines_of: Lines, root: str | Path | None,
                  canonical: Callable[[str], str]) -> list[Finding]:
    """The findings, a command sent to a package's own non-process helper
    marked noise."""
    if root is None:
        return findings
    base = Path(root)
    packages: dict[str | None, _Package] = {}
    out = []
    for f in findings:
        if (f.noise is None and f.file and f.file.endswith(".py") and f.range
                and {canonical(f.rule_id).lower(), f.rule_id.lower()} & RULES):
            lines = lines_of(f.file)
            tree = module_of(lines) if lines is not None else None
            name = _helper_at(tree, f.range.start_line) if tree is not None else None
            if name is not None:
                top = _top(base, f.file)
                if top not in packages:
                    packages[top] = _Package(base, top)
                pkg = packages[top]
                if name in pkg.defined and not pkg.spawns:
                    f = mark_noise(f, WHY.format(name=name), Severity.low)
        out.append(f)
    return out
