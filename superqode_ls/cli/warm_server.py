"""The warm helper: one process per user (``superqe warm start``) with the
engine imported, which forks a child per command line handed to it
(warm_client). The child takes over the client's stdin/stdout/stderr, its
working folder, environment, umask and nice, and runs the same
``superqode_ls.cli.main`` a normal run runs; its exit status goes back.

State cannot leak between runs: the helper itself only imports modules and
waits (one thread, no caches filled, nothing of a run made here); every run
is a fresh fork of that state, and what a run changes dies with its child.

It exits after ``idle_s`` with nothing to do, when its own code changed on
disk (the next command then runs as before, and a new helper loads the new
code), on ``superqe warm stop`` and on SIGTERM. Who may connect:
warm_peer."""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import selectors
import signal
import socket
import sys
import threading
import time

from ..engine import runtime as engine_runtime
from . import warm_client as wc
from . import warm_peer
from .ending import end_process
from .warm_child import ChildRun
from .warm_place import code_stamp, listen, log, unlink_socket

# What a run imports (measured on a quick run): imported once, here. Names,
# not imports: the helper prefetches them, it does not use them.
WARM_IMPORTS = (
    "superqode_ls.cli.run", "superqode_ls.cli.exec_", "superqode_ls.cli.sessions",
    "superqode_ls.cli.merge",
    "superqode_ls.engine.runs", "superqode_ls.engine.sessions", "superqode_ls.engine.reports",
    "superqode_ls.engine.roles", "superqode_ls.engine.runtime",
    "superqode_ls.qe.pipeline", "superqode_ls.qe.verifier", "superqode_ls.qe.display",
    "superqode_ls.qe.report.json_report", "superqode_ls.qe.report.markdown",
    "superqode_ls.qe.report.sarif",
    "superqode_ls.qe.roles.security", "superqode_ls.qe.roles.lint", "superqode_ls.qe.roles.unit",
    "superqode_ls.workspace.reaper", "superqode_ls.workspace.recovery",
    "superqode_ls.agent.permissions", "packaging.requirements", "packaging.tags",
    "email.parser",
)
DEFAULT_IDLE_S = 15 * 60
TICK_S = 5.0  # how often the code on disk is compared while idle
REFUSED_KEEP_S = 2.0  # a refused connection stays open this long, for its reason to be read
MAX_REFUSED = 64


class _InChild(BaseException):
    """Raised in a forked child to leave the helper's loop (and every frame
    of it) before the run starts. BaseException: no handler of the loop
    may take it for an error."""

    def __init__(self, run):
        super().__init__()
        self.run = run


class Conn:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.child: int | None = None
        self.pidfd: int | None = None
        self.go_w: int | None = None  # the child waits on this for "go"
        self.committed = False
        self.spare: int | None = None  # the spare bandit server handed to its run


class Helper:
    def __init__(self, listener: socket.socket, idle_s: float, own: dict[str, str], stamp: tuple):
        self.listener = listener
        self.idle_s = idle_s
        self.own = own
        self.stamp = stamp
        self.started = time.time()
        self.last = time.monotonic()
        self.runs = 0
        self.cpu_s = 0.0  # CPU of the runs served (benches add it to the client's)
        self.stopping = False
        self.sel = selectors.DefaultSelector()
        self.conns: list[Conn] = []
        self.refused: list[tuple[socket.socket, float]] = []  # (socket, when)
        self.sel.register(listener, selectors.EVENT_READ, self._accept)
        # A bandit server started ahead of the next run.
        self.spare = engine_runtime.spare_analyzer(self.sel)
        # SIGTERM: a flag and a byte on this pipe (the selector wakes), never
        # an exception in the middle of a fork or a reply.
        self.term = False
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.sel.register(self.wake_r, selectors.EVENT_READ, self._woken)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def _on_term(self, _signum, _frame) -> None:
        self.term = True

    def _woken(self, _fd) -> None:
        try:
            os.read(self.wake_r, 512)
        except BlockingIOError:
            pass
        if self.term:
            log("SIGTERM: exit after the runs under way")
            self._stop_listening()

    # The loop -----------------------------------------------------------
    def loop(self) -> None:
        last_tick = time.monotonic()
        while True:
            busy = any(c.child is not None for c in self.conns)
            if self.stopping and not busy:
                return
            left = self.idle_s - (time.monotonic() - self.last)
            if not busy and not self.conns and left <= 0:
                log("idle: exit")
                return
            for key, _ in self.sel.select(timeout=max(0.0, min(TICK_S, left if left > 0 else TICK_S))):
                key.data(key.fileobj)
            while self.refused and time.monotonic() - self.refused[0][1] > REFUSED_KEEP_S:
                self.refused.pop(0)[0].close()
            if time.monotonic() - last_tick >= TICK_S:
                last_tick = time.monotonic()
                self._check_code()

    def _check_code(self) -> bool:
        if self.stopping or code_stamp() == self.stamp:
            return True
        log("its code changed on disk: exit after the runs under way")
        self._stop_listening()
        return False

    def _stop_listening(self) -> None:
        if not self.stopping:
            self.stopping = True
            self.sel.unregister(self.listener)
            unlink_socket()
            self.listener.close()

    # Connections ---------------------------------------------------------
    def _accept(self, _listener) -> None:
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return
        try:
            warm_peer.check(sock, self.own)
        except (warm_peer.Refused, OSError) as e:
            # At once, not at its first message: a refused peer is never
            # read from, keeps the helper from nothing (not its idle exit)
            # and is dropped soon (closing at once could reset the
            # connection before the reason was read).
            log(f"refused: {e}")
            with contextlib.suppress(OSError):
                wc.send(sock, {"ok": False, "why": f"refused: {e}"})
            self.refused.append((sock, time.monotonic()))
            while len(self.refused) > MAX_REFUSED:
                self.refused.pop(0)[0].close()
            return
        sock.setblocking(False)
        conn = Conn(sock)
        self.conns.append(conn)
        self.sel.register(sock, selectors.EVENT_READ, lambda _s, c=conn: self._readable(c))
        self.last = time.monotonic()

    def _readable(self, conn: Conn) -> None:
        if conn.child is None:
            self._first(conn)
            return
        try:
            data = conn.sock.recv(wc.MAX_MESSAGE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._client_gone(conn)
            return
        try:
            msg = json.loads(data)
        except ValueError:
            return
        if not isinstance(msg, dict):
            return
        if msg.get("go") and not conn.committed and conn.go_w is not None:
            conn.committed = True
            os.write(conn.go_w, b"g")
            os.close(conn.go_w)
            conn.go_w = None
        elif "signal" in msg and conn.committed:
            signum = msg["signal"]
            if signum in wc.FORWARDED:
                # Our own unreaped child: its pid cannot have been reused.
                _kill(conn.child, signum)

    def _client_gone(self, conn: Conn) -> None:
        """The client closed. Before "go" the child has done nothing: it goes.
        After, the run is told to stop as on a hang-up (it reverts)."""
        self.sel.unregister(conn.sock)
        if not conn.committed:
            _kill(conn.child, signal.SIGKILL)
        else:
            _kill(conn.child, signal.SIGHUP)

    def _first(self, conn: Conn) -> None:
        try:
            data, fds, flags, _ = socket.recv_fds(conn.sock, wc.MAX_MESSAGE, 8)
        except BlockingIOError:
            return
        except OSError:
            data, fds, flags = b"", [], 0
        for fd in fds:
            os.set_inheritable(fd, False)
        try:
            try:
                reply = self._handle(conn, data, fds, flags)
            except Exception as e:  # noqa: BLE001 - one bad request must not end the helper
                log(f"request failed: {type(e).__name__}: {e}")
                reply = {"ok": False, "why": "the request could not be handled"}
        finally:
            for fd in fds:
                os.close(fd)
        if reply is not None:
            self._reply(conn, reply)

    def _handle(self, conn: Conn, data: bytes, fds: list[int], flags: int) -> dict | None:
        try:
            peer = warm_peer.check(conn.sock, self.own)
        except (warm_peer.Refused, OSError) as e:
            log(f"refused: {e}")
            return {"ok": False, "why": f"refused: {e}"}
        if not data:
            return {"ok": False, "why": "empty request"}
        try:
            msg = json.loads(data)
        except ValueError:
            return {"ok": False, "why": "not a request"}
        if msg.get("ping"):
            return self.state()
        if msg.get("stop"):
            log(f"stop asked by pid {peer}")
            self._stop_listening()
            return {"ok": True, "stopping": True, "pid": os.getpid()}
        why = self._why_not(msg, fds, flags)
        if why:
            return {"ok": False, "why": why}
        return self._fork(conn, msg, fds)

    def _why_not(self, msg: dict, fds: list[int], flags: int) -> str | None:
        if self.stopping:
            return "the helper is stopping"
        if not self._check_code():
            return "the helper's code changed on disk"
        if msg.get("v") != wc.PROTOCOL:
            return "another protocol version"
        if not _well_formed(msg):
            return "a malformed request"
        if not msg["argv"] or msg["argv"][0] not in wc.WARM_COMMANDS:
            # Only what the client hands off: never ``suggestions apply``,
            # ``revert`` or ``warm``, whoever asks.
            return "not a command the helper runs"
        if flags & socket.MSG_CTRUNC or len(fds) != 4:
            return "the standard streams and working folder did not arrive"
        if msg.get("interpreter") != self.interpreter:
            return "another interpreter, package or Python setting than the helper's"
        if not isinstance(msg.get("nice"), int) or msg["nice"] < os.getpriority(os.PRIO_PROCESS, 0):
            return "the client runs at a higher priority than the helper may give"
        return None

    @property
    def interpreter(self) -> dict:
        # JSON's view of it (tuples become lists), as the client's arrives.
        return json.loads(json.dumps(wc.interpreter()))

    def _fork(self, conn: Conn, msg: dict, fds: list[int]) -> dict:
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(go_w)
            self.spare.in_child(take=msg["argv"][0] == "run")
            # Copies: the caller closes ``fds`` on the way out of the loop.
            raise _InChild(ChildRun(msg, [os.dup(fd) for fd in fds], go_r, self.close_in_child))
        os.close(go_r)
        if msg["argv"][0] == "run":  # (the only command that runs bandit)
            conn.spare = self.spare.given_away()
        conn.child, conn.go_w = pid, go_w
        conn.pidfd = os.pidfd_open(pid)
        self.sel.register(conn.pidfd, selectors.EVENT_READ, lambda _fd, c=conn: self._ended(c))
        self.runs += 1
        self.last = time.monotonic()
        return {"ok": True, "pid": pid}

    def _ended(self, conn: Conn) -> None:
        self.sel.unregister(conn.pidfd)
        os.close(conn.pidfd)
        _, status, usage = os.wait4(conn.child, 0)
        self.cpu_s += usage.ru_utime + usage.ru_stime  # its processes' too, all reaped by now
        self.spare.end_with_run(conn.spare)
        conn.child = None
        if conn.go_w is not None:
            os.close(conn.go_w)
            conn.go_w = None
        code = os.waitstatus_to_exitcode(status)
        self._reply(conn, {"exit": code} if code >= 0 else {"killed": -code})
        self._close(conn)
        self.last = time.monotonic()
        if not self.stopping and not any(c.child is not None for c in self.conns):
            self.spare.launch()  # the next run's, while none is under way

    def _reply(self, conn: Conn, msg: dict) -> None:
        try:
            conn.sock.setblocking(True)
            wc.send(conn.sock, msg)
            conn.sock.setblocking(False)
        except OSError:
            pass  # the client left; _client_gone or _ended sees to the rest
        if conn.child is None:
            self._close(conn)

    def _close(self, conn: Conn) -> None:
        if conn not in self.conns:
            return
        try:
            self.sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()
        self.conns.remove(conn)

    def state(self) -> dict:
        return {"ok": True, "pid": os.getpid(), "since": self.started, "runs": self.runs,
                "idle_s": self.idle_s, "cpu_s": self.cpu_s + self.spare.cpu_s, "spare": self.spare.ready_pid(),
                "running": sum(c.child is not None for c in self.conns),
                "idle_left_s": max(0.0, self.idle_s - (time.monotonic() - self.last))}

    def close_in_child(self) -> None:
        """The child keeps none of the helper's descriptors."""
        for c in self.conns:
            c.sock.close()
            if c.go_w is not None:
                os.close(c.go_w)
            if c.pidfd is not None:
                os.close(c.pidfd)
        if not self.stopping:
            self.listener.close()
        for sock, _ in self.refused:
            sock.close()
        self.sel.close()
        signal.set_wakeup_fd(-1)
        os.close(self.wake_r)
        os.close(self.wake_w)


def _well_formed(msg: dict) -> bool:
    def strings(xs) -> bool:
        return all(isinstance(x, str) for x in xs)

    env, argv = msg.get("env"), msg.get("argv")
    return (isinstance(argv, list) and strings(argv) and isinstance(env, dict)
            and strings(env) and strings(env.values()) and isinstance(msg.get("umask"), int)
            and isinstance(msg.get("argv0"), str) and isinstance(msg.get("path0"), str)
            and isinstance(msg.get("streams"), list))


def _kill(pid: int | None, signum: int) -> None:
    if pid is None:
        return
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def warm_up() -> None:
    names = list(WARM_IMPORTS)
    for name in names:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue  # an extra not installed: its runs import it (and fail) as before
        # The pipeline's modules a run imports only after session_start.
        names += getattr(module, "AFTER_START", ())


def serve(idle_s: float, ready_fd: int | None = None) -> int:
    """Run the helper until idle, stopped or its code changed. In a forked
    child this runs the command and ends the process with its exit code."""
    wc.IN_HELPER = True
    me = os.getpid()
    child = None
    try:
        own = warm_peer.own_state()
        stamp = code_stamp()
        warm_up()
        os.chdir("/")  # pins no folder of the user's; each run gets the client's
        # No thread may exist when the helper forks (a lock held by one
        # would stay held forever in the child).
        if threading.active_count() != 1:
            raise wc.WarmError(f"{threading.active_count() - 1} thread(s) after the imports")
        listener = listen()
    except (wc.WarmError, warm_peer.Refused, OSError) as e:
        _ready(ready_fd, f"error: {e}")
        return 2
    helper = Helper(listener, idle_s, own, stamp)
    gc.freeze()  # what the imports made is shared with every child, not copied by the collector
    log(f"up: idle exit after {idle_s:g} s")
    _ready(ready_fd, f"ok {me}")
    helper.spare.launch()
    try:
        helper.loop()
    except _InChild as c:
        child = c.run
    finally:
        if os.getpid() == me:
            helper._stop_listening()
            helper.spare.stop()
            log("down")
    if child is not None:
        # The run is done: its client hears of it when this process ends.
        end_process(child())
    return 0


def _ready(fd: int | None, line: str) -> None:
    if fd is None:
        return
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    idle = float(args[args.index("--idle") + 1]) if "--idle" in args else DEFAULT_IDLE_S
    ready = int(args[args.index("--ready-fd") + 1]) if "--ready-fd" in args else None
    return serve(idle, ready)


if __name__ == "__main__":  # pragma: no cover - started by superqe warm start
    sys.exit(main())
