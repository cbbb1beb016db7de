"""The compiled code of the protocol's generated methods, kept between starts.

Importing ``lsprotocol.types`` defines some 550 attrs classes, and attrs
writes each one's ``__init__``/``__eq__``/``__repr__``... as source text and
compiles it: about 0.17 s of the import's 0.3 s of CPU goes to ``compile``,
on every start, before the server can answer ``initialize``. cattrs does the
same for each message type the first time one is read or written. The text
is the same at every start, so its compiled code is too: it is kept here, as
Python keeps a module's bytecode in ``__pycache__``, and the next start
reuses it.

What the cache may hold is code this process runs outside any sandbox, so it
lives where no session can write or even read: ``$SUPERQODE_HOME/run``, the
folder of the server's own secrets, hidden from every session and made
``0700`` (workspace/namespaces.py). The file is read only when it is a
regular file of this user that nobody else can write, opened without
following a link; anything else, and any file that does not read back as a
table of code objects, is ignored (everything is compiled, as without it).
An entry is found by a digest of the exact text, file name and compiler
flags it was compiled from, for this interpreter's bytecode (the file's
name holds its magic number): a change of attrs, cattrs or lsprotocol gives
other texts and so other entries, never a wrong one.

Bounded: a save keeps only the entries this process used (at most
``MAX_ENTRIES``), so the file holds what one start needs.
"""

from __future__ import annotations
import __future__

import builtins
import contextlib
import hashlib
import importlib.util
import logging
import marshal
import os
import stat
import sys
import threading
import types
from pathlib import Path

log = logging.getLogger(__name__)

# The modules whose generated code is cached (their globals get a ``compile``
# that looks in the cache first).
MODULES = ("attr._make", "cattrs.gen", "cattrs.gen.typeddicts")
MAX_ENTRIES = 6000
MAX_BYTES = 32 << 20
RESAVE_MIN = 8


def cache_path() -> Path:
    from ..config import superqode_home

    tag = importlib.util.MAGIC_NUMBER.hex()
    return superqode_home() / "run" / f"code-{sys.implementation.cache_tag}-{tag}.marshal"


def _future_flags(module: types.ModuleType) -> int:
    """The ``__future__`` flags a ``compile`` called in ``module`` inherits
    (its ``from __future__ import ...`` bind the feature objects there)."""
    flags = 0
    for name in __future__.all_feature_names:
        feature = getattr(__future__, name)
        if vars(module).get(name) is feature:
            flags |= feature.compiler_flag
    return flags


def _key(source: str, filename: str, mode: str, flags: int) -> bytes:
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{mode}\0{flags}\0{filename}\0".encode("utf-8", "surrogatepass"))
    h.update(source.encode("utf-8", "surrogatepass"))
    return h.digest()


def _read(path: Path) -> dict[bytes, types.CodeType]:
    """The cache at ``path``, or {} when it is missing or not to be trusted."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        parent = os.stat(path.parent, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022 \
                or st.st_size > MAX_BYTES or not stat.S_ISDIR(parent.st_mode) \
                or parent.st_uid != os.getuid() or parent.st_mode & 0o022:
            log.info("code cache %s ignored: not a private file of this user", path)
            return {}
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = marshal.load(fh)
    except (OSError, EOFError, ValueError, TypeError) as e:
        log.info("code cache %s ignored: %s", path, e)
        return {}
    finally:
        os.close(fd)
    if not isinstance(data, dict) or not all(
            isinstance(k, bytes) and isinstance(v, types.CodeType) for k, v in data.items()):
        log.info("code cache %s ignored: not a table of code", path)
        return {}
    return data


class CodeCache:
    """The one owner of the cache's entries for this process: those read at
    start, and those compiled since (``MAX_ENTRIES`` at most)."""

    def __init__(self, path: Path):
        self.path = path
        self.stored = _read(path)
        self.used: dict[bytes, types.CodeType] = {}
        self.hits = 0
        self.misses = 0
        self._saved_misses = 0
        self._lock = threading.Lock()

    def compiler(self, inherited: int):
        """A ``compile`` for a module whose own calls inherit the
        ``__future__`` flags ``inherited``."""
        real = builtins.compile

        def compile(source, filename, mode, flags=0, dont_inherit=False, optimize=-1,
                    **kwargs):
            if flags or dont_inherit or optimize != -1 or kwargs \
                    or not isinstance(source, str) or not isinstance(filename, str):
                own = flags if dont_inherit else flags | inherited
                return real(source, filename, mode, own, True, optimize, **kwargs)
            key = _key(source, filename, mode, inherited)
            code = self.stored.get(key)
            with self._lock:
                if code is not None:
                    self.hits += 1
                else:
                    code = real(source, filename, mode, inherited, True)
                    self.misses += 1
                if len(self.used) < MAX_ENTRIES:
                    self.used[key] = code
            return code

        return compile

    def install(self) -> None:
        """Give the generating modules this cache's ``compile``."""
        for name in MODULES:
            try:
                module = importlib.import_module(name)
            except ImportError:
                continue
            if "compile" in vars(module):  # a name of its own: leave it
                continue
            module.compile = self.compiler(_future_flags(module))

    def save(self) -> bool:
        """Write the entries used so far, when enough were compiled since
        the last save (a temporary file renamed over the old: a reader sees
        one or the other, whole); False when nothing was written.

        A few texts differ at every start (attrs puts the process's string
        hash of a frozen class's name in its ``__hash__``): a start that
        compiled only those, or a few more, leaves the file as it is."""
        with self._lock:
            new = self.misses - self._saved_misses
            if new < max(RESAVE_MIN, len(self.stored) // 20):
                return False
            table = dict(self.used)
            self._saved_misses = self.misses
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                marshal.dump(table, fh)
            os.replace(tmp, self.path)
        except OSError as e:
            log.info("code cache not saved: %s", e)
            with contextlib.suppress(OSError):
                tmp.unlink()
            return False
        return True


_CACHE: CodeCache | None = None


def begin() -> CodeCache | None:
    """Install the process's cache (before ``lsprotocol.types`` is imported);
    None when ``SUPERQODE_CODE_CACHE=off``."""
    global _CACHE
    if _CACHE is None and os.environ.get("SUPERQODE_CODE_CACHE", "on") != "off":
        _CACHE = CodeCache(cache_path())
        _CACHE.install()
    return _CACHE


def save() -> None:
    """Write what this process compiled, at the server's exit: not while the
    editor's first files are analysed (a write of a megabyte or two, and
    the interpreter's lock while it is serialised)."""
    if _CACHE is not None:
        _CACHE.save()
