"""``superqe worktree`` end to end: real processes, real repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from superqode_ls.cli import main
from superqode_ls.workspace import branches as br

from .conftest import run_git

NOT_A_REPO = "Error: worktrees can only be used within a Git repository.\n"


def superqe(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "superqode_ls", "worktree", *args],
        cwd=cwd, capture_output=True, text=True, check=False, timeout=120,
    )


class Run:
    def __init__(self, code: int, out: str, err: str):
        self.returncode, self.stdout, self.stderr = code, out, err


@pytest.fixture
def sq(monkeypatch, capsys):
    """In-process ``superqe worktree ...`` in a directory (one process is slow to start)."""

    def run(cwd: Path, *args: str) -> Run:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = main(["worktree", *args])
        out = capsys.readouterr()
        return Run(code, out.out, out.err)

    return run


def test_outside_git_exact_message_exit_2_nothing_created(tmp_path, sq):
    plain = tmp_path / "plain dir"
    plain.mkdir()
    proc = superqe(plain, "new", "feature/x")  # one real process: the exact bytes on stderr
    assert (proc.returncode, proc.stderr, proc.stdout) == (2, NOT_A_REPO, "")
    for args in (("new",), ("new", "--task", "Do it"), ("list",), ("open", "x"), ("remove", "x")):
        res = sq(plain, *args)
        assert (res.returncode, res.stderr, res.stdout) == (2, NOT_A_REPO, ""), args
    assert sq(plain, "list", "--all", "--json").stdout.strip() == "[]"  # --all needs no repo
    assert not Path(os.environ["SUPERQODE_HOME"]).exists()
    assert list(plain.iterdir()) == []


def test_new_prints_only_the_path_then_list_open_remove(make_repo, sq):
    repo = make_repo({"a.txt": "a\n"})
    proc = sq(repo, "new", "feature/cli")
    assert proc.returncode == 0, proc.stderr
    path = Path(proc.stdout.strip())
    assert proc.stdout.count("\n") == 1 and path.is_dir()
    assert path.name == "feature-cli" and "new branch feature/cli" in proc.stderr
    (path / "a.txt").write_text("changed\n")

    listed = sq(repo, "list")
    assert listed.returncode == 0
    header, row = listed.stdout.splitlines()
    assert header.split()[:5] == ["NAME", "BRANCH", "AGE", "IDLE", "STATE"]
    assert row.split()[:2] == ["feature-cli", "feature/cli"] and "dirty (1)" in row
    data = json.loads(sq(repo, "list", "--json").stdout)
    assert data[0]["branch"] == "feature/cli" and data[0]["dirty"] == 1

    opened = sq(repo, "open", "feature/cli")
    assert opened.returncode == 0 and Path(opened.stdout.strip()) == path

    refused = sq(repo, "remove", "feature-cli")
    assert refused.returncode == 2 and "uncommitted change" in refused.stderr
    assert refused.stderr.count("\n") == 1 and path.is_dir()
    removed = sq(repo, "remove", "feature-cli", "--force")
    assert removed.returncode == 0, removed.stderr
    assert "saved:" in removed.stderr and "deleted branch feature/cli" in removed.stderr
    assert not path.exists()
    assert run_git(repo, "branch", "--list", "feature/cli") == ""


def test_clear_one_line_errors(make_repo, sq):
    repo = make_repo()
    main_branch = sq(repo, "new", "main")
    assert main_branch.returncode == 2
    assert main_branch.stderr.count("\n") == 1
    assert "already checked out at" in main_branch.stderr
    run_git(repo, "branch", "old")
    exists = sq(repo, "new", "-b", "old")
    assert exists.returncode == 2 and "superqe worktree new old" in exists.stderr
    spaces = sq(repo, "new", "my branch")
    assert spaces.returncode == 2 and "try 'my-branch'" in spaces.stderr
    both = sq(repo, "new", "x", "--task", "y")
    assert both.returncode == 2 and "not both" in both.stderr
    assert sq(repo, "open", "ghost").returncode == 2
    bad_start = sq(repo, "new", "later", "--from", "no-such-ref")
    assert bad_start.returncode == 2 and "unknown start commit 'no-such-ref'" in bad_start.stderr
    first = run_git(repo, "rev-parse", "HEAD").strip()
    (repo / "b.txt").write_text("b\n")
    run_git(repo, "add", "b.txt")
    run_git(repo, "commit", "-q", "-m", "second")
    made = sq(repo, "new", "from-first", "--from", first, "--json")
    assert made.returncode == 0 and json.loads(made.stdout)["base_commit"] == first
    assert [r["name"] for r in json.loads(sq(repo, "list", "--json").stdout)] == ["from-first"]


def test_parallel_creation_of_eight_worktrees_by_processes(make_repo):
    repo = make_repo()
    env = dict(os.environ)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "superqode_ls", "worktree", "new", *([f"p/{i}"] if i % 2 else [])],
            cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(8)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [e for _, e in outs]
    paths = {Path(o.strip()) for o, _ in outs}
    assert len(paths) == 8 and all(p.is_dir() for p in paths)
    listed = run_git(repo, "worktree", "list", "--porcelain")
    assert sum(1 for line in listed.splitlines() if line.startswith("worktree ")) == 9
    assert len(br.list_worktrees(repo)) == 8
    assert run_git(repo, "status", "--porcelain") == ""


class _FakeModel(BaseHTTPRequestHandler):
    answer = "Branch: `feat/auth-cleanup`"
    seen: ClassVar[list[dict]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        reply = {
            "choices": [{"message": {"role": "assistant", "content": self.answer},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_provider():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeModel)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    _FakeModel.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    t.join()


def _configure_provider(base_url: str) -> None:
    home = Path(os.environ["SUPERQODE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(
        f"providers:\n  - name: local\n    base_url: {base_url}\n    model: tiny\n"
        "agent:\n  provider: local\n"
    )


def test_task_named_by_llm_then_slug_when_provider_down(make_repo, fake_provider, monkeypatch, capsys):
    repo = make_repo()
    monkeypatch.chdir(repo)
    _configure_provider(fake_provider)
    assert main(["worktree", "new", "--task", "Clean up the auth module", "--llm-name"]) == 0
    out = capsys.readouterr()
    assert Path(out.out.strip()).name == "feat-auth-cleanup"
    assert _FakeModel.seen and _FakeModel.seen[0]["messages"][-1]["content"] == "Clean up the auth module"

    # Unreachable provider: the deterministic slug, no error.
    _configure_provider("http://127.0.0.1:9/v1")
    assert main(["worktree", "new", "--task", "Clean up the auth module", "--llm-name"]) == 0
    out = capsys.readouterr()
    assert Path(out.out.strip()).name == "clean-up-auth-module"

    # Without --llm-name no request is made.
    _configure_provider(fake_provider)
    n = len(_FakeModel.seen)
    assert main(["worktree", "new", "--task", "Add rate limits"]) == 0
    assert Path(capsys.readouterr().out.strip()).name == "add-rate-limits"
    assert len(_FakeModel.seen) == n


def test_promote_and_reap_commands(make_repo, monkeypatch, capsys):
    from superqode_ls.workspace.session import IsolatedSession

    repo = make_repo({"m.py": "X = 1\n"})
    s = IsolatedSession.create_sync(repo, isolation="worktree")
    (s.sandbox / "m.py").write_text("X = 2\n")
    s.close_sync(keep=True)
    monkeypatch.chdir(repo)
    assert main(["worktree", "promote", s.id, "qe-result"]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert (path / "m.py").read_text() == "X = 2\n"
    assert run_git(repo, "log", "-1", "--format=%s", "qe-result").startswith("Apply changes from")

    assert main(["worktree", "reap", "--dry-run"]) == 0
    assert capsys.readouterr().out == ""  # nothing idle yet
    assert main(["worktree", "promote", "qe-20200101-000000-000000", "x"]) == 2
    assert "no QE session" in capsys.readouterr().err


def test_promote_a_finished_exec_session_from_its_saved_patch(make_repo, sq, capsys):
    repo = make_repo({"a.txt": "old\n"})
    capsys.readouterr()
    assert main(["exec", str(repo), "--", "sh", "-c", "echo new > a.txt"]) == 0
    err = capsys.readouterr().err
    sid = next(line.split()[1] for line in err.splitlines() if line.startswith("session:"))
    assert (repo / "a.txt").read_text() == "old\n"  # exec reverted the sandbox

    res = sq(repo, "promote", sid, "from-exec")
    assert res.returncode == 0, res.stderr
    path = Path(res.stdout.strip())
    assert (path / "a.txt").read_text() == "new\n"
    assert run_git(path, "status", "--porcelain") == ""
    assert (repo / "a.txt").read_text() == "old\n"
    missing = sq(repo, "promote", "qe-20200101-000000-abcdef", "nope")
    assert missing.returncode == 2 and "no saved patches" in missing.stderr
