"""The warm helper (superqe warm): a command line handed to it prints the
same, writes the same report and exits with the same code as the same
command run in its own process; without a helper (or one it may not use)
the command runs as before. Every helper a test starts is stopped."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.cli import warm_client, warm_server
from superqode_ls.config import superqode_home
from superqode_ls.qe import verify_kept

from .warm_helpers import SUPERQE, Warm, cold_env, running, state, superqe, wait_exit


@pytest.fixture
def warm():
    yield from running()

FILES = {"app.py": "import os\nimport subprocess\n\n\ndef f(x):\n"
                   "    return subprocess.call(x, shell=True)\n",
         # bandit's finding decides the exit: the whole view, where the
         # default one makes a shell call no input reaches an advisory
         "superqode.yaml": "qe:\n  default_view: all\n"}


def _same(text: str) -> str:
    """Output with what differs between any two runs (session ids, times) blanked."""
    text = re.sub(r"qe-\d{8}-\d{6}-[0-9a-f]+", "ID", text)
    text = re.sub(r"\d+\.\d+s\b", "Ts", text)
    return re.sub(r'"(ts|time|duration_s|started|finished|elapsed_s)": [0-9.e+-]+', r'"\1": T', text)


def _by_role(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The session's own lines in order, and each role's lines in order."""
    own: list[str] = []
    roles: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = re.match(r"\[(\w+)\] ", line)
        (roles.setdefault(m.group(1), []) if m else own).append(line)
    return own, roles


def _events_by_role(stdout: str) -> tuple[list[str], dict[str, list[str]]]:
    """The JSONL events' types: the session's own in order, and each role's in
    order (the roles run side by side, so how theirs interleave is theirs)."""
    own: list[str] = []
    roles: dict[str, list[str]] = {}
    for line in stdout.splitlines():
        event = json.loads(line)
        role = (event.get("data") or {}).get("role")
        (roles.setdefault(role, []) if isinstance(role, str) else own).append(event["type"])
    return own, roles


def _report(stdout: str) -> dict:
    last = json.loads(stdout.splitlines()[-1])
    return json.loads(Path(last["data"]["report"]).read_text())


def _forget_bandit_results() -> None:
    shutil.rmtree(superqode_home() / "bandit-results", ignore_errors=True)


def test_a_run_handed_to_the_helper_is_the_same_run(make_repo, warm):
    repo = make_repo(FILES)
    args = ("run", str(repo), "--mode", "quick", "-r", "lint_tester", "-r", "security_tester",
            "--fail-on", "low")
    # Each run starts from the same state: bandit's results kept by the one
    # before would spare the next its bandit (qe/roles/_bandit_cache.py).
    hot = superqe(*args)
    _forget_bandit_results()
    # and the verification step's kept verdicts would spare it its re-checks (verify_kept.py)
    verify_kept.cache_file(repo).unlink(missing_ok=True)
    cold = superqe(*args, env=cold_env())
    assert state()["runs"] == 1  # the first went through the helper, the second did not
    assert hot.returncode == cold.returncode == 1
    assert _same(hot.stdout) == _same(cold.stdout)
    # The roles run side by side: the order their lines come in is theirs.
    assert _by_role(_same(hot.stderr)) == _by_role(_same(cold.stderr))
    _forget_bandit_results()
    hot = superqe(*args, "--jsonl")
    _forget_bandit_results()
    cold = superqe(*args, "--jsonl", env=cold_env())
    assert state()["runs"] == 2
    assert hot.returncode == cold.returncode == 1
    assert _events_by_role(hot.stdout) == _events_by_role(cold.stdout)
    a, b = _report(hot.stdout), _report(cold.stdout)
    assert [f["rule_id"] for f in a["findings"]] == [f["rule_id"] for f in b["findings"]]
    assert a["verdict"] == b["verdict"] and a["verification"] == b["verification"]


def test_usage_errors_and_the_working_folder_come_through(make_repo, warm, tmp_path):
    repo = make_repo(FILES)
    hot, cold = (superqe("run", "no-such-folder", cwd=repo, env=env)
                 for env in (None, cold_env()))
    assert hot.returncode == cold.returncode == 2
    assert hot.stderr == cold.stderr and "no-such-folder" in hot.stderr
    # Relative paths are the client's: "." is the repository it runs in.
    hot = superqe("roles", ".", "--json", cwd=repo)
    assert hot.returncode == 0 and json.loads(hot.stdout)
    assert state()["runs"] == 2


def test_stdin_stdout_and_the_exit_status_of_exec(make_repo, warm):
    repo = make_repo(FILES)
    code = "import sys; data = sys.stdin.read(); print(data.upper()); sys.exit(7)"
    hot = superqe("exec", str(repo), "--", sys.executable, "-c", code, input="through the helper")
    assert state()["runs"] == 1
    assert hot.returncode == 7, hot.stderr
    assert hot.stdout.strip() == "THROUGH THE HELPER"
    assert "verified" in hot.stderr.lower()


def test_umask_and_environment_are_the_clients(make_repo, warm, tmp_path):
    repo = make_repo(FILES)
    code = ("import os; m = os.umask(0); print(oct(m), os.environ.get('WARM_PROBE'))")
    res = subprocess.run(["sh", "-c", 'umask 027; exec "$@"', "sh", *SUPERQE, "exec",
                          str(repo), "--", sys.executable, "-c", code],
                         capture_output=True, text=True, timeout=180, check=False,
                         env={**os.environ, "WARM_PROBE": "the client's"})
    assert state()["runs"] == 1
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["0o27", "the", "client's"]


def _exec_sleeping(repo: Path, act) -> tuple[int, str]:
    """``superqe exec`` of a command that sleeps; ``act()`` once it runs.
    (exit status, stderr)."""
    code = "import time; print('ready', flush=True); time.sleep(120)"
    proc = subprocess.Popen([*SUPERQE, "exec", str(repo), "--", sys.executable, "-c", code],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        act(proc)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


def test_ctrl_c_reaches_the_run(make_repo, warm):
    code, err = _exec_sleeping(make_repo(FILES), lambda proc: proc.send_signal(signal.SIGINT))
    assert code == 130, err
    assert "verified" in err.lower()  # the run left through its revert path
    assert state()["runs"] == 1 and state()["running"] == 0


def test_without_a_helper_the_command_runs_here(make_repo):
    repo = make_repo(FILES)
    res = superqe("roles", str(repo), env={**os.environ, "SUPERQODE_WARM": "verbose"})
    assert res.returncode == 0
    assert "warm helper not used: no warm helper" in res.stderr
    assert superqe("warm", "status").returncode == 1


def test_a_helper_it_may_not_use_means_the_normal_run(make_repo, warm):
    repo = make_repo(FILES)
    verbose = {**os.environ, "SUPERQODE_WARM": "verbose"}
    # Another Python setting than the helper's (fixed when an interpreter starts).
    res = superqe("roles", str(repo), env={**verbose, "PYTHONHASHSEED": "123"})
    assert res.returncode == 0
    assert "another interpreter, package or Python setting" in res.stderr
    # A folder open to others is not trusted (anyone could have put the socket there).
    folder = Path(warm_client.folder())
    folder.chmod(0o755)
    try:
        res = superqe("roles", str(repo), env=verbose)
    finally:
        folder.chmod(0o700)
    assert res.returncode == 0 and "open to others" in res.stderr
    assert state()["runs"] == 0


def test_start_is_idempotent_and_stop_ends_it():
    helper = Warm().start()
    try:
        again = superqe("warm", "start")
        assert again.returncode == 0 and f"already up (pid {helper.pid})" in again.stdout
        assert superqe("warm", "status").returncode == 0
        assert superqe("warm", "stop").returncode == 0
        assert wait_exit(helper.pid, 30)
        assert not (Path(warm_client.folder()) / warm_client.SOCKET_NAME).exists()
        assert superqe("warm", "status").returncode == 1
    finally:
        helper.stop()


def test_it_exits_when_idle():
    helper = Warm(idle_min=0.02).start()  # 1.2 s
    try:
        assert wait_exit(helper.pid, 60)
        assert "idle: exit" in (Path(warm_client.home()) / "logs" / "warm.log").read_text()
    finally:
        helper.stop()


def test_the_code_stamp_sees_a_changed_module(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "sub" / "m.py").write_text("x = 1\n")
    before = warm_server.code_stamp(str(pkg))
    assert warm_server.code_stamp(str(pkg)) == before
    (pkg / "sub" / "m.py").write_text("x = 22\n")
    assert warm_server.code_stamp(str(pkg)) != before


def test_a_malformed_request_is_refused_and_the_helper_stays_up(warm):
    for bad in ({"v": 1, "argv": [["run"]], "env": {}}, {"v": 1, "argv": ["run"], "env": []},
                {"v": 1, "argv": ["suggestions", "apply"]}, ["not", "a", "dict"]):
        with warm_client.connect() as sock:
            cwd = os.open("/", os.O_PATH)
            try:
                warm_client.send(sock, bad, [0, 1, 2, cwd])
            finally:
                os.close(cwd)
            reply = warm_client.receive(sock)
        assert reply["ok"] is False, bad
    assert state()["runs"] == 0


def test_a_run_killed_by_a_signal_ends_the_client_with_it(make_repo, warm):
    import psutil

    def kill_the_run(_proc) -> None:
        # A fork of the helper (not the bandit server it starts for the next run).
        helper = psutil.Process(warm.pid)
        (child,) = [c for c in helper.children() if c.cmdline() == helper.cmdline()]
        child.kill()

    code, _ = _exec_sleeping(make_repo(FILES), kill_the_run)
    assert code == -signal.SIGKILL
    assert state()["running"] == 0


def test_a_reader_that_goes_away_ends_nothing_through_the_helper(make_repo, warm):
    repo = make_repo(FILES)
    line = (f"{' '.join(SUPERQE)} run {repo} --mode quick -r lint_tester --fail-on low | head -1;"
            " echo \"status=${PIPESTATUS[0]}\"")
    hot, cold = (subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=180,
                                check=False, env=env) for env in (None, cold_env()))
    assert state()["runs"] == 1
    assert hot.stdout.splitlines()[-1] == cold.stdout.splitlines()[-1] == "status=1"
    assert "BrokenPipeError" not in hot.stderr + cold.stderr


def test_a_helper_that_died_leaves_a_socket_that_is_replaced(make_repo):
    repo = make_repo(FILES)
    helper = Warm().start()
    try:
        os.kill(helper.pid, signal.SIGKILL)
        assert wait_exit(helper.pid, 30)
        assert (Path(warm_client.folder()) / warm_client.SOCKET_NAME).exists()
        res = superqe("roles", str(repo), env={**os.environ, "SUPERQODE_WARM": "verbose"})
        assert res.returncode == 0 and "warm helper not used" in res.stderr
        helper = Warm().start()  # binds again in place of the dead one's socket
        assert state()["pid"] == helper.pid
    finally:
        helper.stop()


def test_it_exits_when_its_code_changes_on_disk(tmp_path):
    """A helper started from a copy of the package: a module of the copy
    changes, and the helper ends (the next command runs in its own process)."""
    import shutil

    copy = tmp_path / "src"
    shutil.copytree(Path(warm_server.__file__).parents[1], copy / "superqode_ls",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(copy)}
    res = superqe("warm", "start", env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    pid = int(res.stdout.split("(pid ", 1)[1].split(",", 1)[0])
    try:
        module = copy / "superqode_ls" / "cli" / "warm_peer.py"
        module.write_text(module.read_text() + "\n# changed\n")
        assert wait_exit(pid, 120)
        assert "its code changed on disk" in (
            Path(warm_client.home()) / "logs" / "warm.log").read_text()
    finally:
        if not wait_exit(pid, 0):
            os.kill(pid, signal.SIGKILL)
            wait_exit(pid, 30)
