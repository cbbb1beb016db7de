"""The suite a project's developers run by default, and what it leaves out.

A plain ``pytest`` collects every test module (or ``testpaths``), but many
projects run only part of them by default and keep the rest opt-in:
python-gitlab's tox runs ``pytest tests/unit``, its ``tests/functional``
need a live GitLab that ``docker compose`` starts (``tox -m func``). Run as
a whole, such a suite is hundreds of failures that say only that the
service is not there. The unit role runs what the default command selects,
read in this order (the first that runs pytest decides):

- tox: the ``commands`` of the environment a plain ``tox`` runs for the
  Python in use (``workspace/pyenv_tox.tox_commands``);
- nox: the sessions a plain ``nox`` runs (``nox.options.sessions``, else
  every session not marked ``default=False``), their ``session.run`` calls
  with literal arguments;
- the CI workflows' ``run:`` lines (``.github/workflows``) of jobs that
  start no service containers, unless a job tests through a driver of its
  own (``make prcheck``, ``tox``, a script): what that runs is unknown, so
  nothing is narrowed.

A pytest command with no path argument runs what pytest selects itself
(``testpaths``): nothing is narrowed. Only paths inside the project that
hold test modules are taken. All of it is read as text, never run, with
no link followed and no FIFO waited on (``read_regular_bytes``).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ...workspace.pyast import parse as parse_python
from ...workspace.pyenv_read import read_pyproject
from ...workspace.pyenv_tox import tox_commands
from ...workspace.pytest_addopts import project_addopts
from ...workspace.regular import read_regular_bytes

_MAX_READ = 1 << 20
# pytest options whose value is the next word (a marker expression, a
# plugin's setting): that word is never a path to run.
_VALUED = frozenset({
    "-k", "-m", "-p", "-c", "-o", "-W", "-n", "-r", "--ignore", "--ignore-glob", "--deselect",
    "--rootdir", "--basetemp", "--confcutdir", "--junitxml", "--junit-xml", "--log-level",
    "--log-cli-level", "--tb", "--maxfail", "--durations", "--doctest-glob", "--timeout",
    "--reruns", "--dist", "--import-mode", "--html", "--cov", "--cov-report", "--cov-config",
    "--cov-fail-under", "--numprocesses", "--override-ini", "--benchmark-storage",
    "--randomly-seed", "--asyncio-mode", "--capture", "--color",
})
_POSARGS = re.compile(r"\{posargs(?::([^}]*))?\}|\[\]")
_TOX_VARS = re.compile(r"\{env(?:python|bindir|dir|sitepackagesdir)\}/?")


@dataclass(frozen=True)
class DefaultSuite:
    paths: tuple[str, ...]  # what the default command runs (project-relative; none: pytest's)
    source: str  # where it is said: "tox.ini (py311): pytest tests/unit"
    options: tuple[str, ...] = ()  # its marker expression: ("-m", "not integration")


def pytest_paths(command: str, root: Path) -> list[str] | None:
    """The test paths a pytest ``command`` line names that exist in
    ``root`` ([] for none: pytest's own selection); None when the line
    does not run pytest."""
    found = pytest_selection(command, root)
    return None if found is None else found[0]


def pytest_selection(command: str, root: Path) -> tuple[list[str], list[str]] | None:
    """(``pytest_paths``, the ``-m`` marker expression it selects with as
    pytest's arguments); None when the line does not run pytest."""
    command = _POSARGS.sub(lambda m: m.group(1) or "", _TOX_VARS.sub("", command))
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    words = [w for w in words if w not in ("-", "")]
    start = None
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        if base in ("pytest", "py.test"):
            start = i + 1
        elif word == "-m" and i + 1 < len(words) and words[i + 1] == "pytest":
            start = i + 2
        if start is not None:
            break
    if start is None:
        return None
    out: list[str] = []
    markers: list[str] = []
    skip = None
    for word in words[start:]:
        if word in ("&&", "||", ";", "|"):
            break  # the next command on the line
        if skip is not None:
            if skip == "-m":
                markers = ["-m", word]
            skip = None
            continue
        if word.startswith("-m=") or word.startswith("-m") and len(word) > 2 and word[2] != "=":
            markers = ["-m", word[3:] if word.startswith("-m=") else word[2:]]
            continue
        if word.startswith("-"):
            skip = word if word in _VALUED else None
            continue
        rel = word.split("::", 1)[0].rstrip("/")
        if _inside(root, rel):
            out.append(rel)
    return out, markers if len(markers) == 2 and markers[1] else []


def default_suite(root: Path, tests: list[str]) -> DefaultSuite | None:
    """The paths the project's default test command names, where they hold
    some of the test modules in ``tests`` (the project's, relative to
    ``root``); None where no command names paths (pytest's own selection)."""
    for source, paths, options in _commands(root):
        # (naming them runs the same test modules where they are all, and
        # leaves out the doctests of the other modules, as the command does)
        if not any(_under(t, paths) for t in tests) or _under(".", paths):
            paths = []
        if not paths and not options:
            return None  # its default command runs pytest's own selection
        return DefaultSuite(tuple(dict.fromkeys(paths)), source, tuple(options))
    return None


def left_out_line(suite: DefaultSuite, tests: list[str], root: Path) -> str | None:
    """"selected tests/unit, as ... does (tox.ini (py311): pytest tests/unit);
    left out tests/functional (44 test module(s)), which that command does
    not run"; None when it leaves nothing out."""
    groups: dict[str, int] = {}
    for t in tests if suite.paths else ():
        if not _under(t, suite.paths):
            group = _group(t, suite.paths)
            groups[group] = groups.get(group, 0) + 1
    what = None
    if groups:
        count = sum(groups.values())
        named = sorted(groups, key=lambda g: (-groups[g], g))
        shown = ", ".join(named[:4]) + (f" and {len(named) - 4} more" if len(named) > 4 else "")
        what = f"{shown} ({count} test module(s))"
    elif suite.paths and "--doctest-modules" in project_addopts(root):
        what = "the doctests of the modules outside " + ", ".join(suite.paths)
    if what is None and not suite.options:
        return None
    ran = ", ".join(suite.paths) or "the tests pytest collects"
    if suite.options:
        ran += f" with {shlex.join(suite.options)}"
    return (f"selected {ran}, as the project's default test command does ({suite.source})"
            + (f"; left out {what}, which that command does not run" if what else ""))


def _commands(root: Path):
    """(where, paths, options) of the pytest command of the default test
    command, tox's first, then nox's, then the CI workflows' (paths only)."""
    data = read_pyproject(root)
    tox = tox_commands(root, data)
    if tox is not None:
        file, env, lines = tox
        for line in lines:
            if (found := pytest_selection(line, root)) is not None:
                yield f"{file} ({env}): {_short(line)}", *found
                return
    for session, line in _nox_runs(root):
        if (found := pytest_selection(line, root)) is not None:
            yield f"noxfile.py ({session}): {_short(line)}", *found
            return
    found = _workflow_runs(root)
    if found is not None:
        where, paths = found
        yield where, paths, []


def _short(line: str) -> str:
    line = " ".join(_POSARGS.sub(lambda m: m.group(1) or "", line).split())
    return line if len(line) <= 80 else line[:77] + "..."


def _inside(root: Path, rel: str) -> bool:
    """A relative path in ``root`` (no ``..``, no link on the way), there."""
    path = PurePosixPath(rel)
    if not rel or path.is_absolute() or ".." in path.parts or rel.startswith("$"):
        return False
    full = root
    for part in path.parts:
        full = full / part
        if full.is_symlink():
            return False
    return full.is_dir() or (full.is_file() and rel.endswith(".py"))


def _under(test: str, paths: tuple[str, ...] | list[str]) -> bool:
    return any(p in (".", "") or test == p or test.startswith(p + "/") for p in paths)


def _group(test: str, paths: tuple[str, ...] | list[str]) -> str:
    """The shallowest folder of ``test`` that no selected path is in
    (``tests/functional`` beside ``tests/unit``)."""
    parts = test.split("/")
    for i in range(1, len(parts)):
        head = "/".join(parts[:i])
        if not any(p == head or p.startswith(head + "/") for p in paths):
            return head
    return test


def _text(path: Path) -> str | None:
    raw = read_regular_bytes(path, _MAX_READ)
    return None if raw is None else raw.decode("utf-8", errors="replace")


def _nox_runs(root: Path) -> list[tuple[str, str]]:
    """(session, command line) of each ``session.run`` with literal
    arguments in the sessions a plain ``nox`` runs, in their order."""
    text = _text(root / "noxfile.py")
    if not text:
        return []
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return []
    chosen: list[str] | None = None
    sessions: list[tuple[str, ast.FunctionDef, bool]] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Tuple)) and any(
                ast.unparse(t) == "nox.options.sessions" for t in node.targets):
            chosen = [e.value for e in node.value.elts
                      if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                call = dec if isinstance(dec, ast.Call) else None
                target = ast.unparse(call.func if call else dec)
                if target not in ("nox.session", "session"):
                    continue
                name, default = node.name, True
                for kw in call.keywords if call else []:
                    if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                        name = str(kw.value.value)
                    if kw.arg == "default" and isinstance(kw.value, ast.Constant):
                        default = bool(kw.value.value)
                sessions.append((name, node, default))
                break
    out = []
    for name, fn, default in sessions:
        if (name not in chosen) if chosen is not None else not default:
            continue
        for node in ast.walk(fn):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "run"):
                words = [a.value for a in node.args
                         if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if words:
                    out.append((name, shlex.join(words)))
    return out


# A CI line that runs a project's own test driver, not pytest named: make,
# tox, nox, hatch, invoke, just, or a script of the project.
_OPAQUE_RUN = re.compile(r"^\s*(?:make|tox|nox|hatch\s+(?:run|test)|invoke|inv|just"
                         r"|(?:ba)?sh\s+\S+|\./\S+|python\d?(?:\.\d+)?\s+(?:\S+/)?"
                         r"(?:setup\.py\s+test|runtests\.py|run_tests\.py))\b")


def _workflow_runs(root: Path) -> tuple[str, list[str]] | None:
    """("the CI workflow test.yml: pytest tests", its paths) for the pytest
    lines of the workflows' jobs that start no service containers: the
    union of their paths ([] when one names none); None when none runs
    pytest."""
    import yaml  # (only where the project has workflows)

    folder = root / ".github" / "workflows"
    if folder.is_symlink() or not folder.is_dir():
        return None
    found: tuple[str, list[str]] | None = None
    try:
        names = sorted(os.listdir(folder))[:50]
    except OSError:
        return None
    for name in names:
        if not name.endswith((".yml", ".yaml")) or not (text := _text(folder / name)):
            continue
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        jobs = data.get("jobs") if isinstance(data, dict) else None
        for job in (jobs or {}).values() if isinstance(jobs, dict) else []:
            if not isinstance(job, dict) or job.get("services"):
                continue
            for step in job.get("steps") or []:
                run = step.get("run") if isinstance(step, dict) else None
                for line in run.splitlines() if isinstance(run, str) else []:
                    if _OPAQUE_RUN.match(line):
                        # a job that tests through a tool of its own (chalice's
                        # `make prcheck`): what it runs is unknown, so another
                        # job's pytest line (its CDK tests) says nothing of the
                        # default suite
                        return None
                    paths = pytest_paths(line, root)
                    if paths is None:
                        continue
                    if not paths:
                        return f"the CI workflow {name}: {_short(line)}", []
                    if found is None:
                        found = (f"the CI workflow {name}: {_short(line)}", [])
                    found[1].extend(p for p in paths if p not in found[1])
    return found
