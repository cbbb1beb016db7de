"""How a ``superqe`` process ends once its command is done.

The interpreter's own teardown after ``sys.exit`` (every module's objects
freed one by one, the collector over all of them) cost a quick run 0.06-0.24 s
of wall time on a loaded 2-core machine, after its report was written and its
last line printed: the shell waited for it, and so did a client of the warm
helper, whose forked child ends the same way. Nothing of it is the command's
work, so the process ends the way the interpreter would up to that point --
non-daemon threads joined (a thread pool's work finished), ``atexit`` handlers
run (logging's flush, ``weakref.finalize``), the standard streams flushed --
and then exits at once, its code kept.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def end_process(code: int) -> NoReturn:
    """Exit this process with ``code`` after what the interpreter's exit
    does for the program (threads, ``atexit``, streams), without freeing
    its objects one by one. Only for a process's entry point: it never
    returns."""
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None and threading.current_thread() is threading.main_thread():
        shutdown()  # the threads' atexit hooks (thread pools end), then non-daemon threads joined
    atexit._run_exitfuncs()
    _flush()
    os._exit(code)


def _flush() -> None:
    """Flush stdout and stderr; a reader gone meanwhile drops the rest
    quietly (as ``QuietPipe`` does) and the command keeps its own code."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except BrokenPipeError:
            _to_devnull(stream)
        except (OSError, ValueError):
            pass  # closed or broken: nothing more can reach the reader


def _to_devnull(stream) -> None:
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
