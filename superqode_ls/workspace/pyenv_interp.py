"""Which installed interpreter an environment is built on: the one the
project asks for (``.python-version``, ``requires-python``) when it is
installed, found by ``uv python find`` from a version request only, else
SuperQode's own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from .pyenv import ProjectPython, probe

# What of the project's words goes to ``uv python find``: a version (or a
# specifier), never a path or a program's name (nor an option of uv's). uv
# runs the interpreter it is given, to ask what it is, here, outside the
# barrier; a ``.python-version`` of ``./tools/python`` is the project's (or
# a session's) program.
_VERSION_REQUEST = re.compile(
    r"(?:cpython|python|pypy|graalpy|cp|pp)?[@-]?\d+(?:\.\d+){0,2}(?:(?:a|b|rc)\d+)?t?", re.IGNORECASE)


def pick_interpreter(request: str | None, uv: str | None, hide: Sequence[str] = ()
                     ) -> tuple[str, str, str | None]:
    """(interpreter, its X.Y, a note when the request cannot be met). The
    base of SuperQode's own Python when it matches, else one uv finds.
    ``hide``: the user's ``sandbox.hide``, masked for the probe."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if not request:
        return base, mine, None
    try:
        spec = SpecifierSet(request)
    except InvalidSpecifier:
        spec = None
    full = ".".join(str(n) for n in sys.version_info[:3])
    if spec is not None and spec.contains(full, prereleases=True):
        return base, mine, None
    if spec is None and (request == mine or request.startswith(mine + ".")):
        return base, mine, None
    plain = not any(c in request for c in "/\\~$") and "===" not in request  # (=== takes any word)
    if uv and plain and (spec is not None or _VERSION_REQUEST.fullmatch(request)):
        try:
            # --system: an activated environment is not an interpreter to build on.
            res = subprocess.run([uv, "python", "find", "--system", "--no-project",
                                  "--no-python-downloads", request],
                                 capture_output=True, text=True, timeout=30, check=False,
                                 stdin=subprocess.DEVNULL, env=_search_env())
        except (OSError, subprocess.TimeoutExpired):
            res = None
        if res is not None and res.returncode == 0 and res.stdout.strip():
            found = probe(res.stdout.strip().splitlines()[-1], "uv", hide=hide)
            if isinstance(found, ProjectPython):
                return found.python, found.version, None
    return base, mine, f"the project asks for Python {request}; none is installed, {mine} is used"


_NEEDS_PYTHON = re.compile(r"current Python version \([\d.]+\) does not satisfy "
                           r"Python((?:[<>=!~]=?[\d.*]+,?\s?)+)")


def python_for(why: str | None, uv: str, python: str, hide: Sequence[str] = ()) -> str | None:
    """Another installed interpreter satisfying the Python range the
    resolver said the requirements need (``why``), or None."""
    m = _NEEDS_PYTHON.search(why or "")
    if m is None:
        return None
    other, _, asked = pick_interpreter(m.group(1).strip().rstrip(","), uv, hide)
    return other if asked is None and other != python else None


def _search_env() -> dict[str, str]:
    """The environment ``uv python find`` searches with: pyenv's installed
    versions instead of its shims. A shim of a version that is not selected
    fails ("pyenv: python3.12: command not found") and uv stops there
    instead of looking further."""
    env = dict(os.environ)
    root = Path(env.get("PYENV_ROOT") or Path.home() / ".pyenv")
    dirs = [d for d in env.get("PATH", os.defpath).split(os.pathsep)
            if d and not (d.startswith(str(root)) and d.rstrip("/").endswith("/shims"))]
    versions = sorted(str(b) for b in (root / "versions").glob("*/bin")) if root.is_dir() else []
    env["PATH"] = os.pathsep.join([*dirs, *versions])
    return env
