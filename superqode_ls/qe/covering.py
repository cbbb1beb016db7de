"""The project's tests that cover a changed file, and running them (verifier).

"Covering" is decided by imports, not by coverage data: a test file covers a
source file when it imports that file's module (or something inside it), or
when it is the changed file itself. That is cheap on a large tree and errs on
the side of running a test. The tests run through the unit role, so they get
its interpreter, plugins and sandbox-first import path.

The import index is built once per session, the first time a fix asks for
its tests, from a line scan: only the import statements are parsed, not the
test files (a whole-file parse of sqlalchemy's 239 test files, 12 MB, was
13 s of CPU and most of a lint-only session's own work; the scan is a
fraction of a second, so no cache across sessions is kept: one would be one
more file that decides which tests judge a fix). An import statement inside
a string counts too: a test run for nothing, never one missed.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import dataclasses
import keyword
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Protocol

from ..workspace.pyast import parse as parse_python
from . import probe_cache
from .roles._pyenv import project_python
from .roles.base import Role, RoleContext
from .roles.unit import find_test_files

# pytest's own words (roles/unit.py) for a run that never reached a test
# whichever tests were asked for; a failed test or a collection error in one
# file is not among them.
SUITE_BROKEN = ("pytest usage or configuration error", "pytest hit an internal error")

# One covering-test run never takes longer than this (the session budget
# may cut it shorter): a fix whose tests cannot finish is "tool-verified only".
DEFAULT_TIMEOUT_S = 60.0


def module_names(rel: str) -> set[str]:
    """Dotted names ``rel`` may be imported as (``src/`` layouts included)."""
    p = PurePosixPath(rel)
    if p.suffix != ".py":
        return set()
    parts = list(p.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    out = set()
    while parts:
        out.add(".".join(parts))
        parts = parts[1:]  # "src/pkg/mod.py" is "pkg.mod"; a test dir on sys.path gives "mod"
    return out


# What may stand before an import statement's ``import`` on its line: the
# indentation, a block's colon (``try: import x``), ``from module``.
_HEAD = re.compile(r"[ \t]*(?:(?:try|else|finally|(?:el)?if\b[^\n:]*|except\b[^\n:]*)[ \t]*:[ \t]*)?"
                   r"(from[ \t][\w. \t]*)?")
_WORD = re.compile(r"\w").match  # a character that continues a word
_COMMENT = re.compile(r"#[^\n]*")  # an import statement holds no string: "#" starts a comment
_DOTTED = r"[^\W\d]\w*(?:[ \t]*\.[ \t]*[^\W\d]\w*)*"  # spaces around the dots are allowed
_MODULE = re.compile(rf"[ \t]+({_DOTTED})[ \t]*")
# One imported name and its alias: ``a.b``, ``a.b as c``, ``*``.
_NAME = re.compile(rf"[ \t]*(\*|{_DOTTED})(?:[ \t]+as[ \t]+[^\W\d]\w*)?[ \t]*")


def _statement(text: str, start: int, end: int) -> tuple[str, int]:
    """The import statement from ``start`` (its keyword) whose first line ends
    at ``end``, comments cut out, and where it ends: a parenthesised name list
    runs to its ")", a backslash goes on to the next line."""
    stmt = _COMMENT.sub("", text[start:end])
    while True:
        if stmt.count("(") > stmt.count(")"):
            close = text.find(")", end)
            if close < 0:
                break
        elif stmt.rstrip(" \t\r").endswith("\\"):
            close = end + 1
        else:
            break
        nl = text.find("\n", close)
        nxt = len(text) if nl < 0 else nl
        if nxt <= end:
            break
        end = nxt
        stmt = _COMMENT.sub("", text[start:end])
    return stmt.strip(), end


def _simple(stmt: str, out: set[str]) -> bool:
    """The names of a one-line statement of plain names (most of them) read
    without a parse, as ``_names`` would; False for anything else."""
    if "(" in stmt or "\\" in stmt or ";" in stmt:
        return False
    if stmt.startswith("import"):
        module, rest = None, stmt[6:]
    else:
        module, sep, rest = stmt[4:].partition(" import")
        m = _MODULE.fullmatch(module)
        if not sep or m is None:
            return False  # relative ("from . import x": ast for those), prose
        module = "".join(m.group(1).split())
        if not _dotted(module):
            return False
    found = []
    for part in rest.split(","):
        m = _NAME.fullmatch(part)
        if m is None:
            return False
        name = "".join(m.group(1).split())
        if (name == "*" and module is None) or not _dotted(name.replace("*", "a")):
            return False
        found.append(name)
    if not found or (module is None and not rest[:1].isspace()):
        return False
    if module is None:
        out.update(found)
    else:
        out.add(module)
        out.update(f"{module}.{n}" for n in found)
    return True


def _dotted(name: str) -> bool:
    return all(p.isidentifier() and not keyword.iskeyword(p) for p in name.split("."))


def _names(tree: ast.Module, out: set[str]) -> None:
    for node in tree.body:  # a statement or a few on one line: nothing nested
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)


def _imports(text: str) -> set[str]:
    """The absolute module names ``text`` imports (and ``module.name`` for
    each name a ``from`` import takes), from its import statements alone."""
    out: set[str] = set()
    done = 0  # the end of the last statement read: its lines are not read again
    at = text.find("import")  # str.find: a regex search was most of the time
    while at >= 0:
        after = at + 6
        if at < done or (at and _WORD(text[at - 1])) or (after < len(text) and _WORD(text[after])):
            at = text.find("import", after)
            continue
        line = text.rfind("\n", 0, at) + 1
        head = _HEAD.fullmatch(text, line, at)
        if head is None:  # "import" inside some other line
            at = text.find("import", after)
            continue
        start = head.start(1) if head.group(1) else at
        nl = text.find("\n", after)
        stmt, done = _statement(text, start, len(text) if nl < 0 else nl)
        at = text.find("import", done)
        if _simple(stmt, out):
            continue
        for candidate in (stmt, stmt.split(";", 1)[0]):
            try:
                tree = parse_python(candidate)
            except (SyntaxError, ValueError):
                continue  # prose that has "import" in it
            _names(tree, out)
            break
    return out


@dataclass
class TestRun:
    """One run of covering tests: ``status`` "passed", "failed" (``failures``
    holds the failing tests' ids) or "not_run" (``reason`` says why)."""

    status: str
    failures: Counter[str] = field(default_factory=Counter)
    files: dict[str, str] = field(default_factory=dict)  # failure id -> test file
    reason: str = ""


@dataclass
class CoveringTests:
    sandbox: Path
    role: Role  # the unit role
    ctx: RoleContext  # its context; ``files`` is replaced per run
    timeout: float = DEFAULT_TIMEOUT_S
    # A module name -> the test files importing it or a name inside it
    # (``pkg.mod`` for ``from pkg.mod import f`` and ``from pkg import mod``);
    # None until a fix first asks.
    _index: dict[str, set[str]] | None = None
    _tests: frozenset[str] = frozenset()

    def _build_index(self) -> tuple[dict[str, set[str]], frozenset[str]]:
        index: dict[str, set[str]] = {}
        tests: set[str] = set()
        for rel in find_test_files(self.sandbox):
            try:
                text = (self.sandbox / rel).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            tests.add(rel)
            for name in _imports(text):
                # A name inside the module ("pkg.mod.func") counts; a package
                # above it ("pkg") does not, or one `import pkg` would cover all.
                index.setdefault(name, set()).add(rel)
                index.setdefault(name.rsplit(".", 1)[0], set()).add(rel)
        return index, frozenset(tests)

    async def for_files(self, files: list[str]) -> list[str]:
        if self._index is None:
            self._index, self._tests = await asyncio.to_thread(self._build_index)
        out = {rel for rel in files if rel in self._tests}
        for rel in files:
            for name in module_names(rel):
                out |= self._index.get(name, set())
        return sorted(out)

    async def run(self, tests: list[str]) -> TestRun:
        if not tests:
            return TestRun("not_run", reason="no tests import the changed code")
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.timeout
        if self.ctx.deadline is not None:
            deadline = min(deadline, self.ctx.deadline)
        if deadline - loop.time() <= 1:
            return TestRun("not_run", reason="no time left in the session budget for the tests")
        ctx = dataclasses.replace(self.ctx, files=list(tests), deadline=deadline,
                                  emit=lambda *a, **k: None)
        out = await self.role.run(ctx)
        if out.status == "ok":
            fails = [f.with_stable_id() for f in out.findings]
            if not fails:
                return TestRun("passed")
            return TestRun("failed", Counter(f.id for f in fails),
                           {f.id: f.file or "" for f in fails})
        if out.status in ("timeout", "incomplete"):  # incomplete: quick mode's cap
            limit = deadline - started
            if limit < self.timeout - 1:
                return TestRun("not_run", reason=f"the covering tests did not finish in the "
                                                 f"{limit:.0f} s left in the session budget")
            return TestRun("not_run", reason=f"the covering tests did not finish in {self.timeout:.0f} s")
        return TestRun("not_run", reason=out.reason or out.status)


def test_folders(tests: list[str]) -> list[str]:
    """The top-most folders holding ``tests`` (pytest descends from them)."""
    folders = sorted({str(PurePosixPath(t).parent) for t in tests})
    if "." in folders:
        return ["."]
    out: list[str] = []
    for f in folders:
        if not any(f.startswith(o + "/") for o in out):
            out.append(f)
    return out


class SuiteProbeLike(Protocol):
    async def broken(self) -> str | None: ...


@dataclass
class _Lowered(RoleContext):
    """A context whose programs run at nice +10 from the session's own, in a
    CPU group lowered as much (a session of their own would otherwise share
    the CPU with each analyzer's as an equal, whatever their nice)."""

    async def run(self, cmd, **kwargs):  # type: ignore[override]
        nice = shutil.which("nice")
        kwargs.setdefault("below", 10)
        return await super().run([nice, "-n", "10", *cmd] if nice else list(cmd), **kwargs)


class SuiteProbe:
    """Whether the project's pytest can start at all (its conftests import,
    its configuration is valid), learnt once beside the roles by letting pytest
    load the test folders' conftests, importing no test module: a suite that
    cannot start then costs fix verification no wait (it was a pytest start per
    round). Started only where tests may run (a trusted folder)."""

    def __init__(self, role: Role, ctx: RoleContext):
        # Below the roles: it takes the CPU they leave (bandit is one process)
        # and never slows the analyzers the user waits for.
        ctx = _Lowered(**{f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx)})
        self.ctx = ctx  # its ``python`` is filled in by the run: the tests reuse it
        self._task = asyncio.ensure_future(self._run(role, ctx))

    @staticmethod
    async def _run(role: Role, ctx: RoleContext) -> str | None:
        can_start = getattr(role, "can_start", None)
        folders = test_folders(await asyncio.to_thread(find_test_files, ctx.sandbox))
        if not folders or can_start is None:
            return None
        py = await project_python(ctx)
        command = [*(ctx.config.roles.unit_test_command or []), f"own={py.own}"]
        k = await asyncio.to_thread(probe_cache.key, ctx.sandbox, folders, py.python, py.prefix,
                                    command)
        if k is not None:
            found, broken = await asyncio.to_thread(probe_cache.load, k)
            if found:
                return broken
        out = await can_start(ctx, folders)
        reason = out.reason or ""
        # Broken: pytest's own error, or a setup problem the role names (a
        # conftest importing a package the environment lacks).
        broken = reason if ((out.status == "failed" and reason.startswith(SUITE_BROKEN))
                            or (out.status == "skipped" and reason.startswith("setup:"))) else None
        # pytest started ("skipped": it collected nothing, as asked) or could
        # not: a verdict. A timeout or an error of ours is not one.
        if k is not None and (out.status in ("ok", "skipped") or broken is not None):
            await asyncio.to_thread(probe_cache.store, k, broken)
        return broken

    async def broken(self) -> str | None:
        """Why the suite cannot start, or None (also when the probe could not
        tell: then the tests are tried as before)."""
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            if not self._task.cancelled():
                raise  # the caller is cancelled, not the probe
            return None
        except Exception:  # noqa: BLE001 - no answer: run the tests as before
            return None

    async def close(self) -> None:
        if not self._task.done():
            self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task
