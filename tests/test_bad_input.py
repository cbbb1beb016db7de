"""Bad input across the CLI: the real ``superqe`` in subprocesses.

Each bad input gets exit 2 and ONE line on stderr (``superqe: ...``), no
traceback, and nothing half-done: the project is unchanged (fingerprint), no
``.superqode/`` appears, no sandbox is left under $SUPERQODE_HOME/working/*/qe
and git has no worktree registration. Cases of one kind run side by side to
keep the file fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from superqode_ls.workspace.fingerprint import compare, take_fingerprint

from .conftest import run_git, write_files

SUPERQE = [sys.executable, "-m", "superqode_ls"]


def superqe(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SUPERQE, *args], cwd=cwd, capture_output=True, text=True, check=False,
                          timeout=120, env={**os.environ, "COLUMNS": "200"})


def run_many(cases: dict[str, tuple[list[str], Path | None]]) -> dict[str, subprocess.CompletedProcess]:
    """Real subprocesses, side by side."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(superqe, *args, cwd=cwd) for name, (args, cwd) in cases.items()}
        return {name: f.result() for name, f in futures.items()}


def cli(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``superqe`` in this process: the same ``main`` as the console script
    (an escaping exception fails the test like a traceback would), without an
    interpreter start per case; ``run_many`` covers the real entry point."""
    from superqode_ls.cli import main

    err, out = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code
    finally:
        os.chdir(old)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def run_in_process(cases: dict[str, tuple[list[str], Path | None]]) -> dict[str, subprocess.CompletedProcess]:
    return {name: cli(args, cwd) for name, (args, cwd) in cases.items()}


def one_line(proc: subprocess.CompletedProcess, name: str = "") -> str:
    assert "Traceback" not in proc.stderr, f"{name}: {proc.stderr}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, f"{name}: expected one stderr line, got {proc.stderr!r}"
    return lines[0]


def assert_usage(proc: subprocess.CompletedProcess, *needles: str, name: str = "") -> None:
    line = one_line(proc, name)
    assert proc.returncode == 2, f"{name}: exit {proc.returncode}: {line}"
    assert line.startswith("superqe: "), f"{name}: {line}"
    for n in needles:
        assert n in line, f"{name}: {n!r} not in {line!r}"


def sessions_left() -> list[Path]:
    return list(Path(os.environ["SUPERQODE_HOME"]).glob("working/*/qe/*"))


def assert_nothing_left(project: Path, before, *, superqode_dir_allowed: bool = False) -> None:
    assert compare(before, take_fingerprint(project)) == []
    if not superqode_dir_allowed:
        assert not (project / ".superqode").exists()
    assert sessions_left() == []
    wt = project / ".git" / "worktrees"
    assert not wt.exists() or not any(wt.iterdir())


@pytest.fixture
def project(make_repo):
    return make_repo({"app.py": "x = 1\n", "README.md": "hi\n"}, name="proj")


def test_usage_errors_of_every_command(project, tmp_path):
    (project / "app.py").write_text("x = 2\n")  # uncommitted work must survive too
    before = take_fingerprint(project)
    p, f = str(project), str(project / "app.py")
    missing = str(tmp_path / "missing")
    loose = tmp_path / "loose" / "app.py"
    loose.parent.mkdir()
    loose.write_text("x = 1\n")
    sid = "qe-20250101-000000-abcdef"
    cases = {
        # run
        "run missing": (["run", missing, "-r", "lint_tester"], None),
        # A file is a selection inside its git repository (issue 17); a file
        # in no repository is refused.
        "run file": (["run", str(loose), "-r", "lint_tester"], None),
        "run role": (["run", p, "-r", "nosuch"], None),
        "run mode": (["run", p, "--mode", "bad"], None),
        "run fail-on": (["run", p, "--fail-on", "sometimes"], None),
        "run timeout neg": (["run", p, "--timeout", "-1"], None),
        "run timeout text": (["run", p, "--timeout", "soon"], None),
        "run timeout zero": (["run", p, "--timeout", "0"], None),
        "run base-ref": (["run", p, "-r", "lint_tester", "--base-ref", "nosuchref"], None),
        "run base-ref snapshot": (["run", p, "-r", "lint_tester", "--snapshot", "--base-ref", "HEAD"], None),
        "run both isolations": (["run", p, "--worktree", "--snapshot"], None),
        "run sarif dir": (["run", p, "-r", "lint_tester", "--sarif", str(tmp_path / "no" / "x.sarif")], None),
        "run unknown flag": (["run", p, "--bogus"], None),
        "run python missing": (["run", p, "-r", "unit_tester", "--python", missing], None),
        # exec
        "exec missing": (["exec", missing, "--", "true"], None),
        "exec file": (["exec", f, "--", "true"], None),
        "exec no command": (["exec", p], None),
        "exec no command after --": (["exec", p, "--"], None),
        "exec base-ref": (["exec", "--base-ref", "nosuchref", p, "--", "true"], None),
        "exec base-ref after path": (["exec", p, "--base-ref", "nosuchref", "--", "true"], None),
        "exec flag after path": (["exec", p, "--bogus", "--", "true"], None),
        "exec isolations": (["exec", "--snapshot", p, "--worktree", "--", "true"], None),
        # roles
        "roles missing": (["roles", missing], None),
        "roles file": (["roles", f], None),
        # suggestions (no report yet)
        "suggestions none": (["suggestions", "list"], project),
        "suggestions -C missing": (["suggestions", "-C", missing, "list"], None),
        "suggestions show": (["suggestions", "-C", p, "show", "fix-nosuch"], None),
        "suggestions apply": (["suggestions", "-C", p, "apply", "fix-nosuch"], None),
        "suggestions no action": (["suggestions"], project),
        # status / revert / recover
        "status flag": (["status", "--bogus"], project),
        "revert malformed": (["revert", "not-a-session"], project),
        "revert traversal": (["revert", "../../etc"], project),
        "revert unknown": (["revert", sid], project),
        "recover malformed": (["recover", "../x"], project),
        "recover unknown": (["recover", sid], project),
        "recover none": (["recover"], project),
        # clean / artifacts
        "clean older-than": (["clean", "--older-than", "banana"], None),
        "clean older-than neg": (["clean", "--older-than=-3d"], None),
        "clean older-than unit": (["clean", "--older-than", "7y"], None),
        "artifacts older-than": (["artifacts", p, "--clean", "--older-than", "x"], None),
        "artifacts missing": (["artifacts", missing, "--clean", "--older-than", "1d"], None),
        "artifacts older-than alone": (["artifacts", p, "--older-than", "1d"], None),
        # guard
        "guard no action": (["guard"], project),
        "guard no command": (["guard", "check"], project),
        "guard empty command": (["guard", "check", "--"], project),
        # worktree
        "worktree new missing": (["worktree", "new", "-C", missing], None),
        "worktree new bad name": (["worktree", "new", "bad..name", "-C", p], None),
        "worktree open": (["worktree", "open", "nosuch", "-C", p], None),
        "worktree remove": (["worktree", "remove", "nosuch", "-C", p], None),
        "worktree promote": (["worktree", "promote", sid, "fix/x", "-C", p], None),
        "worktree llm-name": (["worktree", "new", "--llm-name", "-C", p], None),
        # top level
        "unknown command": (["frobnicate"], None),
    }
    expected = {
        "run missing": ("no such project folder", missing),
        "run file": ("need a git repository",),
        "run role": ("unknown role 'nosuch'", "lint_tester"),
        "run mode": ("--mode", "quick"),
        "run fail-on": ("--fail-on", "high"),
        "run timeout neg": ("--timeout", "more than 0"),
        "run timeout text": ("--timeout", "'soon'"),
        "run timeout zero": ("--timeout",),
        "run base-ref": ("--base-ref", "nosuchref"),
        "run base-ref snapshot": ("--base-ref", "worktree"),
        "run both isolations": ("--snapshot",),
        "run sarif dir": ("--sarif", "does not exist"),
        "exec missing": ("no such directory",),
        "exec file": ("not a directory",),
        "exec no command": ("needs a command",),
        "exec no command after --": ("needs a command",),
        "exec base-ref": ("--base-ref", "nosuchref"),
        "exec base-ref after path": ("--base-ref", "nosuchref"),
        "exec flag after path": ("--bogus",),
        "exec isolations": ("--worktree", "--snapshot"),
        "roles missing": ("not a folder",),
        "suggestions none": ("no QE reports",),
        "suggestions -C missing": ("not a folder",),
        "suggestions show": ("no QE reports",),
        "revert malformed": ("not a session id", "qe-YYYYMMDD"),
        "revert traversal": ("not a session id",),
        "revert unknown": ("no session", sid),
        "recover malformed": ("not a session id",),
        "recover unknown": ("no session", sid),
        "clean older-than": ("--older-than", "30m, 12h, 7d"),
        "clean older-than neg": ("--older-than",),
        "clean older-than unit": ("--older-than", "'7y'"),
        "artifacts older-than": ("--older-than",),
        "artifacts missing": ("no such directory",),
        "artifacts older-than alone": ("--clean",),
        "guard no command": ("git command",),
        "worktree new missing": ("no such directory",),
        "worktree new bad name": ("bad..name",),
        "worktree open": ("no worktree 'nosuch'",),
        "worktree remove": ("no worktree 'nosuch'",),
        "worktree promote": (sid,),
        "worktree llm-name": ("--llm-name", "--task"),
        "unknown command": ("frobnicate",),
    }
    results = run_in_process(cases)
    for name, proc in results.items():
        assert_usage(proc, *expected.get(name, ()), name=name)
    assert_nothing_left(project, before)
    assert not (tmp_path / "no").exists()
    # The console entry point itself, for one case of each kind of error:
    # argparse, the CLI layer, the engine and the git layer.
    real = run_many({name: cases[name] for name in (
        "run missing", "exec base-ref after path", "revert malformed", "clean older-than",
        "suggestions apply", "worktree open",
    )})
    for name, proc in real.items():
        assert_usage(proc, *expected.get(name, ()), name=name)
        assert proc.stderr.strip() == results[name].stderr.strip()
    assert_nothing_left(project, before)


def test_worktree_and_base_ref_on_a_plain_folder(tmp_path):
    plain = tmp_path / "plain"
    write_files(plain, {"a.py": "x = 1\n"})
    before = take_fingerprint(plain)
    p = str(plain)
    empty = tmp_path / "empty repo"  # git, but no commit yet
    write_files(empty, {"a.py": "x = 1\n"})
    run_git(empty, "init", "-q")
    empty_before = take_fingerprint(empty)
    results = run_in_process({
        "run empty --worktree": (["run", str(empty), "-r", "lint_tester", "--worktree"], None),
        "exec empty --worktree": (["exec", "--worktree", str(empty), "--", "true"], None),
        "run --worktree": (["run", p, "-r", "lint_tester", "--worktree"], None),
        "run --base-ref": (["run", p, "-r", "lint_tester", "--base-ref", "HEAD"], None),
        "exec --worktree": (["exec", "--worktree", p, "--", "true"], None),
        "exec --base-ref": (["exec", p, "--base-ref", "HEAD", "--", "true"], None),
        "worktree new": (["worktree", "new", "-C", p], None),
        "worktree list": (["worktree", "list", "-C", p], None),
    })
    for name in ("run --worktree", "exec --worktree"):
        assert_usage(results[name], "not a git repository", "--snapshot", name=name)
    for name in ("run --base-ref", "exec --base-ref"):
        assert_usage(results[name], "--base-ref", "git repository", name=name)
    for name in ("run empty --worktree", "exec empty --worktree"):
        assert_usage(results[name], "no commit yet", "--snapshot", name=name)
    for name in ("worktree new", "worktree list"):  # the not-a-repo line is a fixed contract
        line = one_line(results[name], name)
        assert results[name].returncode == 2 and "Git repository" in line
    assert_nothing_left(plain, before)
    assert_nothing_left(empty, empty_before)


def test_exec_of_a_missing_program_exits_127_and_removes_the_sandbox(project):
    before = take_fingerprint(project)
    proc = superqe("exec", str(project), "--", "/no/such/program", "--flag")
    assert proc.returncode == 127
    assert "Traceback" not in proc.stderr
    assert "superqe: cannot run /no/such/program" in proc.stderr
    assert "Verified" in proc.stderr
    assert compare(before, take_fingerprint(project)) == []
    assert sessions_left() == []
    assert not (project / ".git" / "worktrees").exists() or not any((project / ".git/worktrees").iterdir())


BAD_CONFIGS = {
    "invalid yaml": (b"workspace: [\n", ("invalid YAML", "line")),
    "unknown key": (b"workspace:\n  isolaton: worktree\n", ("workspace.isolaton", "allowed:", "isolation")),
    "top-level unknown": (b"bogus: 1\n", ("bogus", "allowed:", "workspace")),
    "not utf-8": (b"mode: \xff\xfe quick\n", ("not valid UTF-8",)),
    "wrong type": (b"roles:\n  unit_test_command: 5\n", ("roles.unit_test_command",)),
    "out of range": (b"qe:\n  confidence_threshold: 3\n", ("qe.confidence_threshold",)),
    "bad choice": (b"mode: fast\n", ("mode", "quick")),
    "a list": (b"- a\n- b\n", ("mapping",)),
}


def test_bad_project_config_is_one_line_naming_the_file_and_key(make_repo):
    repos = {}
    cases = {}
    for i, (label, (raw, _)) in enumerate(BAD_CONFIGS.items()):
        repo = make_repo({"a.py": "x = 1\n"}, name=f"cfg{i}")
        (repo / "superqode.yaml").write_bytes(raw)  # untracked: the user's own edit
        repos[label] = (repo, take_fingerprint(repo))
        cases[f"{label}|run"] = (["run", str(repo), "-r", "lint_tester"], None)
        cases[f"{label}|exec"] = (["exec", str(repo), "--", "true"], None)
        if label in ("unknown key", "not utf-8"):
            cases[f"{label}|roles"] = (["roles", str(repo)], None)
            cases[f"{label}|guard"] = (["guard", "check", "--", "status"], repo)
    results = run_in_process(cases)
    for label in ("unknown key", "not utf-8"):  # and through the console entry point
        results[f"{label}|real"] = superqe("run", str(repos[label][0]), "-r", "lint_tester")
    for name, proc in results.items():
        label = name.split("|")[0]
        assert_usage(proc, "superqode.yaml", *BAD_CONFIGS[label][1], name=name)
    for repo, before in repos.values():
        assert_nothing_left(repo, before)
        assert (repo / "superqode.yaml").exists()  # never "repaired" behind the user's back


def test_bad_user_config_is_reported_once(project):
    home = Path(os.environ["SUPERQODE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text("qe:\n  fail_on: sometimes\n")
    before = take_fingerprint(project)
    results = run_in_process({
        "exec": (["exec", str(project), "--", "true"], None),
        "roles": (["roles", str(project)], None),
    })
    results["run"] = superqe("run", str(project), "-r", "lint_tester")
    for name, proc in results.items():
        assert_usage(proc, "config.yaml", "qe.fail_on", "'sometimes'", name=name)
    assert_nothing_left(project, before)


def test_superqode_path_that_is_not_a_writable_folder(project):
    (project / ".superqode").write_text("my notes\n")  # the user's file, not ours
    before = take_fingerprint(project)
    results = run_in_process({
        "run": (["run", str(project), "-r", "lint_tester"], None),
        "exec": (["exec", str(project), "--", "true"], None),
    })
    for name, proc in results.items():
        assert_usage(proc, ".superqode", "not a folder", name=name)
    assert (project / ".superqode").read_text() == "my notes\n"
    assert compare(before, take_fingerprint(project)) == []
    assert sessions_left() == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_read_only_project(project):
    before = take_fingerprint(project)
    project.chmod(0o555)
    try:
        proc = superqe("run", str(project), "-r", "lint_tester")
    finally:
        project.chmod(0o755)
    assert_usage(proc, "read-only", ".superqode")
    assert_nothing_left(project, before)


def test_read_only_project_simulated(project, monkeypatch):
    """As root nothing is read-only, so the permission answer is simulated."""
    real = os.access

    def access(path, mode, *a, **kw):
        if Path(path) == project and mode & os.W_OK:
            return False
        return real(path, mode, *a, **kw)

    monkeypatch.setattr(os, "access", access)
    before = take_fingerprint(project)
    results = run_in_process({
        "run": (["run", str(project), "-r", "lint_tester"], None),
        "exec": (["exec", str(project), "--", "true"], None),
    })
    for name, proc in results.items():
        assert_usage(proc, "read-only", ".superqode", name=name)
    assert_nothing_left(project, before)


def test_superqode_home_that_is_a_file(project, tmp_path, monkeypatch):
    bad_home = tmp_path / "home-file"
    bad_home.write_text("not a folder\n")
    monkeypatch.setenv("SUPERQODE_HOME", str(bad_home))
    before = take_fingerprint(project)
    results = run_in_process({
        "exec": (["exec", str(project), "--", "true"], None),
    })
    monkeypatch.setenv("SUPERQODE_HOME", str(bad_home / "sub"))
    results["exec below"] = cli(["exec", str(project), "--", "true"])
    results["run"] = superqe("run", str(project), "-r", "lint_tester")
    for name, proc in results.items():
        assert_usage(proc, "SUPERQODE_HOME", "is not a folder", name=name)
    assert bad_home.read_text() == "not a folder\n"
    assert compare(before, take_fingerprint(project)) == []
    assert not (project / ".git" / "worktrees").exists()


def _fix_ids(project: Path) -> list[dict]:
    proc = superqe("suggestions", "-C", str(project), "list", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_suggestion_whose_code_moved_on_is_refused_and_the_file_untouched(make_repo):
    repo = make_repo({"b.py": "import os, sys\nimport subprocess\nx = 1\n"})
    proc = superqe("run", str(repo), "-r", "lint_tester", "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr
    fixes = _fix_ids(repo)
    assert fixes, "lint_tester suggested no fix"
    fix = fixes[0]["id"]
    moved = b"import sys, os\nimport subprocess\nx = 2\n"
    (repo / "b.py").write_bytes(moved)
    before = take_fingerprint(repo)
    results = run_in_process({
        "dry-run": (["suggestions", "-C", str(repo), "apply", fix, "--dry-run"], None),
        "unknown": (["suggestions", "-C", str(repo), "apply", "fix-nosuch"], None),
        "show unknown": (["suggestions", "-C", str(repo), "show", "fix-nosuch"], None),
    })
    results["apply"] = superqe("suggestions", "-C", str(repo), "apply", fix)
    for name in ("apply", "dry-run"):
        line = one_line(results[name], name)
        assert results[name].returncode == 1, line  # refused: the fix, not the command line
        assert line.startswith("superqe: not applied") and fix in line and "superqe run" in line
    for name in ("unknown", "show unknown"):
        assert_usage(results[name], "no suggestion 'fix-nosuch'", name=name)
    assert (repo / "b.py").read_bytes() == moved
    assert compare(before, take_fingerprint(repo)) == []
    assert sessions_left() == []


def test_suggestion_that_reaches_outside_the_project_is_refused(make_repo, tmp_path):
    """A report edited (or corrupted) so its fix points at ../ or .git/ is not applied."""
    repo = make_repo({"b.py": "import os\nx = 1\n"})
    outside = tmp_path / "outside.py"
    outside.write_text("import os\nx = 1\n")
    proc = superqe("run", str(repo), "-r", "lint_tester", "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr
    report_path = next((repo / ".superqode/qe-artifacts/qr").glob("qr-*.json"))
    report = json.loads(report_path.read_text())
    diff = report["patches"][0]["diff"]
    assert "a/b.py" in diff
    hooks = repo / ".git" / "hooks" / "b.py"
    hooks.write_text("import os\nx = 1\n")
    before = take_fingerprint(repo)
    for target in ("../outside.py", ".git/hooks/b.py"):
        report["patches"][0]["diff"] = diff.replace("a/b.py", f"a/{target}").replace("b/b.py", f"b/{target}")
        report_path.write_text(json.dumps(report))
        for extra in ([], ["--dry-run"]):
            res = cli(["suggestions", "-C", str(repo), "apply", report["patches"][0]["id"], *extra])
            line = one_line(res, target)
            assert res.returncode in (1, 2) and line.startswith("superqe: not applied"), line
    assert outside.read_text() == "import os\nx = 1\n"
    assert hooks.read_text() == "import os\nx = 1\n"
    assert compare(before, take_fingerprint(repo)) == []


def test_undecodable_and_binary_python_files_do_not_break_roles(make_repo, tmp_path):
    repo = make_repo({
        "good.py": "import subprocess\nsubprocess.call('ls', shell=True)\n",
        "latin.py": b'name = "caf\xe9"\n',
        "blob.py": b"\x00\x01\x02\xff\x89PNG\x00\x00",
        "declared.py": b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n",
        "bad\udcff name.py": "import sys\n",  # a file name that is not UTF-8
    }, name="mixed")
    before = take_fingerprint(repo)
    proc = superqe("run", str(repo), "-r", "security_tester", "-r", "type_tester",
                   "-r", "lint_tester", "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    report_path = next((repo / ".superqode/qe-artifacts/qr").glob("qr-*.json"))
    report = json.loads(report_path.read_text())
    roles = {r["role"]: r for r in report["roles"]}
    assert roles["security_tester"]["status"] == "ok"
    assert "blob.py" in roles["security_tester"]["reason"]
    # bandit still scanned the readable file
    assert any(f["file"] == "good.py" and f["role"] == "security_tester" for f in report["findings"])
    assert roles["type_tester"]["status"] == "ok"
    reason = roles["type_tester"]["reason"]
    assert "blob.py" in reason and "latin.py" in reason and "declared.py" not in reason
    assert " name.py" in reason  # mypy stopped with an internal error on it
    assert roles["lint_tester"]["status"] == "ok"
    # ruff cannot read them: undecodable files are reported, a declared
    # Latin-1 file (valid Python) is named in the reason instead
    lint_files = {f["file"] for f in report["findings"] if f["role"] == "lint_tester"}
    assert {"blob.py", "latin.py"} <= lint_files and "declared.py" not in lint_files
    assert "declared.py" in roles["lint_tester"]["reason"]
    assert compare(before, take_fingerprint(repo)) == []
    assert sessions_left() == []


def test_unit_tester_whose_program_is_missing_is_skipped_with_the_reason(make_repo):
    repo = make_repo({
        "a.py": "x = 1\n",
        "test_a.py": "def test_a():\n    assert True\n",
        "superqode.yaml": "roles:\n  unit_test_command: [/no/such/prog, -q]\n",
    })
    before = take_fingerprint(repo)
    proc = superqe("run", str(repo), "-r", "unit_tester", "--jsonl")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    done = [json.loads(line) for line in proc.stdout.splitlines() if '"role_complete"' in line]
    assert len(done) == 1, proc.stdout
    data = done[0].get("data", done[0])
    assert data["status"] == "skipped"
    assert "unit_test_command" in data["reason"] and "/no/such/prog" in data["reason"]
    assert compare(before, take_fingerprint(repo)) == []
    assert sessions_left() == []


def test_roles_whose_tool_is_missing_say_so(make_repo, monkeypatch):
    """In-process: a missing analyzer is a reason on the role, never a crash."""
    from superqode_ls.qe.pipeline import QERequest, QESession
    from superqode_ls.qe.roles import lint, security, types

    for module in (security, lint, types):
        monkeypatch.setattr(module, "tool_path", lambda name: None)
    repo = make_repo({"a.py": "key = 'AKIA" + "Q3EGRIEZQ7XKJW4P'\n"})
    before = take_fingerprint(repo)
    request = QERequest(project=repo, roles=["security_tester", "lint_tester", "type_tester"])
    report = asyncio.run(QESession(request).run())
    roles = {r.role: r for r in report.roles}
    # bandit missing: the built-in secrets scan still runs and finds the password
    assert roles["security_tester"].status == "ok"
    assert "bandit is not installed" in (roles["security_tester"].reason or "")
    assert any(f.role == "security_tester" for f in report.findings)
    assert roles["lint_tester"].status == "skipped", roles["lint_tester"]
    assert "ruff is not installed" in (roles["lint_tester"].reason or "")
    # mypy comes with the [deep] extra: the line names it.
    assert roles["type_tester"].status == "skipped", roles["type_tester"]
    assert roles["type_tester"].reason == "needs mypy: pip install 'superqode-ls[deep]'"
    assert compare(before, take_fingerprint(repo)) == []
    assert sessions_left() == []


def test_files_outside_the_project_are_refused_before_anything_is_made(make_repo, tmp_path):
    from superqode_ls.config import ConfigError
    from superqode_ls.qe.pipeline import QERequest, QESession

    repo = make_repo()
    (tmp_path / "secret.py").write_text("x = 1\n")
    before = take_fingerprint(repo)
    for rel in ("../secret.py", str(tmp_path / "secret.py"), "a/../../secret.py"):
        session = QESession(QERequest(project=repo, roles=["lint_tester"], files=[rel]))
        with pytest.raises(ConfigError, match="outside the project"):
            asyncio.run(session.run())
    assert_nothing_left(repo, before)


def test_project_path_with_spaces_and_unicode(tmp_path):
    proj = tmp_path / "my prøject ü 名前"
    proj.mkdir()
    run_git(proj, "init", "-q")
    write_files(proj, {"módulo ü.py": "import os\n", "sub dir/b.py": "x = 1\n"})
    run_git(proj, "add", "-A")
    run_git(proj, "commit", "-q", "-m", "i")
    before = take_fingerprint(proj)
    proc = superqe("run", str(proj), "-r", "lint_tester", "--fail-on", "never", "--show-noise")
    assert proc.returncode == 0, proc.stderr
    assert "módulo ü.py" in proc.stdout  # F401 on the unicode file (an advisory: --show-noise)
    assert "Verified" in proc.stdout + proc.stderr
    assert list((proj / ".superqode/qe-artifacts/qr").glob("qr-*.json"))
    assert_nothing_left(proj, before, superqode_dir_allowed=True)


def test_snapshot_of_a_folder_with_a_fifo_and_symlink_loops(tmp_path):
    plain = tmp_path / "odd files"
    write_files(plain, {"a.py": "import os\n"})
    os.mkfifo(plain / "pipe.py")  # copying it would block or fail
    (plain / "loop1").symlink_to("loop2")
    (plain / "loop2").symlink_to("loop1")
    (plain / "dangling.py").symlink_to("nowhere.py")
    before = take_fingerprint(plain)
    # (--show-noise: the unused import is an advisory of the default view)
    proc = superqe("run", str(plain), "-r", "lint_tester", "--fail-on", "never", "--show-noise")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "a.py" in proc.stdout
    assert compare(before, take_fingerprint(plain)) == []
    assert (plain / "pipe.py").is_fifo()
    assert sessions_left() == []


def test_sandbox_that_cannot_be_made_is_one_line_without_a_session_banner(tmp_path):
    plain = tmp_path / "plain"
    write_files(plain, {"a.py": "x = 1\n", ".superqodeignore": b"\xff\xfe\n"})
    before = take_fingerprint(plain)
    proc = superqe("run", str(plain), "-r", "lint_tester")
    assert_usage(proc, ".superqodeignore", "UTF-8")
    # the sandbox layer makes .superqode/ before it reads the ignore file
    assert_nothing_left(plain, before, superqode_dir_allowed=True)


def test_jsonl_reader_that_goes_away_does_not_break_the_session(make_repo):
    repo = make_repo({"a.py": "import os\n"})
    before = take_fingerprint(repo)
    proc = subprocess.Popen([*SUPERQE, "run", str(repo), "-r", "lint_tester", "--jsonl"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read().decode()
    proc.stderr.close()
    code = proc.wait(timeout=120)
    assert b'"session_start"' in first
    assert "Traceback" not in err and "Broken pipe" not in err, err
    assert code in (0, 1), err
    assert compare(before, take_fingerprint(repo)) == []
    assert sessions_left() == []
    assert list((repo / ".superqode/qe-artifacts/qr").glob("qr-*.json"))  # the run finished


def test_exec_reads_only_its_own_options_before_the_double_dash(project):
    before = take_fingerprint(project)
    # no PATH: the command's first word is not taken for one
    res = cli(["exec", "--", "sh", "-c", "exit 3"], cwd=project)
    assert res.returncode == 3, res.stderr
    # options after PATH are superqe's; after -- they are the command's
    res = cli(["exec", str(project), "--snapshot", "--", "sh", "-c", "echo --worktree -- >&2"])
    assert res.returncode == 0, res.stderr
    assert "sandbox: " in res.stderr and "/qe/qe-" in res.stderr
    assert compare(before, take_fingerprint(project)) == []
    assert sessions_left() == []
