"""The mutation workers as forks of one warm pytest process.

The first warm server (``_forkserver``, in the run's first scratch copy)
starts the project's pytest once: interpreter, plugins, the tests imported
and collected. Asked to spawn, it forks one worker per id (copy on write:
no second start, import or collection) and from then on only routes each
request to the worker it names; the workers' replies, tagged with their
id, share its stdout (each one write of under PIPE_BUF bytes). A worker
costs a fork, so the line map and the mutants are split as wide as the
CPUs allow from the first second, instead of only as wide as further
pytest starts repay.

``Zygote`` is that first process; ``Channel`` one forked worker, spoken to
as a ``_mutation_runner.WarmServer`` is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from ...runtime import Runtime
from ...workspace.proc import PipedTool, ProcResult, start_piped

GRACE_S = 2.0


class Zygote:
    def __init__(self, proc: PipedTool, items: int):
        self.proc = proc
        self.items = items  # the tests it collected
        self.ok = True
        self._queues: dict[int, asyncio.Queue[dict[str, Any] | None]] = {}
        self._ids = iter(range(1, 1 << 30))
        self._lock = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None
        self.busy = 0  # requests sent and not answered
        # Its start's wall seconds: python and pytest's import, collection.
        self.split: dict[str, float] = {}

    @classmethod
    async def start(cls, cmd: list[str], cwd: Path, env: dict[str, str], timeout: float,
                    runtime: Runtime | None = None) -> Zygote | None:
        began = time.time()
        proc = await start_piped(cmd, cwd, env, runtime=runtime)
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), timeout)
            hello = json.loads(line) if line else None
        except (TimeoutError, ValueError):
            hello = None
        except BaseException:
            await asyncio.shield(_end(proc))
            raise
        if not isinstance(hello, dict) or not hello.get("ready"):
            await _end(proc)
            return None
        zygote = cls(proc, int(hello.get("items") or 0))
        with contextlib.suppress(KeyError, TypeError, ValueError):
            loaded, at = float(hello["loaded"]), float(hello["at"])
            zygote.split = {"python+pytest import": loaded - began, "collection": at - loaded}
        zygote._reader = asyncio.create_task(zygote._read())
        return zygote

    async def _read(self) -> None:
        """Hand each reply to the worker it names; at the end, None to all."""
        try:
            while line := await self.proc.stdout.readline():
                try:
                    reply = json.loads(line)
                except ValueError:
                    continue
                queue = self._queues.get(reply.pop("w", None)) if isinstance(reply, dict) else None
                if queue is not None:
                    queue.put_nowait(reply)
        except (OSError, ValueError):
            pass  # a line over the reader's limit: the zygote is not ours to trust
        finally:
            self.ok = False
            for queue in self._queues.values():
                queue.put_nowait(None)

    async def send(self, obj: dict[str, Any]) -> bool:
        if not self.ok or self.proc.returncode is not None:
            return False
        async with self._lock:
            try:
                self.proc.stdin.write((json.dumps(obj) + "\n").encode())
                await self.proc.stdin.drain()
            except (ConnectionError, RuntimeError):
                self.ok = False
                return False
        return True

    async def spawn(self, dirs: list[Path], timeout: float, trace: bool = False
                    ) -> list[Channel | None]:
        """One forked worker per directory (its working directory), each
        ready or None (it did not say so within ``timeout``); ``trace``: they
        will trace the suite first (coverage is imported once, before the forks)."""
        ids = [next(self._ids) for _ in dirs]
        for wid in ids:
            self._queues[wid] = asyncio.Queue()
        started = time.monotonic()
        if not await self.send({"spawn": ids, "dirs": [str(d) for d in dirs], "trace": trace}):
            return [None] * len(ids)

        async def hello(wid: int) -> Channel | None:
            try:
                got = await asyncio.wait_for(self._queues[wid].get(), timeout)
            except TimeoutError:
                got = None
            channel = Channel(self, wid, time.monotonic() - started)
            if not got or not got.get("ready"):
                await channel.close()
                return None
            channel.items = int(got.get("items") or 0)
            return channel

        return list(await asyncio.gather(*(hello(wid) for wid in ids)))

    async def close(self) -> None:
        """Its input closed, it waits for its idle workers and exits (their
        CPU time then counts as its own); killed with them at once while a
        request is outstanding, or after ``GRACE_S``."""
        self.ok = False
        if not self.busy and self.proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.proc.wait()), GRACE_S)
        await _end(self.proc)
        if self._reader is not None:
            with contextlib.suppress(BaseException):
                await self._reader


async def _end(proc: PipedTool) -> None:
    # Its forked workers and their mutants' children share its group.
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()


class Channel:
    """One forked worker: ``run`` and ``close`` as ``WarmServer``'s."""

    def __init__(self, zygote: Zygote, wid: int, start_s: float):
        self.zygote, self.wid, self.start_s = zygote, wid, start_s
        self.ok = True
        self.items = 0

    async def run(self, request: dict[str, Any], timeout: float) -> ProcResult | str | None:
        if not self.ok:
            return None
        self.zygote.busy += 1
        try:
            if not await self.zygote.send({**request, "timeout": timeout, "w": self.wid}):
                self.ok = False
                return None
            reply = await asyncio.wait_for(self.zygote._queues[self.wid].get(), timeout + 30)
        except TimeoutError:
            reply = None
        finally:
            self.zygote.busy -= 1
        if reply is not None and "fallback" in reply:
            return str(reply["fallback"])
        if reply is None or "rc" not in reply:
            await self.close()
            return None
        return ProcResult(returncode=int(reply["rc"]), stdout="", stderr="",
                          duration_s=float(reply["duration"]),
                          timed_out=bool(reply["timed_out"]))

    async def close(self) -> None:
        if self.ok:
            self.ok = False
            # Its input closed, it ends; a hung one ends with the zygote's group.
            await self.zygote.send({"w": self.wid, "close": True})
