"""Helpers for the session-safety tests: real sessions in real child
processes, killed for real, and an independent fingerprint of a repository."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from superqode_ls.workspace.paths import working_root

# Creates a session, optionally edits the sandbox, prints the id, then dies
# by SIGKILL: no finally block, no atexit, exactly like `kill -9`.
_CRASH = r"""
import json, os, signal, sys
from pathlib import Path
from superqode_ls.workspace.session import IsolatedSession
repo, mode, edits = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
s = IsolatedSession.create_sync(Path(repo), mode=mode, session_id=sys.argv[5] or None)
for rel, text in edits.items():
    p = s.sandbox / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
print(s.id, flush=True)
if sys.argv[4] == "hold":
    sys.stdin.read()
os.kill(os.getpid(), signal.SIGKILL)
"""


def crash_session(repo: Path, *, mode: str = "quick", edits: dict[str, str] | None = None,
                  session_id: str | None = None) -> str:
    """A session whose owner was killed with SIGKILL; returns its id."""
    proc = subprocess.run(
        [sys.executable, "-c", _CRASH, str(repo), mode, json.dumps(edits or {}), "die",
         session_id or ""],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == -9, proc.stderr
    return proc.stdout.strip()


class LiveSession:
    """A session held open by a live child process until ``stop()``."""

    def __init__(self, repo: Path, mode: str = "quick"):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CRASH, str(repo), mode, "{}", "hold", ""],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        line = self.proc.stdout.readline().strip()
        assert line, self.proc.stderr.read()
        self.id = line

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


def content_fingerprint(repo: Path) -> dict[str, str]:
    """Every path under ``repo`` (``.git`` too, minus objects and SuperQode's
    own folder) with its type, mode and content hash or link target."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(repo):
        rel_dir = os.path.relpath(dirpath, repo)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d != ".superqode"]
        if rel_dir == ".git":
            dirnames[:] = [d for d in dirnames if d not in ("objects", "worktrees")]
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            st = os.lstat(p)
            mode = oct(stat.S_IMODE(st.st_mode))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = f"l {os.readlink(p)}"
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = f"d {mode}"
            else:
                with open(p, "rb") as fh:
                    out[rel] = f"f {mode} {hashlib.sha256(fh.read()).hexdigest()}"
    return out


def leftovers() -> list[str]:
    """Anything left of any session under $SUPERQODE_HOME/working/*/qe."""
    root = working_root()
    found: list[str] = []
    if root.is_dir():
        for base in root.iterdir():
            qe = base / "qe"
            if qe.is_dir():
                found += [f"{base.name}/qe/{n}" for n in os.listdir(qe)]
    return found


def lock_holders() -> list[str]:
    root = working_root()
    held: list[str] = []
    if root.is_dir():
        for state in root.glob("*/locks/state.json"):
            data = json.loads(state.read_text())
            held += [h["session_id"] for h in data.get("holders", []) + data.get("waiters", [])]
    return held


def registrations(repo: Path) -> list[str]:
    wt = repo / ".git" / "worktrees"
    return sorted(os.listdir(wt)) if wt.is_dir() else []


# A shell command that prints its CPU group (autogroup) once the group's nice
# is no longer 0, or after 5 s: the supervisor lowers a new session's group
# while the command runs (the kernel takes one such write per 100 ms).
WAIT_FOR_GROUP_NICE = ("g=''; for i in $(seq 100); do g=$(cat /proc/self/autogroup); "
                       "case \"$g\" in *' nice 0') sleep 0.05;; *) break;; esac; done; echo \"$g\"")
