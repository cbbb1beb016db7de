"""Small helpers shared by the static roles: which files to look at, reading
flagged lines, stable ids, tool output parsing."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...config import Config
from ...models import Finding
from ...runtime import Runtime
from ...workspace.regular import read_regular_bytes as _read_regular

# Directories no role analyses: VCS data, virtualenvs, caches, SuperQode's own.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".superqode",
        ".venv",
        "venv",
        "env",
        ".env",
        ".tox",
        ".nox",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "build",
        "dist",
        "site-packages",
        ".eggs",
    }
)


def walk_files(root: Path, suffixes: tuple[str, ...] | None = None) -> list[str]:
    """Relative POSIX paths of files under ``root``, skipping SKIP_DIRS."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")
        )
        base = Path(dirpath)
        for name in sorted(filenames):
            if suffixes and not name.endswith(suffixes):
                continue
            p = base / name
            if p.is_symlink() or not p.is_file():
                continue
            out.append(p.relative_to(root).as_posix())
    return out


def selected_files(
    root: Path, files: list[str] | None, suffixes: tuple[str, ...] | None = None
) -> list[str]:
    """``files`` (existing ones, matching ``suffixes``) or every file under root."""
    if files is None:
        return walk_files(root, suffixes)
    out = []
    for rel in files:
        p = root / rel
        if suffixes and not rel.endswith(suffixes):
            continue
        if p.is_file() and not p.is_symlink():
            out.append(Path(rel).as_posix())
    return sorted(set(out))


# A shard must carry this much source to repay its own start (bandit: about
# 0.25 s of CPU to start, then about 5 s per MB here).
MIN_SHARD_BYTES = 160_000
# More processes than this of one tool only pay more starts: quick mode's
# other roles (ruff, the scans, pytest) run beside it and want CPUs too.
MAX_SHARDS = 8


def worker_count(config: Config, runtime: Runtime) -> int:
    """How many processes a role splits its work over: ``execution.workers``
    (or ``$SUPERQODE_WORKERS``, see config.load_config) when forced, else
    the CPUs the tools may use (``runtime``'s)."""
    return config.execution.workers or runtime.cpu_count()


def shard_count(total_bytes: int, n_files: int, cpus: int) -> int:
    """How many processes of one tool pay on ``cpus`` CPUs: at most half of
    them beyond two (the roles beside it need the rest; more shards only
    start more processes), each with at least MIN_SHARD_BYTES of source and
    8 files."""
    cap = cpus if cpus <= 2 else max(2, cpus // 2)
    return max(1, min(cap, MAX_SHARDS, total_bytes // MIN_SHARD_BYTES, n_files // 8))


def shards_by_size(root: Path, files: list[str], cpus: int, *,
                   arg_bytes: int = 1_000_000) -> list[list[str]]:
    """``files`` split for processes of one tool on ``cpus`` CPUs
    (``shard_count``), in lists of about equal bytes (largest file first
    into the lightest list), each in path order. One list when the files
    are too few to repay a second start, and none when a list would not fit
    on a command line (the caller then lets the tool walk the tree itself)."""
    sizes = []
    for rel in files:
        try:
            sizes.append((os.stat(root / rel).st_size, rel))
        except OSError:
            sizes.append((0, rel))
    n = shard_count(sum(size for size, _ in sizes), len(files), cpus)
    lists: list[list[str]] = [[] for _ in range(n)]
    load = [0] * n
    for size, rel in sorted(sizes, reverse=True):
        i = load.index(min(load))
        lists[i].append(rel)
        load[i] += size + 1
    if any(sum(len(r) + 1 for r in lst) > arg_bytes for lst in lists):
        return []
    return [sorted(lst) for lst in lists if lst]


def rel_to(root: Path, path: str) -> str:
    """A tool's path (absolute or relative to root) as a root-relative POSIX path."""
    # Memoised: a tool names the same file once per finding (thousands on a
    # large tree) and resolving it is a dozen system calls each time.
    return _rel_to(str(root), path)


@functools.lru_cache(maxsize=65536)
def _rel_to(root: str, path: str) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            return p.resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            return p.as_posix()
    return Path(os.path.normpath(path)).as_posix()


def read_bounded(path: Path | str, limit: int | None) -> bytes | None:
    """``path``'s bytes when it is a regular file of at most ``limit`` bytes
    (None: no bound), else None. Caches and the sandbox's files are read
    while other processes may write there: a link (one swapped in after a
    walk) is never followed, a FIFO or device neither blocks nor is read,
    and nothing past the bound is read."""
    raw = _read_regular(path, None if limit is None else limit + 1)
    return raw if raw is None or limit is None or len(raw) <= limit else None


def read_prefix(path: Path | str, limit: int) -> bytes | None:
    """The first ``limit`` bytes of ``path`` when it is a regular file, else
    None: a judgement that needs only a file's start (its kind, a marker),
    with ``read_bounded``'s care (no link followed, no FIFO waited on)."""
    return _read_regular(path, limit)


def read_head(path: Path | str, limit: int) -> str | None:
    """``read_prefix`` as text (UTF-8, undecodable bytes replaced)."""
    raw = read_prefix(path, limit)
    return None if raw is None else raw.decode("utf-8", "replace")


def read_regular(path: Path) -> str | None:
    """``path``'s text (UTF-8, newlines as on disk) when it is a regular file,
    else None (``read_bounded``, no bound)."""
    raw = read_bounded(path, None)
    try:
        return None if raw is None else raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


class SourceCache:
    """Reads each file once (text as on disk, newlines kept)."""

    def __init__(self, root: Path):
        self.root = root
        self._texts: dict[str, str | None] = {}
        self._lines: dict[str, list[str]] = {}  # split once, not once per finding

    def text(self, rel: str) -> str | None:
        if rel not in self._texts:
            self._texts[rel] = read_regular(self.root / rel)
        return self._texts[rel]

    def split(self, rel: str) -> list[str] | None:
        """The text split at "\n" (once: snippets and diffs share it)."""
        lines = self._lines.get(rel)
        if lines is None:
            text = self.text(rel)
            if text is None:
                return None
            lines = self._lines[rel] = text.split("\n")
        return lines

    def line(self, rel: str, line: int) -> str | None:
        lines = self.split(rel) if line >= 1 else None
        if lines is None:
            return None
        if line > len(lines):
            return None
        return lines[line - 1].rstrip("\r")


def byte_col_to_char(line_text: str | None, byte_col: int) -> int:
    """0-based UTF-8 byte offset (Python's ast) -> 0-based code point offset."""
    if not line_text:
        return byte_col
    return len(line_text.encode("utf-8")[:byte_col].decode("utf-8", "ignore"))


def is_test_path(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(p in ("tests", "test", "testing") for p in parts[:-1])
    )


def assign_ids(findings: Iterable[Finding], in_place: bool = False) -> list[Finding]:
    """Stable ids; identical problems in one file (same rule, same text) get
    ``-2``, ``-3``... in line order so every id stays unique. ``in_place``:
    the findings are the caller's own, just made (thousands of copies took
    a second on a large tree)."""
    out = [f.with_stable_id() for f in findings]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(out):
        groups[f.id].append(i)
    for ids in groups.values():
        if len(ids) < 2:
            continue
        ids.sort(key=lambda i: (_line(out[i]), i))
        for n, i in enumerate(ids[1:], start=2):
            if in_place:
                out[i].id = f"{out[i].id}-{n}"
            else:
                out[i] = out[i].model_copy(update={"id": f"{out[i].id}-{n}"})
    return out


def _line(f: Finding) -> int:
    return f.range.start_line if f.range is not None else 0


def fingerprint(rule_id: str, *parts: str) -> str:
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogateescape")).hexdigest()
    return f"{rule_id.lower()}-{digest[:12]}"


def load_json(text: str) -> Any:
    """JSON from a tool's stdout, tolerating banner lines before it."""
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    for opener in ("{", "["):
        i = text.find("\n" + opener)
        if i >= 0:
            try:
                return json.loads(text[i + 1 :])
            except ValueError:
                continue
    raise ValueError("tool output is not JSON")


def tail(text: str, lines: int = 5) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:])[:500]


_RELEVANT = re.compile(
    r"^(ERROR|INTERNALERROR>|E   |\S*(Error|Warning|Exception)\b|error:|usage:|"
    r"ImportError while|.*?(Pytest\w*Warning|Error): |.*?: error: )"
)


def pytest_message(output: str, lines: int = 3) -> str:
    """pytest's own words for why it stopped: its first relevant lines."""
    text = [ln.rstrip() for ln in output.splitlines() if ln.strip()]
    internal = [ln.removeprefix("INTERNALERROR>").strip() for ln in text
                if ln.startswith("INTERNALERROR>")]
    if internal:
        # A traceback: the exception at its end is the message.
        raised = [ln for ln in internal if re.match(r"^[\w.]+(Error|Warning|Exception)\b", ln)]
        return (raised or internal)[-1][:600]
    picked = [ln.strip() for ln in text if _RELEVANT.match(ln)]
    if not picked:
        return tail(output, lines)
    # The generic "usage: pytest [options]..." banner says nothing; the line
    # after it does.
    picked = [ln for ln in picked if not re.match(r"^(ERROR: )?usage:", ln)] or picked
    return " | ".join(dict.fromkeys(picked[:lines]))[:600]
