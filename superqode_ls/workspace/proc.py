"""Cancellable subprocesses for work inside a sandbox.

Each command gets its own process group so a timeout or a cancel kills the
whole tree it started (test runners fork), not just the direct child.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

# QE work runs below the editor: a language server answering requests must not
# wait for CPU behind the analyzers and test runs it started (0 turns it off).
BACKGROUND_NICE = int(os.environ.get("SUPERQODE_NICE", "10"))


def _autogroup(pid: int | str) -> str | None:
    try:
        with open(f"/proc/{pid}/autogroup", encoding="ascii") as fh:
            return fh.read().split()[0]
    except (OSError, IndexError):
        return None


def lower_priority(pid: int) -> None:
    """Renice a just-started child; what it forks later inherits the priority.

    Tools start in their own session, and with the kernel's autogroup
    scheduling a new session is a new CPU group that competes with the
    server's group as an equal whatever its processes' nice values: the
    group's own nice is lowered too (only for a group that is not ours).
    """
    if BACKGROUND_NICE <= 0:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, pid, min(19, os.getpriority(os.PRIO_PROCESS, 0) + BACKGROUND_NICE))
    except (OSError, AttributeError):
        pass
    theirs = _autogroup(pid)
    if theirs is None or theirs == _autogroup("self"):
        return
    try:
        with open(f"/proc/{pid}/autogroup", "w", encoding="ascii") as fh:
            fh.write(str(min(19, BACKGROUND_NICE)))
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

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


# Spawning waits for the child to exec and communicate() blocks: both happen in
# these threads, so an event loop (the language server's) never stalls on them.
_PROCS = ThreadPoolExecutor(max_workers=64, thread_name_prefix="superqode-proc")


def _spawn(cmd: list[str], cwd: str, env: dict[str, str] | None, has_input: bool) -> subprocess.Popen:
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env,
        stdin=subprocess.PIPE if has_input else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )
    lower_priority(proc.pid)
    return proc


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _terminate_sync(proc: subprocess.Popen) -> None:
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(3)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
    # Children that ignored SIGTERM outlive the leader; end them too.
    _signal_group(proc.pid, signal.SIGKILL)


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
) -> ProcResult:
    """Run ``cmd``; on timeout the group is killed and ``timed_out`` set; on
    cancellation the group is killed and CancelledError propagates."""
    loop = asyncio.get_running_loop()
    start = time.monotonic()
    spawn = loop.run_in_executor(_PROCS, _spawn, list(cmd), str(cwd),
                                 dict(env) if env is not None else None, input is not None)
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
        except Exception:  # noqa: BLE001 - only the kill matters now
            pass
        raise
    truncated = len(out) > output_cap or len(err) > output_cap
    return ProcResult(
        returncode=proc.returncode if proc.returncode is not None else -1,
        stdout=out[:output_cap].decode("utf-8", "replace"),
        stderr=err[:output_cap].decode("utf-8", "replace"),
        duration_s=time.monotonic() - start,
        timed_out=timed_out,
        truncated=truncated,
    )
