from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from superqode_ls.runtime import Runtime
from superqode_ls.workspace import proc
from superqode_ls.workspace.proc import run_command

AUTOGROUP = Path("/proc/self/autogroup")


def _own_autogroup() -> str:
    return AUTOGROUP.read_text().strip()


def test_tools_run_below_the_caller(tmp_path):
    rt = Runtime.background()
    if rt.nice <= 0:
        pytest.skip("SUPERQODE_NICE turns the renice off")
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    # The group is lowered just after the start: the tool waits (up to 5 s)
    # until that has happened rather than race it.
    script = ("nice; g=''; for i in $(seq 100); do g=$(cat /proc/self/autogroup 2>/dev/null); "
              "case \"$g\" in *' nice 0'|'') sleep 0.05;; *) break;; esac; done; echo \"$g\"")
    res = asyncio.run(run_command(["sh", "-c", script], tmp_path, runtime=rt))
    lines = res.stdout.split("\n")
    assert int(lines[0]) == min(19, mine + rt.nice)
    if AUTOGROUP.exists():
        before = _own_autogroup()
        # The tool leads its own session, so its own CPU group: that group is
        # lowered too, and ours is left as it was.
        group, _, nice = lines[1].rpartition(" nice ")
        assert group != before.rpartition(" nice ")[0]
        assert int(nice) == min(19, rt.nice)
        assert _own_autogroup() == before


def test_lower_priority_leaves_a_child_in_our_group_alone(tmp_path):
    if not AUTOGROUP.exists():
        pytest.skip("no autogroup scheduling on this kernel")
    import subprocess

    before = _own_autogroup()
    child = subprocess.Popen(["sleep", "5"])  # same session, so same CPU group as us
    try:
        proc.lower_priority(child.pid, Runtime(nice=10))
        assert Path(f"/proc/{child.pid}/autogroup").read_text().strip() == before
        assert _own_autogroup() == before
    finally:
        child.kill()
        child.wait()


def test_the_foreground_runtime_runs_tools_at_our_priority(tmp_path, monkeypatch):
    """``superqe run``'s runtime: no renice, whatever another front end in
    this process chose (the runtime travels with the call, not in a global)."""
    monkeypatch.delenv("SUPERQODE_NICE", raising=False)
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    fg, bg = Runtime.foreground(), Runtime.background()
    assert (fg.nice, bg.nice) == (0, 10)
    res = asyncio.run(run_command(["nice"], tmp_path, runtime=fg))
    assert int(res.stdout) == mine
    monkeypatch.setenv("SUPERQODE_NICE", "3")
    assert Runtime.foreground().nice == Runtime.background().nice == 3


def test_a_bad_nice_setting_is_one_line_of_bad_input(monkeypatch):
    from superqode_ls.errors import UsageError

    monkeypatch.setenv("SUPERQODE_NICE", "low")
    with pytest.raises(UsageError, match="SUPERQODE_NICE='low' is not a whole number"):
        Runtime.background()


def test_a_runtime_sparing_a_cpu_keeps_tools_and_their_threads_off_it(tmp_path):
    mine = sorted(os.sched_getaffinity(0))
    if len(mine) < 2:
        pytest.skip("one CPU: nothing to spare")
    probe = (
        "import os, threading\n"
        "out = []\n"
        "t = threading.Thread(target=lambda: out.append(sorted(os.sched_getaffinity(0))))\n"
        "t.start(); t.join()\n"
        "print(sorted(os.sched_getaffinity(0)), out[0])\n"
    )
    spared = Runtime().sparing(1)
    assert spared.tool_cpus == frozenset(mine[:-1]) and spared.cpu_count() == len(mine) - 1
    res = asyncio.run(run_command([sys.executable, "-c", probe], tmp_path, runtime=spared))
    assert res.stdout.split() and res.stdout.strip() == f"{mine[:-1]} {mine[:-1]}"
    # The caller itself (the language server) keeps every CPU.
    assert sorted(os.sched_getaffinity(0)) == mine
    # A runtime that spares none, in the same process at the same time, is
    # not affected by the other one.
    assert spared.sparing(0).tool_cpus is None
    res = asyncio.run(run_command([sys.executable, "-c", probe], tmp_path, runtime=Runtime()))
    assert res.stdout.strip() == f"{mine} {mine}"


def test_sparing_needs_a_cpu_to_spare():
    n = len(os.sched_getaffinity(0))
    assert Runtime().sparing(n).tool_cpus is None
    assert Runtime().sparing(n).cpu_count() == n


def test_session_close_ends_processes_left_in_its_sandbox(make_repo):
    """Belt and braces beside the supervisor: a process started in the
    sandbox outside any supervisor (setsid, its own session) is killed when
    the session closes, before the sandbox is removed."""
    import subprocess

    import psutil

    from superqode_ls.workspace.session import IsolatedSession

    repo = make_repo()
    s = IsolatedSession.create_sync(repo)
    stray = subprocess.Popen(["sleep", "60"], cwd=s.sandbox, start_new_session=True)
    by_env = subprocess.Popen(["sleep", "61"], cwd="/", env=s.env(), start_new_session=True)
    try:
        v = s.close_sync()
        assert v.verified, v.line
        assert stray.wait(5) == -9 and by_env.wait(5) == -9
    finally:
        for p in (stray, by_env):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert psutil.pid_exists(os.getpid())


def test_only_the_sessions_own_processes_are_ended(tmp_path):
    """The /proc scan matches what psutil matched: the session's id as a
    whole entry of the environment, or a working folder beneath the
    sandbox; a longer id, another variable holding the id, or a folder
    beside the sandbox whose name merely begins the same are not ours."""
    import subprocess

    box = tmp_path / "qe-1"
    twin = tmp_path / "qe-1x"
    box.mkdir()
    twin.mkdir()
    base = {k: v for k, v in os.environ.items() if k != "SUPERQODE_SESSION_ID"}

    def start(cwd, **env):
        return subprocess.Popen(["sleep", "60"], cwd=cwd, env={**base, **env}, start_new_session=True)

    ours = [start(box), start(tmp_path, SUPERQODE_SESSION_ID="qe-1")]
    others = [start(twin), start(tmp_path, SUPERQODE_SESSION_ID="qe-10"),
              start(tmp_path, OTHER="SUPERQODE_SESSION_ID=qe-1")]
    try:
        ended = proc.end_session_processes("qe-1", box)
        assert sorted(ended) == sorted(p.pid for p in ours)
        assert [p.wait(5) for p in ours] == [-9, -9]
        assert [p.poll() for p in others] == [None, None, None]
        # The same answer as the portable scan, for a session with survivors.
        me = os.getpid()
        root = str(twin) + os.sep
        assert sorted(proc._matching("qe-10", root, me)) == sorted(
            proc._matching_psutil("qe-10", root, me, None)) == sorted(p.pid for p in others[:2])
    finally:
        for p in ours + others:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_no_front_end_setting_is_a_module_global():
    """Priority, CPUs, the asker and the warm bandit travel in the front
    end's Runtime: the modules that use them assign no global."""
    import ast

    import superqode_ls
    from superqode_ls.agent import permissions
    from superqode_ls.qe.roles import _bandit_warm, security

    root = Path(superqode_ls.__file__).parent
    for mod in (proc, permissions, _bandit_warm, security, root / "runtime.py"):
        path = Path(mod if isinstance(mod, Path) else mod.__file__)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Global)], path.name
    for gone in ("BACKGROUND_NICE", "_tool_cpus", "keep_cpus_free", "tool_cpu_count"):
        assert not hasattr(proc, gone)
    assert not hasattr(permissions, "set_default_asker") and not hasattr(_bandit_warm, "current")


def test_a_cancel_ends_a_member_in_a_session_of_its_own(tmp_path):
    """bwrap's sandbox runs in a session of its own (--new-session): out of
    the tool's process group. A cancel landing as the tool starts (before
    bwrap's --die-with-parent holds) must still end it, or it keeps the
    output pipes open and the cancel waits for it: a Ctrl-C that did nothing
    until the session's budget ran out."""
    pidfile = tmp_path / "pid"
    code = ("import subprocess, sys, time\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],"
            " start_new_session=True)\n"
            f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
            "time.sleep(120)\n")

    async def main() -> int:
        task = asyncio.ensure_future(run_command([sys.executable, "-c", code], tmp_path, timeout=300))
        while not (pidfile.exists() and pidfile.read_text()):
            await asyncio.sleep(0.05)
        task.cancel()
        # Bounded so a regression fails here instead of hanging for 120 s.
        done, _ = await asyncio.wait({task}, timeout=60)
        assert done, "the cancel is still waiting on the detached member's pipes"
        with pytest.raises(asyncio.CancelledError):
            await task
        return int(pidfile.read_text())

    orphan = asyncio.run(main())
    # SIGKILL is sent, not waited for (a reparented process is reaped by
    # whoever adopted it): give the kernel a moment to end it, never 120 s.
    deadline = time.monotonic() + 10
    while _alive(orphan) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(orphan)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_raw_stdout_gives_the_bytes_as_written_and_no_text(tmp_path):
    # The lint role parses ruff's JSON from these bytes: they must be the
    # tool's exact output (not a decode and re-encode, which would turn
    # invalid UTF-8 into U+FFFD), and the text left empty, never decoded.
    script = "import sys; sys.stdout.buffer.write(b'[\"caf\\xc3\\xa9\", \"\\xff\"]')"
    res = asyncio.run(run_command([sys.executable, "-c", script], tmp_path, raw_stdout=True))
    assert res.stdout_bytes == b'["caf\xc3\xa9", "\xff"]' and res.stdout == ""
    plain = asyncio.run(run_command([sys.executable, "-c", script], tmp_path))
    assert plain.stdout_bytes is None and plain.stdout == '["caf\u00e9", "\ufffd"]'
