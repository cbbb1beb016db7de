"""Starts the run's warm pytest (``_forkserver``) as ``python -m pytest``
would, reading the interpreter's and its environment's own bytecode.

A scratch copy's processes write bytecode only to the session's cache
(``PYTHONPYCACHEPREFIX``), never beside a source. With a prefix set,
Python also reads only there: in a session's first run every module of the
standard library, pytest and its plugins that the start imports was
compiled from source (about a second of CPU before the first test, on the
path every worker waits for). Here a module under the interpreter's or its
environment's prefix whose bytecode beside it is valid for the source
(pip and the interpreter's installer write it) is read from there; any
other module, and every write, still goes through the session's cache.

Run as ``python superqode_launch.py ARGS...`` with the working directory
first on sys.path (as ``-m`` puts it). It imports nothing from SuperQode:
it runs in the project's Python.
"""

import os
import sys

if __name__ == "__main__":
    # First, before any other import: the script's folder is no place to
    # import from, the working directory is (``-m``).
    sys.path[0] = os.getcwd()

# The import system itself (always loaded: importing ``importlib`` first
# would compile it and what it imports before the change below).
_be = sys.modules["_frozen_importlib_external"]


def _inside(path, roots):
    return any(path == r or path.startswith(r + os.sep) for r in roots)


def _fresh(source, pyc):
    """Whether ``pyc`` is timestamp bytecode valid for ``source`` (the
    check the import system makes); a hash-based or unreadable one is not
    trusted here (the session's cache takes it)."""
    try:
        st = os.stat(source)
        with open(pyc, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return False
    if len(head) < 16 or head[:4] != _be.MAGIC_NUMBER or head[4:8] != b"\0\0\0\0":
        return False
    return (int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF)


def install():
    """Read valid installed bytecode in place; write only to the prefix."""
    prefix = sys.pycache_prefix
    if not prefix:
        return
    prefix = os.path.abspath(prefix)
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                            sys.base_exec_prefix)}
    roots |= {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix)}
    # Never the scratch copies (the working directory's folder holds them
    # all): their files are the code under test, compiled into the cache.
    private = {prefix, os.path.dirname(os.path.realpath(os.getcwd()))}
    cached = _be.cache_from_source
    write = _be.SourceFileLoader._cache_bytecode

    def cache_from_source(path, debug_override=None, *, optimization=None):
        out = cached(path, debug_override, optimization=optimization)
        full = os.path.abspath(path)
        if _inside(full, roots) and not _inside(os.path.realpath(full), private):
            beside = os.path.join(os.path.dirname(full), "__pycache__", os.path.basename(out))
            if _fresh(full, beside):
                return beside
        return out

    def cache_bytecode(self, source_path, bytecode_path, source_bytes):
        # Fails closed: a write anywhere but the session's cache is dropped
        # (bytecode read in place that then failed to load, for one).
        if _inside(os.path.abspath(bytecode_path), {prefix}):
            return write(self, source_path, bytecode_path, source_bytes)
        return None

    _be.cache_from_source = cache_from_source
    _be.SourceFileLoader._cache_bytecode = cache_bytecode


if __name__ == "__main__":
    install()
    import runpy

    runpy.run_module("pytest", run_name="__main__", alter_sys=True)
