"""``superqe``'s endings: a crashed role fails the run in one line (its
traceback in the log, not on the screen), and a reader that goes away
(``superqe run . | head -1``) ends the run quietly with its own exit code.
Real subprocesses with real pipes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from superqode_ls.cli import QuietPipe, log_file
from tests import qe_testroles
from tests.cli_helpers import TOY_CLI, superqe
from tests.conftest import ROOT

APP = "def f():\n    x = 'PLANTED'\n    return x\n"
CLI = TOY_CLI


@pytest.fixture(autouse=True)
def toy_roles(monkeypatch):
    qe_testroles.register(monkeypatch)


def test_a_crashed_role_exits_3_in_one_line(make_repo, capsys):
    repo = make_repo({"app.py": "x = 1\n"})
    code, out, err = superqe(capsys, "run", str(repo), "-r", "toy_crash", "-r", "toy_tester")
    assert code == 3
    said = [ln for ln in err.splitlines() if ln.startswith("superqe:")]
    assert said == [("superqe: role toy_crash crashed: RuntimeError: toy role exploded "
                     f"(traceback in {log_file()})")]
    assert "Traceback" not in out + err
    with open(log_file(), encoding="utf-8") as fh:
        logged = fh.read()
    assert "role toy_crash crashed" in logged and "Traceback" in logged
    # The same project without the crashing role passes.
    code, _, err = superqe(capsys, "run", str(repo), "-r", "toy_tester")
    assert code == 0 and "superqe:" not in err


def _run_into_closed_pipe(repo, *extra: str) -> subprocess.CompletedProcess:
    """superqe with a stdout whose reader is gone before its first write."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-c", CLI, "run", str(repo), "-r", "toy_tester", *extra],
            check=False, cwd=ROOT, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)


@pytest.mark.parametrize("extra", [(), ("--jsonl",), ("--fail-on", "never")])
def test_a_reader_that_goes_away_ends_the_run_quietly_with_its_exit_code(make_repo, extra):
    repo = make_repo({"app.py": APP})
    proc = _run_into_closed_pipe(repo, *extra)
    # The run's own code: 1 for its high finding, 0 when nothing fails it.
    assert proc.returncode == (0 if "never" in extra else 1), proc.stderr
    assert "BrokenPipe" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    # It ran to the end: the report was written and the sandbox went.
    assert list((repo / ".superqode" / "qe-artifacts").glob("*.json"))
    from superqode_ls.workspace.paths import working_root

    assert not list(working_root().glob("*/qe/qe-*/"))


def test_head_dash_1_in_a_shell(make_repo):
    repo = make_repo({"app.py": APP})
    script = (f"{sys.executable} -c \"$CLI\" run {repo} -r toy_tester | head -1; "
              "echo \"status=${PIPESTATUS[0]}\" >&2")
    proc = subprocess.run(["bash", "-c", script], check=False, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "CLI": CLI}, timeout=120)
    assert len(proc.stdout.splitlines()) == 1
    assert proc.stderr.splitlines()[-1] == "status=1" and "Traceback" not in proc.stderr


def test_quiet_pipe_drops_what_follows_a_broken_pipe():
    class Gone:
        def __init__(self):
            self.calls = 0

        def write(self, text):
            self.calls += 1
            raise BrokenPipeError

        def flush(self):
            raise BrokenPipeError

        encoding = "utf-8"

    gone = Gone()
    quiet = QuietPipe(gone)
    assert quiet.write("one\n") == 4 and quiet.gone
    quiet.write("two\n")
    quiet.flush()
    assert gone.calls == 1 and quiet.encoding == "utf-8"


GIT_IN_TESTS = {
    "app.py": "def f():\n    return 1\n",
    "tests/test_app.py": (
        "import subprocess\n\nfrom app import f\n\n\n"
        "def test_f_and_git():\n"
        "    subprocess.run(['git', 'add', '-A'], check=False)\n"
        "    assert f() == 1\n"),
}


@pytest.mark.parametrize("role", ["toy_git", "unit_tester"])
def test_git_the_project_runs_stays_in_the_session_log(make_repo, capsys, role):
    repo = make_repo(GIT_IN_TESTS)
    code, out, err = superqe(capsys, "run", str(repo), "-r", role)
    assert code == 0, out + err
    assert "blocked git command" not in out + err and "superqode guard" not in out + err
    [said] = [ln for ln in err.splitlines() if ln.startswith("superqe:")]
    [log] = (repo / ".superqode" / "qe-artifacts" / "logs").glob("*-guard.log")
    assert said == f"superqe: 1 git command(s) blocked in the sandbox (run by the project's code): {log}"
    assert ("git push origin HEAD" if role == "toy_git" else "git add -A") in log.read_text()
    # --jsonl still streams every event.
    code, out, _ = superqe(capsys, "run", str(repo), "-r", role, "--jsonl")
    assert '"type": "git.blocked"' in out or '"type":"git.blocked"' in out
