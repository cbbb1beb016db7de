"""Waiting on events instead of sleeping: one poll helper with a deadline.

A test that needs something to have happened (a file written, a process
gone, a notification received) waits for exactly that, so it is as fast as
the machine allows and fails with a sentence naming what never happened,
never by a sleep that was too short on a loaded machine. A sleep that IS the
behaviour under test (a debounce, a timeout, a subject that takes time)
stays where it is, with a comment saying so.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# How often a predicate is asked again: short enough that a wait costs little
# after the event, long enough that polling does not load a 2-core machine.
POLL_S = 0.02


class WaitTimeout(AssertionError):
    """The awaited thing did not happen before the deadline (a test failure)."""


def _fail(what: str, timeout: float, detail: Callable[[], str] | None) -> WaitTimeout:
    extra = ""
    if detail is not None:
        try:
            extra = f" ({detail()})"
        except Exception as e:  # noqa: BLE001 - the detail must not hide the timeout
            extra = f" (no detail: {e!r})"
    return WaitTimeout(f"timed out after {timeout:g}s waiting for {what}{extra}")


def wait_for(predicate: Callable[[], T], timeout: float = 30.0, what: str = "condition",
             *, detail: Callable[[], str] | None = None, poll: float = POLL_S) -> T:
    """Poll ``predicate`` until it returns something truthy; return that.
    After ``timeout`` seconds, fail naming ``what`` (and ``detail()``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise _fail(what, timeout, detail)
        time.sleep(poll)


async def wait_for_async(predicate: Callable[[], T], timeout: float = 30.0,
                         what: str = "condition", *, detail: Callable[[], str] | None = None,
                         poll: float = POLL_S) -> T:
    """``wait_for`` inside an event loop: polls without blocking the loop, so
    the notifications it waits for keep arriving. ``predicate`` may return an
    awaitable (a request to ask again): its result is what is tested."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise _fail(what, timeout, detail)
        await asyncio.sleep(poll)


def pid_gone(pid: int) -> bool:
    """The process ``pid`` has exited (and been reaped, or is a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")


def file_has(path: Any, needle: str = "") -> bool:
    """``path`` exists and (when ``needle`` is given) contains it."""
    try:
        text = Path(os.fspath(path)).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return needle in text


def descendants_running(needle: str, root: int | None = None) -> list[Any]:
    """Live descendants of ``root`` (this process by default) whose command
    line contains ``needle``: for waiting until a subprocess has started."""
    import psutil

    try:
        kids = psutil.Process(root).children(recursive=True)
    except psutil.Error:
        return []
    found = []
    for kid in kids:
        try:
            if kid.status() != psutil.STATUS_ZOMBIE and needle in " ".join(kid.cmdline()):
                found.append(kid)
        except psutil.Error:
            continue
    return found
