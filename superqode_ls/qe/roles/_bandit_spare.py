"""A warm bandit server the warm helper (cli/warm_server.py) starts ahead
of a run, for the next run to take (``_bandit_warm``): a run handed to the
helper then finds bandit imported instead of starting its own server beside
the sandbox's making (bandit's imports, about 0.4 s of CPU, are paid before
the run, while nobody waits, instead of on its critical path).

One at a time, and each serves ONE run: the child forked for a
``superqe run`` takes the spare that is ready at its fork, the helper drops
its own ends of the server's pipes at once and starts the next spare only
once no run is under way (so no other run's child holds the new one's
pipes). Nothing of a run reaches another run's server. The server is the
same as a run's own: started outside any session like the language
server's, inside its own read-only namespace sandbox, each request's child
behind that request's session's Landlock rules (fail closed: a run with no
session behind it is not served). It ends with its run: the run stops it,
its stdin closes when the run's process exits, and the helper kills and
reaps it when that process ends (``end_with_run``), before the client hears
of the end; a spare not given ends with the helper.

A run takes it only where its own warm bandit would be the same: the same
interpreter (the helper's, checked at the handoff), the same tools'
priority and CPUs (``Runtime``), the process's own nice unchanged, the same
sandbox for the server (``server_masks``, detected in the run with its
client's environment), and ``SUPERQODE_RUN_BANDIT`` not ``command``;
otherwise it stops the spare and starts its own as before."""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import sys
from typing import TYPE_CHECKING

from ...runtime import Runtime
from ...workspace import landlock, namespaces
from ...workspace.proc import spawn_tool
from . import _bandit_warm

if TYPE_CHECKING:
    from ._bandit_warm import StartingBandit, WarmBandit

log = logging.getLogger(__name__)

# In a run's child only: the spare it took at its fork, until the run takes
# it (``adopt``) or it is stopped. The child's one owner of it.
_TAKEN: tuple[WarmBandit, Runtime, int] | None = None


class Spare:
    """The helper's side: at most one spare server, and the pidfds of the
    ones handed to runs, until each is reaped."""

    def __init__(self, sel: selectors.BaseSelector):
        self.sel = sel
        self.warm: WarmBandit | None = None
        self.ready = False
        self.runtime: Runtime | None = None
        self.nice = 0
        self.pidfd: int | None = None
        self.fd: int | None = None  # its ready line comes on this (registered until it does)
        self.given: dict[int, int] = {}  # pidfd -> pid, handed to runs, not yet reaped
        self.cpu_s = 0.0  # of the servers handed to runs, reaped

    def launch(self) -> None:
        """Start one (not blocking: its ready line is read when it comes).
        Whatever goes wrong leaves no spare (each run starts its own, as
        before), never an error in the helper's loop."""
        if self.warm is not None or os.environ.get("SUPERQODE_RUN_BANDIT") == "command":
            return
        try:
            self._launch()
        except Exception as e:  # noqa: BLE001 - no spare is the fallback, not a helper that ends
            log.info("no spare bandit server: %s: %s", type(e).__name__, e)

    def _launch(self) -> None:
        rt = Runtime.foreground()  # (a malformed SUPERQODE_NICE raises: no spare)
        landlock.forget()  # detected with this environment, as the spare starts now
        namespaces.forget()
        try:
            if _bandit_warm.starting(rt) is None:
                return  # no bandit beside this interpreter, or no Landlock: none would serve
            warm = _bandit_warm.WarmBandit(sys.executable, rt)
            try:
                # spawn_tool in this (the helper's only) thread: no spawner
                # thread may exist when the helper forks.
                fd = warm.launch(spawn_tool)
                self.pidfd = os.pidfd_open(warm.pid())
            except OSError:
                warm.stop()
                return
        finally:
            # What the start detected was detected with the helper's
            # environment: each run detects again with its client's (the
            # namespace probe's answer is kept for a run whose client reads
            # it the same: namespaces.reuse_kept).
            landlock.forget()
            namespaces.keep()
            namespaces.forget()
        os.set_inheritable(self.pidfd, False)
        self.warm, self.ready, self.runtime, self.fd = warm, False, rt, fd
        self.nice = os.getpriority(os.PRIO_PROCESS, 0)
        self.sel.register(fd, selectors.EVENT_READ, self._first_line)

    def ready_pid(self) -> int | None:
        """The pid of the spare ready for the next run (None: none is)."""
        return self.warm.pid() if self.warm is not None and self.ready else None

    def _first_line(self, fd) -> None:
        self.sel.unregister(fd)
        self.fd = None
        if self.warm is not None and self.warm.await_ready():
            self.ready = True
        else:
            self.stop()

    def in_child(self, take: bool = True) -> None:
        """In a forked child: take the spare if it is ready and ``take`` (a
        ``superqe run``); drop every other descriptor of the helper's side."""
        global _TAKEN
        for fd in self.given:
            os.close(fd)
        if take and self.warm is not None and self.ready and self.pidfd is not None:
            self.warm.hand_over(self.pidfd)
            _TAKEN = (self.warm, self.runtime, self.nice)
        elif self.warm is not None:
            self.warm.release()  # not taken: it stays the helper's
            if self.pidfd is not None:
                os.close(self.pidfd)
        self.warm = None

    def given_away(self) -> int | None:
        """In the helper, after a fork whose child took the spare: the
        server is that run's; only its end (:meth:`end_with_run`) and its
        reaping stay here. Returns what ``end_with_run`` takes (None: the
        child took none)."""
        if self.warm is None or not self.ready or self.pidfd is None:
            return None
        pid, fd = self.warm.pid(), self.pidfd
        self.warm.release()
        self.warm, self.ready, self.pidfd = None, False, None
        self.given[fd] = pid
        self.sel.register(fd, selectors.EVENT_READ, self._reap)
        return fd

    def end_with_run(self, fd: int | None) -> None:
        """The run the server was handed to has ended, and so does the
        server, whatever it was doing: a run's own server dies with it
        (bwrap's --die-with-parent), but this one's parent is the helper.
        Reaped here, before the run's end is reported."""
        if fd is None or fd not in self.given:
            return  # reaped already: it had ended
        # Not reaped yet, so its pid and group cannot be another process's.
        with contextlib.suppress(OSError):
            os.killpg(self.given[fd], signal.SIGKILL)
        self._reap(fd)

    def _reap(self, fd) -> None:
        self.sel.unregister(fd)
        pid = self.given.pop(fd)
        os.close(fd)
        try:
            usage = os.wait4(pid, 0)[2]
        except ChildProcessError:
            return
        # Counted with the runs' CPU (``state``): the server and the
        # analyses it ran were a run's, though started here.
        self.cpu_s += usage.ru_utime + usage.ru_stime

    def stop(self) -> None:
        """The spare not given (the helper ends, or it did not come up)."""
        warm, self.warm, self.ready = self.warm, None, False
        if self.fd is not None:
            self.sel.unregister(self.fd)
            self.fd = None
        if warm is not None:
            warm.stop()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def adopt(runtime: Runtime) -> StartingBandit | None:
    """In a run handed to the helper: the spare it took, as the run's own
    warm bandit (already started), when it is the one the run would start;
    else None (a spare taken but not fit is stopped)."""
    global _TAKEN
    taken, _TAKEN = _TAKEN, None
    if taken is None:
        return None
    warm, rt, nice = taken
    # The server this run would start itself, from its client's environment
    # (detected anew in this child): the same sandbox, priority and CPUs.
    if (_bandit_warm.starting(runtime) is None or _bandit_warm.server_masks() != warm.masks
            or (rt.nice, rt.tool_cpus) != (runtime.nice, runtime.tool_cpus)
            or os.getpriority(os.PRIO_PROCESS, 0) != nice):
        warm.stop()
        return None
    return _bandit_warm.StartingBandit(runtime, warm.python, starter=lambda _rt, _py: warm)


def drop() -> None:
    """A run that takes no warm bandit stops the spare it took."""
    global _TAKEN
    taken, _TAKEN = _TAKEN, None
    if taken is not None:
        taken[0].stop()
