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
from dataclasses import dataclass
from pathlib import Path


# QE work runs below the editor: a language server answering requests must not
# wait for CPU behind the analyzers and test runs it started (0 turns it off).
BACKGROUND_NICE = int(os.environ.get("SUPERQODE_NICE", "10"))


def lower_priority(pid: int) -> None:
    """Renice a just-started child; what it forks later inherits the priority."""
    if BACKGROUND_NICE <= 0:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, pid, min(19, os.getpriority(os.PRIO_PROCESS, 0) + BACKGROUND_NICE))
    except (OSError, AttributeError):
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


def _kill_group(proc: asyncio.subprocess.Process, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def _terminate(proc: asyncio.subprocess.Process) -> None:
    _kill_group(proc, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), 3)
    except TimeoutError:
        _kill_group(proc, signal.SIGKILL)
        await proc.wait()
    # Children that ignored SIGTERM outlive the leader; end them too.
    _kill_group(proc, signal.SIGKILL)


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
    start = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        cwd=str(cwd),
        env=dict(env) if env is not None else None,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    lower_priority(proc.pid)
    timed_out = False
    try:
        out, err = await asyncio.wait_for(proc.communicate(input), timeout)
    except TimeoutError:
        timed_out = True
        await _terminate(proc)
        out, err = b"", b""
    except asyncio.CancelledError:
        await asyncio.shield(_terminate(proc))
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
