"""The warm helper's child (warm_server forks one per command line): it
waits for the client's "go", becomes the client's process (its standard
streams, working folder, environment, umask, nice, argv and encodings) and
runs the same ``superqode_ls.cli.main`` a new process would."""

from __future__ import annotations

import io
import os
import signal
import sys
import time

from . import warm_client as wc


class ChildRun:
    """The forked child: wait for "go", become the client's process, run."""

    def __init__(self, msg: dict, fds: list[int], go_r: int, close_helper):
        self.msg, self.fds, self.go_r, self.close_helper = msg, fds, go_r, close_helper

    def __call__(self) -> int:
        self.close_helper()  # the child keeps none of the helper's descriptors
        self.close_helper = None
        _reset_signals()
        if os.read(self.go_r, 1) != b"g":
            os._exit(0)  # the client never committed: nothing was done
        os.close(self.go_r)
        msg, (stdin, stdout, stderr, cwd) = self.msg, self.fds
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
            os.close(fd)
        os.fchdir(cwd)
        os.close(cwd)
        os.umask(msg["umask"])
        if msg["nice"] != os.getpriority(os.PRIO_PROCESS, 0):
            os.setpriority(os.PRIO_PROCESS, 0, msg["nice"])
        os.environ.clear()
        os.environ.update(msg["env"])
        from ..engine.runtime import reuse_kept_probe

        # The helper's probe of the namespace sandbox, where the client's
        # environment reads the same (else this run probes, as a new process).
        reuse_kept_probe()
        time.tzset()
        _locale()
        sys.argv = [msg["argv0"], *msg["argv"]]
        if sys.path:
            sys.path[0] = msg["path0"]
        _streams(msg["streams"])
        wc.IN_HELPER = True
        from . import main

        return main(list(msg["argv"]))


def _reset_signals() -> None:
    """As a new interpreter has them."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(s, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)


def _locale() -> None:
    try:
        import locale

        locale.setlocale(locale.LC_CTYPE, "")
    except Exception:  # noqa: BLE001, S110 - an unknown locale: Python's own start keeps C too
        pass


def _streams(streams: list) -> None:
    """sys.stdin/stdout/stderr over fds 0/1/2 as the interpreter opens them
    (line-buffered on a terminal; stderr always), with the client's encodings."""

    def enc(i: int, default_errors: str) -> tuple[str | None, str]:
        s = streams[i] if i < len(streams) and streams[i] else [None, default_errors]
        return s[0], s[1] or default_errors

    def text(fd: int, i: int, errors: str, line: bool) -> io.TextIOWrapper:
        raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
        buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
        e, err = enc(i, errors)
        return io.TextIOWrapper(buffered, encoding=e, errors=err, line_buffering=line)

    sys.stdin = sys.__stdin__ = text(0, 0, "strict", False)
    sys.stdout = sys.__stdout__ = text(1, 1, "strict", os.isatty(1))
    sys.stderr = sys.__stderr__ = text(2, 2, "backslashreplace", True)
