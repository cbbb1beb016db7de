"""The pattern and web checks' hits per Python module, kept between runs by
SuperQode's own process.

On a small web project those checks (``_patterns.patterns``,
``_web.web_patterns``: a parse of each module, the request flows across
modules) are the security role's longest step, and an unchanged project's
next run gave the same hits again. What the checks say of a module depends
on its text and, for the checks that follow imports and templates, on the
text of each file they read (``read``). So a module's hits are kept in one
of two ways:

- ``local``: the checks read no other file; kept under the digest of the
  module's text alone (one module changed, the others stay).
- ``tree``: the checks read other files; kept only for the whole tree as it
  was (every scanned module's digest and every file any of them read, with
  ``None`` for one that was missing). The flow checks keep summaries of the
  modules they import in their own process (``_web_calls._MODULES``), and a
  summary found there reads nothing more, so a module's own reads are not
  all it depends on: one changed file makes every such module's hits new.

Every entry is also keyed by ``CHECKS``: the source of the checks' modules
(any change of their code or rules makes a new cache), the format's version
and the interpreter's (its parser). The checks read no configuration.

Who writes: SuperQode's process alone, after its own checks ran; the folder
is outside ``$SUPERQODE_HOME/cache`` and no session's process may write it
(the barrier leaves SuperQode's home read-only to them:
tests/redteam/test_web_cache.py). A session may change a file while it is
checked: the digests are of the very text that was checked (the scan reads
each file once), so a result is never kept under bytes it did not read.

Checked before use: the file must be this format, these checks' digest,
and hold hits of the checks' shape only; anything else is read as nothing
(everything is checked anew). Bounded: one file a project, at most
``MAX_BYTES``, at most ``MAX_MODULES`` modules.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import superqode_home
from ...models import Severity
from ...workspace.artifacts import atomic_write
from ...workspace.paths import repo_key
from ._common import read_bounded

VERSION = 1  # of the file's format
MAX_BYTES = 8_000_000
MAX_MODULES = 20_000  # sqlalchemy has 668
_NAME = "hits.json"
# one hit: line, column (bytes), end line, end column, rule, title, message, severity
Hit = tuple[int, int, int | None, int | None, str, str, str, Severity]
_SEVERITIES = {s.value: s for s in Severity}


def _checks_digest() -> str:
    """The source of the modules whose code decides the hits: every
    ``_web*`` module (a new one included), the pattern scans and what they
    share, the parser's wrapper, the models; and this file's format."""
    here = Path(__file__).resolve().parent
    pkg = here.parent.parent
    files = sorted(here.glob("_web*.py")) + sorted(here.glob("_patterns*.py")) + [
        here / "_security_scan.py", here / "_common.py", here / "_secrets.py",
        pkg / "qe" / "codegen.py", pkg / "workspace" / "pyast.py", pkg / "models.py"]
    h = hashlib.sha256(f"{VERSION}\0{sys.version}\0".encode())
    for path in files:
        try:
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        except OSError:
            h.update(path.name.encode() + b"\0missing\0")
    return h.hexdigest()


# Taken when the checks are imported (the warm helper imports them once and
# restarts when its code changes), not when a run starts: a hash of source
# edited after the import would name results of the code that was loaded.
CHECKS = _checks_digest()


def digest(text: str | None) -> str | None:
    if text is None:
        return None
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def cache_file(project: Path) -> Path:
    """Not under ``$SUPERQODE_HOME/cache``: only SuperQode's process writes
    here, never a session's."""
    return superqode_home() / "web-results" / repo_key(project) / _NAME


@dataclass
class WebCache:
    path: Path
    # what was kept: {rel: (digest, hits)} and the tree's
    local: dict[str, tuple[str, list[Hit]]] = field(default_factory=dict)
    tree_files: dict[str, str | None] = field(default_factory=dict)
    tree_reads: dict[str, str | None] = field(default_factory=dict)
    tree_hits: dict[str, list[Hit]] = field(default_factory=dict)
    # this run's
    hits: int = 0
    computed: int = 0
    _tree_ok: bool | None = None
    _files: dict[str, str | None] = field(default_factory=dict)
    _new_local: dict[str, tuple[str, list[Hit]]] = field(default_factory=dict)
    _new_tree: dict[str, list[Hit]] = field(default_factory=dict)
    _new_reads: dict[str, str | None] = field(default_factory=dict)

    def begin(self, files: dict[str, str | None], read_digest) -> None:
        """This run's modules with the digests of their texts;
        ``read_digest(path)`` gives a file's current digest (None: missing)."""
        self._files = files
        self._tree_ok = (bool(self.tree_hits) and files == self.tree_files
                         and all(read_digest(p) == d for p, d in self.tree_reads.items()))

    def get(self, rel: str) -> list[Hit] | None:
        want = self._files.get(rel)
        if want is None:
            return None
        kept = self.local.get(rel)
        if kept is not None and kept[0] == want:
            self.hits += 1
            self._new_local[rel] = kept
            return kept[1]
        if self._tree_ok and rel in self.tree_hits:
            self.hits += 1
            self._new_tree[rel] = self.tree_hits[rel]
            return self.tree_hits[rel]
        return None

    def put(self, rel: str, hits: list[Hit], reads: dict[str, str | None]) -> None:
        """Hits the checks just gave for ``rel``, having read ``reads``
        besides the module itself."""
        want = self._files.get(rel)
        if want is None:
            return
        self.computed += 1
        reads = {p: d for p, d in reads.items() if p != rel}
        if reads:
            self._new_tree[rel] = hits
            self._new_reads.update(reads)
        else:
            self._new_local[rel] = (want, hits)

    def save(self) -> None:
        """Write what this run checked anew (nothing when all came from
        here). The tree's part is this run's alone unless the tree is the
        one kept (then both, a run cut short by its deadline adds to it)."""
        if not self.computed:
            return
        local = dict(self.local)
        local.update(self._new_local)
        if len(local) > MAX_MODULES:
            local = dict(self._new_local)
        files = self._files
        if self._tree_ok:
            tree = {**self.tree_hits, **self._new_tree}
            reads = {**self.tree_reads, **self._new_reads}
        elif len(files) >= len(self.tree_files):
            tree, reads = dict(self._new_tree), dict(self._new_reads)
        else:
            # a run over a few files (a fix's check, the editor's file)
            # leaves the whole tree's hits for the next whole run
            files, tree, reads = self.tree_files, self.tree_hits, self.tree_reads
        if len(local) + len(tree) > MAX_MODULES:
            return
        data = {"version": VERSION, "checks": CHECKS,
                "local": {r: [d, [_dump(h) for h in hs]] for r, (d, hs) in local.items()},
                "tree": {"files": files, "reads": reads,
                         "hits": {r: [_dump(h) for h in hs] for r, hs in tree.items()}}}
        raw = json.dumps(data, separators=(",", ":"))
        if len(raw) > MAX_BYTES:
            return
        with contextlib.suppress(OSError):
            atomic_write(self.path, raw)


def open_cache(project: Path) -> WebCache:
    """The kept hits of ``project``'s modules; empty when there are none or
    what is there is not entirely of the expected shape (fail closed)."""
    path = cache_file(project)
    cache = WebCache(path)
    raw = read_bounded(path, MAX_BYTES)
    if raw is None:
        return cache
    try:
        _load(cache, json.loads(raw))
    except (ValueError, TypeError, KeyError):
        return WebCache(path)
    return cache


def _load(cache: WebCache, data: Any) -> None:
    """Fill ``cache`` from ``data`` or raise ValueError: all or nothing."""
    if not (isinstance(data, dict) and data.get("version") == VERSION
            and data.get("checks") == CHECKS):
        raise ValueError("another format or other checks")
    local, tree = data["local"], data["tree"]
    if not (isinstance(local, dict) and isinstance(tree, dict)):
        raise TypeError("shape")
    for rel, (d, hits) in local.items():
        if not (isinstance(d, str) and _relative(rel)):
            raise ValueError("digest")
        cache.local[rel] = (d, [_hit(h) for h in hits])
    files, reads, hits = tree["files"], tree["reads"], tree["hits"]
    for part in (files, reads):
        if not (isinstance(part, dict)
                and all(d is None or isinstance(d, str) for d in part.values())):
            raise ValueError("digests")
        if not all(_relative(p) for p in part):
            raise ValueError("a path outside the project")
    if not (isinstance(hits, dict) and set(hits) <= set(files)):
        raise ValueError("tree")
    cache.tree_files, cache.tree_reads = files, reads
    cache.tree_hits = {rel: [_hit(h) for h in hs] for rel, hs in hits.items()}


def _relative(path: str) -> bool:
    return (bool(path) and not path.startswith("/") and "\\" not in path
            and ".." not in path.split("/"))


def _dump(h: Hit) -> list:
    return [*h[:7], h[7].value]


def _hit(raw: Any) -> Hit:
    if not (isinstance(raw, list) and len(raw) == 8):
        raise ValueError("hit")
    line, col, end_line, end_col, rule, title, message, severity = raw
    if not (type(line) is int and line >= 1 and type(col) is int and col >= 0
            and (end_line is None or type(end_line) is int)
            and (end_col is None or type(end_col) is int)
            and all(isinstance(s, str) for s in (rule, title, message))
            and severity in _SEVERITIES):
        raise ValueError("hit")
    return (line, col, end_line, end_col, rule, title, message, _SEVERITIES[severity])
