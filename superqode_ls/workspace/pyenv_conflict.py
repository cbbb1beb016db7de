"""Requirement files whose pins cannot be installed together (pyenv_build).

A project keeps requirement files for several purposes (its docs, a
lint job, an old Python), and installing all of them at once fails when
two pin one package differently. The build then falls back to the files
the project's tests use (those tox's test environment names, else the ones
named for tests), and says in one line which two files conflict and on
which package; the resolver's whole explanation (2,500 characters on a
real project) is never printed.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from packaging.utils import canonicalize_name

from .regular import read_regular_bytes

# uv's and pip's words for requirements that cannot be satisfied together.
_CONFLICT = re.compile(r"No solution found when resolving|requirements are unsatisfiable|"
                       r"ResolutionImpossible|conflicting dependencies", re.IGNORECASE)
# A package with a version specifier in the resolver's message (``flask==2.0.3``,
# ``you require click>=8``).
_PINNED = re.compile(r"\b([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:===?|>=|<=|~=|!=|<|>)")
_REQ_LINE = re.compile(r"^[ \t]*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?[ \t]*([^#;\s][^#;\n]*)?",
                       re.MULTILINE)
# The files a test run needs, by their names (requirements/test.txt,
# requirements-dev.txt, test-requirements.txt, ci.txt).
_FOR_TESTS = re.compile(r"test|dev|ci\b|tox", re.IGNORECASE)
_MAX_READ = 200_000


def is_conflict(why: str) -> bool:
    return bool(_CONFLICT.search(why or ""))


def _pins(folder: Path, rel: str) -> dict[str, str]:
    """Each package a requirement file names (its canonical name) -> the line."""
    raw = read_regular_bytes(folder / rel, _MAX_READ)  # no link followed, no FIFO waited on
    if raw is None:
        return {}
    out: dict[str, str] = {}
    for m in _REQ_LINE.finditer(raw.decode("utf-8", errors="replace")):
        if m.group(1).startswith("-"):
            continue
        out.setdefault(canonicalize_name(m.group(1)), m.group(0).strip())
    return out


def conflicting(folder: Path, files: tuple[str, ...], why: str) -> str | None:
    """"requirements/docs.txt (sphinx==4.0.3) and requirements/test.txt
    (sphinx>=7)": the first two files that name a package of the resolver's
    message differently; None when no two files do."""
    named = list(dict.fromkeys(canonicalize_name(m.group(1)) for m in _PINNED.finditer(why)))
    pins = {rel: _pins(folder, rel) for rel in files}
    for name in named:
        lines = [(rel, p[name]) for rel, p in pins.items() if name in p]
        for i, (rel_a, line_a) in enumerate(lines):
            for rel_b, line_b in lines[i + 1:]:
                if line_a.replace(" ", "") != line_b.replace(" ", ""):
                    return f"{rel_a} ({line_a[:80]}) and {rel_b} ({line_b[:80]})"
    return None


def narrower(files: tuple[str, ...], tox_files: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    """The files the tests use among ``files``: tox's test environment's,
    else those named for tests; None when that leaves out none (or all)."""
    keep = tuple(f for f in files if f in tox_files) or tuple(
        f for f in files if _FOR_TESTS.search(PurePosixPath(f).name))
    return keep if keep and len(keep) < len(files) else None


def short(why: str) -> str:
    """The resolver's conclusion in one line (its last ``Because ...``
    sentence, else its first line), at most 300 characters."""
    text = " ".join((why or "").split())
    m = re.findall(r"(?:Because|And because).{0,600}?(?:unsatisfiable|cannot be used)\.?", text)
    said = m[-1] if m else text.removeprefix("error: ").strip()
    return said[:300] + ("..." if len(said) > 300 else "")
