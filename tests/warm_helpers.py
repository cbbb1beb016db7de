"""The warm helper in tests: started as a user starts it, always stopped
(and waited for) at the end, so no test leaves a helper running."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

SUPERQE = [sys.executable, "-m", "superqode_ls"]
TIMEOUT = 180


def superqe(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SUPERQE, *args], capture_output=True, text=True, timeout=TIMEOUT,
                          check=False, env=env, cwd=cwd, input=input)


def cold_env(**extra: str) -> dict[str, str]:
    """A command line that never hands off."""
    return {**os.environ, "SUPERQODE_WARM": "off", **extra}


def state() -> dict | None:
    from superqode_ls.cli.warm import ask

    answer = ask({"ping": True})
    return answer if answer and answer.get("ok") else None


def wait_exit(pid: int, timeout: float) -> bool:
    """True when ``pid`` ended within ``timeout`` (awaited on its pidfd)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


class Warm:
    def __init__(self, idle_min: float = 10):
        self.idle_min = idle_min
        self.pid: int | None = None

    def start(self) -> Warm:
        res = superqe("warm", "start", "--idle", str(self.idle_min))
        assert res.returncode == 0, res.stdout + res.stderr
        self.pid = int(res.stdout.split("(pid ", 1)[1].split(",", 1)[0])
        return self

    def stop(self) -> None:
        if self.pid is None:
            return
        superqe("warm", "stop")
        if not wait_exit(self.pid, 30):
            os.kill(self.pid, signal.SIGKILL)
            wait_exit(self.pid, 30)


def running():
    """The body of each test file's ``warm`` fixture: a helper, stopped after."""
    helper = Warm().start()
    try:
        yield helper
    finally:
        helper.stop()
