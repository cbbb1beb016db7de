"""Per-repository session locks and the change epoch.

Deep sessions are exclusive, quick sessions shared: many quick sessions may run
on one repository at once, none while a deep one runs. A deep session that has
to wait registers itself as a waiter so a steady stream of quick sessions
cannot starve it.

State lives in ``working/<repo-key>/locks/state.json``; every read-modify-write
happens under an ``fcntl.flock`` on ``locks/.mutex``, so it holds across
processes (the language server, several ``superqe`` runs) and across threads
(each call opens its own file description).

Each holder is recorded with its session id, pid, the process start time and
the host, so a holder that died (``kill -9``) — or whose pid was reused by an
unrelated process — is detected and its lock cleared on the next acquire.

The epoch is a counter that goes up whenever the user's files change (the
watcher bumps it). A lock remembers the epoch it was taken at; a result is
stale when the epoch moved during the session.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .artifacts import atomic_write
from .errors import WorkspaceError
from .paths import repo_dir
from .records import process_alive, process_start_time

Mode = Literal["quick", "deep"]
_POLL_S = 0.05
_POLL_MAX_S = 0.5


_flocks: dict[str, list[Any]] = {}
_flocks_guard = threading.Lock()


@contextmanager
def _reentrant_flock(path: Path) -> Iterator[None]:
    """An exclusive lock across processes (flock) and threads (RLock); the
    same thread may take it again (flock on a second descriptor would wait
    for itself)."""
    with _flocks_guard:
        entry = _flocks.setdefault(str(path), [threading.RLock(), None, 0])
    with entry[0]:
        if entry[2] == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(path, "a+")  # noqa: SIM115 - held across the yield
            fcntl.flock(fh, fcntl.LOCK_EX)
            entry[1] = fh
        entry[2] += 1
        try:
            yield
        finally:
            entry[2] -= 1
            if entry[2] == 0:
                fcntl.flock(entry[1], fcntl.LOCK_UN)
                entry[1].close()
                entry[1] = None


class SessionBusy(WorkspaceError):
    """The repository is locked by a session this one cannot run beside."""


class LockRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    session_id: str
    mode: Mode
    repo: str
    pid: int = Field(default_factory=os.getpid)
    pid_start: float = 0.0
    host: str = Field(default_factory=socket.gethostname)
    acquired: float = Field(default_factory=time.time)
    epoch: int = 0


def holder_alive(lock: LockRecord) -> bool:
    """True unless the holding process is provably gone on this host."""
    return process_alive(lock.pid, lock.pid_start, lock.host)


class _State:
    def __init__(self, data: dict[str, Any]):
        self.epoch = int(data.get("epoch", 0) or 0)
        self.holders = _records(data.get("holders"))
        self.waiters = _records(data.get("waiters"))

    def dump(self) -> str:
        return json.dumps(
            {
                "version": 1,
                "epoch": self.epoch,
                "holders": [h.model_dump() for h in self.holders],
                "waiters": [w.model_dump() for w in self.waiters],
            },
            indent=2,
        ) + "\n"


def _records(items: Any) -> list[LockRecord]:
    out: list[LockRecord] = []
    for item in items or []:
        try:
            out.append(LockRecord.model_validate(item))
        except ValidationError:
            continue  # a malformed entry cannot hold a lock
    return out


def _describe(lock: LockRecord) -> str:
    return f"{lock.mode} session {lock.session_id} (pid {lock.pid})"


class Coordinator:
    """Locks and epoch for one repository (any process, any thread)."""

    def __init__(self, repo: Path):
        self.repo = Path(repo).resolve()
        self.dir = repo_dir(self.repo) / "locks"
        self.state_file = self.dir / "state.json"
        self._mutex_file = self.dir / ".mutex"

    @classmethod
    def at(cls, base: Path, repo: Path | None = None) -> Coordinator:
        """The coordinator of ``working/<repo-key>/`` itself, for cleaning up
        after a repository that was moved or deleted."""
        self = cls.__new__(cls)
        self.repo = Path(repo) if repo is not None else Path(base)
        self.dir = Path(base) / "locks"
        self.state_file = self.dir / "state.json"
        self._mutex_file = self.dir / ".mutex"
        return self

    # -- state under the mutex -------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[_State]:
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self._mutex_file, "a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                state = self._read()
                before = state.dump()
                yield state
                after = state.dump()
                if after != before:
                    atomic_write(self.state_file, after)
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _read(self) -> _State:
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                return _State(data)
        except (OSError, ValueError):
            pass
        return _State({})

    def _drop_dead(self, state: _State) -> list[LockRecord]:
        dead = [h for h in state.holders if not holder_alive(h)]
        if dead:
            state.holders = [h for h in state.holders if h not in dead]
        state.waiters = [w for w in state.waiters if holder_alive(w)]
        return dead

    # -- locks -----------------------------------------------------------
    def acquire(self, session_id: str, mode: str, *, timeout: float = 0) -> LockRecord:
        """Take the repository lock for ``session_id``; raises SessionBusy
        when it is not free within ``timeout`` seconds (0: try once)."""
        if mode not in ("quick", "deep"):
            raise WorkspaceError(f"unknown session mode {mode!r} (use quick or deep)")
        me = LockRecord(
            session_id=session_id,
            mode=mode,  # type: ignore[arg-type]
            repo=str(self.repo),
            pid_start=process_start_time(os.getpid()) or 0.0,
        )
        deadline = time.monotonic() + max(0.0, timeout)
        delay = _POLL_S
        waiting = False
        try:
            while True:
                with self._locked() as state:
                    self._drop_dead(state)
                    for h in state.holders:
                        if h.session_id == session_id:
                            if h.pid == me.pid:
                                return h  # already ours: acquiring twice is a no-op
                            raise SessionBusy(
                                f"session id {session_id} is already held by pid {h.pid}"
                            )
                    blocker = self._blocker(state, me)
                    if blocker is None:
                        me.epoch = state.epoch
                        me.acquired = time.time()
                        state.holders.append(me)
                        state.waiters = [w for w in state.waiters if w.session_id != session_id]
                        waiting = False
                        return me
                    if time.monotonic() >= deadline:
                        raise SessionBusy(
                            f"{self.repo.name}: busy with {_describe(blocker)}; "
                            f"a {mode} session cannot start now"
                        )
                    if mode == "deep" and not any(
                        w.session_id == session_id for w in state.waiters
                    ):
                        state.waiters.append(me)
                        waiting = True
                time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
                delay = min(delay * 1.5, _POLL_MAX_S)
        finally:
            if waiting:
                with self._locked() as state:
                    state.waiters = [w for w in state.waiters if w.session_id != session_id]

    @staticmethod
    def _blocker(state: _State, me: LockRecord) -> LockRecord | None:
        if me.mode == "deep":
            if state.holders:
                return state.holders[0]
            # Deep sessions queue among themselves in arrival order.
            earlier = [w for w in state.waiters if w.session_id != me.session_id]
            mine = next((w for w in state.waiters if w.session_id == me.session_id), None)
            if mine is not None:
                ahead = [w for w in earlier if w.acquired < mine.acquired]
                return ahead[0] if ahead else None
            return None
        for h in state.holders:
            if h.mode == "deep":
                return h
        # Writer preference: a waiting deep session goes before new quick ones.
        return state.waiters[0] if state.waiters else None

    def release(self, lock: LockRecord) -> None:
        """Give the lock back; releasing twice (or after a clean) is harmless."""
        self.release_session(lock.session_id)

    def release_session(self, session_id: str) -> bool:
        """Drop whatever lock ``session_id`` holds (used by clean/revert)."""
        with self._locked() as state:
            n = len(state.holders)
            state.holders = [h for h in state.holders if h.session_id != session_id]
            state.waiters = [w for w in state.waiters if w.session_id != session_id]
            return len(state.holders) != n

    @contextmanager
    def session(self, session_id: str, mode: str, *, timeout: float = 0) -> Iterator[LockRecord]:
        lock = self.acquire(session_id, mode, timeout=timeout)
        try:
            yield lock
        finally:
            self.release(lock)

    def holders(self) -> list[LockRecord]:
        with self._locked() as state:
            return list(state.holders)

    def clear_dead(self) -> list[LockRecord]:
        """Remove locks whose holder process is gone; returns what was removed."""
        with self._locked() as state:
            return self._drop_dead(state)

    # -- git's own registrations -----------------------------------------
    def worktree_mutex(self) -> AbstractContextManager[None]:
        """Hold while running ``git worktree add/remove/prune`` on this
        repository: git reads every registration while it adds one and fails
        on one another process is writing at that moment ("failed to read
        .git/worktrees/<id>/commondir"). Re-entrant within a thread."""
        return _reentrant_flock(self.dir / ".worktree")

    # -- epoch -----------------------------------------------------------
    def epoch(self) -> int:
        return self._read().epoch

    def bump_epoch(self) -> int:
        with self._locked() as state:
            state.epoch += 1
            return state.epoch

    def is_result_stale(self, lock: LockRecord) -> bool:
        """True when the user's files changed after ``lock`` was taken."""
        return self.epoch() != lock.epoch
