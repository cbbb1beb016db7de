"""`superqe guard check -- GIT-COMMAND...`: prints the verdict; exit 0 allowed,
1 blocked, 2 usage or configuration error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from superqode_ls.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_blocked_command_prints_reason_and_suggestion(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(capsys, "guard", "check", "--", "git", "commit", "-m", "x")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "blocked: Commits would permanently alter repository history"
    assert lines[1].startswith("  suggestion: ")
    assert "  command: git commit -m x" in lines


def test_allowed_command(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(capsys, "guard", "check", "--", "git", "status")
    assert code == 0
    assert out.startswith("allowed: git status")


def test_without_the_git_word_and_as_a_shell_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _run(capsys, "guard", "check", "--", "reset", "--hard")[0] == 1
    code, out, _ = _run(capsys, "guard", "check", "--", "git log && sh -c 'git push'")
    assert code == 1
    assert out.splitlines()[0].startswith("allowed: git log")
    assert "blocked: Pushing would publish" in out
    code, out, _ = _run(capsys, "guard", "check", "--", "ls -la")
    assert (code, out) == (0, "allowed: no git command found\n")


def test_project_config_allow_and_block(capsys, tmp_path):
    (tmp_path / "superqode.yaml").write_text(
        "qe:\n  git_guard:\n    allow: ['git commit']\n    block: ['git log --all']\n"
    )
    p = str(tmp_path)
    assert _run(capsys, "guard", "check", "--project", p, "--", "git", "commit")[0] == 0
    code, out, _ = _run(capsys, "guard", "check", "--project", p, "--", "git", "log", "--all")
    assert code == 1 and "qe.git_guard.block" in out


def test_usage_and_config_errors_exit_2(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, "guard", "check")
    assert code == 2 and "needs a git command" in err
    code, _, err = _run(capsys, "guard")
    assert code == 2 and "guard check" in err
    (tmp_path / "superqode.yaml").write_text("qe:\n  git_guard:\n    allow: 3\n")
    code, _, err = _run(capsys, "guard", "check", "--", "git", "status")
    assert code == 2 and "superqode.yaml" in err
    code, _, err = _run(capsys, "guard", "check", "--project", str(tmp_path / "nope"), "--", "git")
    assert code == 2 and "not a directory" in err


def test_entry_point_process(tmp_path):
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("superqe")), "guard", "check", "--", "git", "push"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("blocked: Pushing would publish")
