"""Cancellable subprocesses for work inside a sandbox.

Each command gets its own process group so a timeout or a cancel kills the
whole tree it started (test runners fork), not just the direct child.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil

from ..runtime import Runtime
from . import landlock, namespaces

# Set by a session's env(): the folders its processes may write (JSON list).
# Any command started with such an environment runs in the namespace sandbox
# (namespaces.py, where available) under the supervisor and the kernel
# barrier (landlock.py).
BARRIER_ENV = landlock.ALLOW_ENV

# How low and where tools run is the front end's choice (``runtime.Runtime``):
# it travels with each call, so no setting here is process-wide.


def _tool_nice(rt: Runtime) -> int:
    # From our main thread's nice: a calling thread may be a lowered one.
    return min(19, os.getpriority(os.PRIO_PROCESS, os.getpid()) + rt.nice)


def _limit_this_thread(rt: Runtime) -> set[int] | None:
    """Give the calling (spawning) thread the tools' CPUs and priority: on
    Linux both are per thread and a forked child starts with them, so even a
    tool's first threads are created under them. Returns the CPUs to give the
    thread back once the child is started (its nice stays: only a privileged
    process may raise it again, and these threads only wait on tools)."""
    previous = None
    if rt.tool_cpus is not None:
        try:
            previous = os.sched_getaffinity(0)
            os.sched_setaffinity(0, rt.tool_cpus)
        except (OSError, AttributeError):
            previous = None
    if rt.nice > 0:
        try:
            want = _tool_nice(rt)
            if os.getpriority(os.PRIO_PROCESS, 0) < want:
                os.setpriority(os.PRIO_PROCESS, 0, want)
        except (OSError, AttributeError):
            pass
    return previous


def _autogroup(pid: int | str) -> str | None:
    try:
        with open(f"/proc/{pid}/autogroup", encoding="ascii") as fh:
            return fh.read().split()[0]
    except (OSError, IndexError):
        return None


def lower_priority(pid: int, rt: Runtime) -> None:
    """Renice (and confine to the tools' CPUs) a just-started child, as
    ``rt`` says; what it forks later inherits both.

    Tools start in their own session, and with the kernel's autogroup
    scheduling a new session is a new CPU group that competes with the
    server's group as an equal whatever its processes' nice values: the
    group's own nice is lowered too (only for a group that is not ours).
    """
    if rt.tool_cpus is not None:
        try:
            os.sched_setaffinity(pid, rt.tool_cpus)
        except (OSError, AttributeError):
            pass
    if rt.nice <= 0:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, pid, _tool_nice(rt))
    except (OSError, AttributeError):
        pass
    _lower_group(pid, rt.nice)


def _lower_group(pid: int, nice: int) -> None:
    """The CPU group (autogroup) of ``pid``'s session to ``nice``; only for a
    group that is not ours."""
    theirs = _autogroup(pid)
    if theirs is None or theirs == _autogroup("self"):
        return
    try:
        with open(f"/proc/{pid}/autogroup", "w", encoding="ascii") as fh:
            fh.write(str(min(19, nice)))
    except OSError:
        pass


@dataclass
class ProcResult:
    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    truncated: bool = False
    # Set, and ``stdout`` left "", where the caller asked for the bytes
    # (``run_command(raw_stdout=True)``): a parser of tens of MB of JSON
    # reads them as they are, without a decode first.
    stdout_bytes: bytes | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


# Spawning waits for the child to exec and communicate() blocks: both happen in
# these threads, so an event loop (the language server's) never stalls on them.
_PROCS = ThreadPoolExecutor(max_workers=64, thread_name_prefix="superqode-proc")

# A spawning thread keeps the nice it lowered itself to (only a privileged
# process may raise it again), and a child starts with its thread's nice: a
# tool for the terminal spawned from a thread that once started a background
# tool would run lowered. So each nice value spawns from threads of its own
# (at most 20 small pools: nice is 0-19).
_SPAWNERS: dict[int, ThreadPoolExecutor] = {}
_SPAWNERS_LOCK = threading.Lock()


def _spawner(runtime: Runtime | None) -> ThreadPoolExecutor:
    rt = runtime if runtime is not None else Runtime.background()
    key = max(0, min(19, rt.nice))
    with _SPAWNERS_LOCK:
        pool = _SPAWNERS.get(key)
        if pool is None:
            pool = _SPAWNERS[key] = ThreadPoolExecutor(
                max_workers=16, thread_name_prefix=f"superqode-spawn{key}")
        return pool


def spawn_tool_blocking(cmd: list[str], cwd: str, env: dict[str, str] | None, *,
                        runtime: Runtime | None = None, **kw) -> subprocess.Popen:
    """:func:`spawn_tool` from a caller that may wait (not an event loop):
    run in the spawner thread of ``runtime``'s nice, so what the command
    forks inherits the tools' priority too."""
    return _spawner(runtime).submit(spawn_tool, cmd, cwd, env, runtime=runtime, **kw).result()


def supervise(cmd: list[str], env: Mapping[str, str] | None) -> list[str]:
    """``cmd`` behind the session's layers when ``env`` is a session's."""
    if env is None or BARRIER_ENV not in env:
        return list(cmd)
    return namespaces.supervised(cmd, env)


def spawn_tool(cmd: list[str], cwd: str, env: dict[str, str] | None, *,
               stdin: int = subprocess.DEVNULL, stdout: int = subprocess.PIPE,
               stderr: int = subprocess.PIPE, below: int = 0,
               runtime: Runtime | None = None) -> subprocess.Popen:
    """Start a tool in its own process group, at the priority and on the
    CPUs ``runtime`` gives tools (None: ``Runtime.background()``, for callers
    outside a session); blocks until it has exec'd, so call it in a
    ``_spawner(runtime)`` thread, not on an event loop. ``below``: nice steps under the
    other tools, for work that only fills CPU they leave (its ``nice`` inside
    the command is not enough: each tool starts a session, and sessions' CPU
    groups share the CPU as equals)."""
    rt = runtime if runtime is not None else Runtime.background()
    previous = _limit_this_thread(rt)
    try:
        proc = subprocess.Popen(supervise(cmd, env), cwd=cwd, env=env, stdin=stdin, stdout=stdout,
                                stderr=stderr, start_new_session=True)
    finally:
        if previous is not None:
            try:
                os.sched_setaffinity(0, previous)
            except OSError:
                pass
    lower_priority(proc.pid, rt)
    if below > 0:
        _lower_group(proc.pid, max(0, rt.nice) + below)
    return proc


def _spawn(cmd: list[str], cwd: str, env: dict[str, str] | None, has_input: bool,
           below: int, runtime: Runtime | None) -> subprocess.Popen:
    return spawn_tool(cmd, cwd, env, stdin=subprocess.PIPE if has_input else subprocess.DEVNULL,
                      below=below, runtime=runtime)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _terminate_sync(proc: subprocess.Popen) -> None:
    # Listed first, with the leader stopped so it forks no more: a member in
    # a session of its own (bwrap's sandbox, started with --new-session) is
    # out of the group's reach, and one the leader made just before its end
    # may have missed bwrap's --die-with-parent. Left running, it would hold
    # the output pipes open and the cancel would wait for it.
    tree = _stopped_tree(proc.pid) if proc.poll() is None else []
    _signal_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGCONT)
    try:
        proc.wait(3)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
    # Children that ignored SIGTERM outlive the leader; end them too.
    _signal_group(proc.pid, signal.SIGKILL)
    _kill_leftovers(tree)


def _stopped_tree(pid: int) -> list[psutil.Process]:
    """``pid``'s descendants, ``pid`` itself stopped (SIGCONT resumes it)."""
    try:
        os.kill(pid, signal.SIGSTOP)
        return psutil.Process(pid).children(recursive=True)
    except (ProcessLookupError, psutil.Error):
        return []


def _kill_leftovers(tree: list[psutil.Process]) -> None:
    """Kill what of ``tree`` outlived its leader, and their own descendants
    (psutil checks each is still the process listed, not a reused pid).
    Not waited for: a killed process holds no pipe, and one reparented
    outside SuperQode stays a zombie until whoever reaps there does (bwrap's
    sandbox, its leader gone: waiting for it cost every cancel two seconds)."""
    left: list[psutil.Process] = []
    for p in tree:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                left += [p, *p.children(recursive=True)]
        except psutil.Error:
            pass
    for p in left:
        with contextlib.suppress(psutil.Error):
            p.kill()


def _communicate(proc: subprocess.Popen, data: bytes | None, timeout: float | None
                 ) -> tuple[bytes, bytes, bool]:
    try:
        out, err = proc.communicate(data, timeout)
        return out, err, False
    except subprocess.TimeoutExpired:
        _terminate_sync(proc)
        proc.communicate()
        return b"", b"", True
    except ValueError:  # pipes closed by a concurrent terminate
        proc.wait()
        return b"", b"", False


async def run_command(
    cmd: Sequence[str],
    cwd: Path | str,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    input: bytes | None = None,
    output_cap: int = 2_000_000,
    below: int = 0,
    runtime: Runtime | None = None,
    raw_stdout: bool = False,
) -> ProcResult:
    """Run ``cmd``; on timeout the group is killed and ``timed_out`` set; on
    cancellation the group is killed and CancelledError propagates. ``below``
    and ``runtime``: see :func:`spawn_tool`; ``raw_stdout``: the output as
    ``stdout_bytes``, not decoded."""
    loop = asyncio.get_running_loop()
    start = time.monotonic()
    spawn = loop.run_in_executor(_spawner(runtime), _spawn, list(cmd), str(cwd),
                                 dict(env) if env is not None else None, input is not None, below,
                                 runtime)
    try:
        proc = await asyncio.shield(spawn)
    except asyncio.CancelledError:
        try:
            proc = await spawn
        except Exception:  # noqa: BLE001 - it never started
            raise asyncio.CancelledError() from None
        await loop.run_in_executor(_PROCS, _terminate_sync, proc)
        raise
    talk = loop.run_in_executor(_PROCS, _communicate, proc, input, timeout)
    try:
        out, err, timed_out = await asyncio.shield(talk)
    except asyncio.CancelledError:
        await loop.run_in_executor(_PROCS, _terminate_sync, proc)
        try:
            await talk
        except Exception:  # noqa: BLE001, S110 - only the kill matters now
            pass
        raise
    truncated = len(out) > output_cap or len(err) > output_cap
    return ProcResult(
        returncode=proc.returncode if proc.returncode is not None else -1,
        stdout="" if raw_stdout else out[:output_cap].decode("utf-8", "replace"),
        stderr=err[:output_cap].decode("utf-8", "replace"),
        duration_s=time.monotonic() - start,
        timed_out=timed_out,
        truncated=truncated,
        stdout_bytes=out[:output_cap] if raw_stdout else None,
    )


class PipedTool:
    """A long-lived tool spoken to over stdin/stdout with asyncio streams,
    started off the event loop (see ``start_piped``)."""

    def __init__(self, popen: subprocess.Popen, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter):
        self.popen = popen
        self.stdout = reader
        self.stdin = writer

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    async def wait(self) -> int:
        self.stdin.close()
        return await asyncio.get_running_loop().run_in_executor(_PROCS, self.popen.wait)


async def start_piped(cmd: Sequence[str], cwd: Path | str, env: Mapping[str, str] | None = None,
                      *, limit: int = 2**20, runtime: Runtime | None = None) -> PipedTool:
    loop = asyncio.get_running_loop()
    spawned = loop.run_in_executor(
        _spawner(runtime), lambda: spawn_tool(list(cmd), str(cwd), dict(env) if env is not None else None,
                                   stdin=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   runtime=runtime)
    )
    try:
        popen = await asyncio.shield(spawned)
    except asyncio.CancelledError:
        # Cancelled while the thread was starting it: the process may exist
        # already, and nobody else holds it. End it rather than leak it.
        with contextlib.suppress(Exception):
            made = await spawned
            _signal_group(made.pid, signal.SIGKILL)
            await loop.run_in_executor(_PROCS, made.wait)
        raise
    try:
        reader = asyncio.StreamReader(limit=limit)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), popen.stdout)
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), popen.stdin
        )
    except BaseException:
        _signal_group(popen.pid, signal.SIGKILL)
        await loop.run_in_executor(_PROCS, popen.wait)
        raise
    return PipedTool(popen, reader, asyncio.StreamWriter(transport, protocol, None, loop))


def end_session_processes(session_id: str, sandbox: Path | None) -> list[int]:
    """Kill what still runs of a session before its sandbox goes: processes
    working in the sandbox or started with the session's environment (only
    the latter when ``sandbox`` is None). The supervisor already ends each
    command's tree; this also covers systems without it (no Linux
    subreaper) and a supervisor killed from outside."""
    me = os.getpid()
    # Never through a link: a sandbox swapped for a symlink to the user's
    # repository must not make the user's own shell or editor a match.
    top = os.path.abspath(sandbox) if sandbox is not None else ""
    root = None
    if top and os.path.isdir(top) and not os.path.islink(top):
        root = os.path.join(os.path.realpath(os.path.dirname(top)), os.path.basename(top)) + os.sep
    hits = []
    for pid in _matching(session_id, root, me):
        try:
            p = psutil.Process(pid)  # from here on, this very process (its start time)
        except psutil.Error:
            continue  # gone already
        if pid in _matching(session_id, root, me, only=pid):  # not a new process on a reused pid
            hits.append(p)
    for p in hits:
        try:
            p.kill()
        except psutil.Error:
            pass
    # Our own children are reaped by whoever started them (a Popen here would
    # read a stolen exit status as 0); wait only for the others to go.
    psutil.wait_procs([p for p in hits if _parent_pid(p) != me], timeout=2)
    return [p.pid for p in hits]


def _matching(session_id: str, root: str | None, me: int, only: int | None = None) -> list[int]:
    """The pids working beneath ``root`` (a path ending in a separator) or
    whose environment holds ``SUPERQODE_SESSION_ID=session_id``. Read from
    /proc as bytes: psutil built a dict of every process's environment, which
    cost 40-70 ms per call on a loaded machine with about 120 processes (two
    calls per session, both on its critical path); the test is the same.
    ``only``: that pid alone."""
    if not os.path.isdir("/proc/self"):
        return _matching_psutil(session_id, root, me, only)
    entry = f"SUPERQODE_SESSION_ID={session_id}".encode()
    out = []
    for name in os.listdir("/proc") if only is None else [str(only)]:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if root is not None and (os.readlink(f"/proc/{name}/cwd") + os.sep).startswith(root):
                out.append(int(name))
                continue
            with open(f"/proc/{name}/environ", "rb") as fh:
                env = fh.read()
        except OSError:  # gone, a kernel thread, another user's
            continue
        if entry in env.split(b"\0"):
            out.append(int(name))
    return out


def _matching_psutil(session_id: str, root: str | None, me: int, only: int | None) -> list[int]:
    out = []
    for p in psutil.process_iter(["pid"]):
        if p.pid == me or only not in (None, p.pid):
            continue
        try:
            if ((root is not None and (p.cwd() + os.sep).startswith(root))
                    or p.environ().get("SUPERQODE_SESSION_ID") == session_id):
                out.append(p.pid)
        except (psutil.Error, OSError):
            continue
    return out


def _parent_pid(p: psutil.Process) -> int | None:
    try:
        return p.ppid()
    except psutil.Error:
        return None
