"""The git guard enforced for real processes: dangerous git command lines run
through ``bash -c`` inside sandboxes (sealed sessions and plain worktrees),
then the user's repository is compared with how it was before."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.config import GitGuardConfig
from superqode_ls.workspace import landlock
from superqode_ls.workspace.fingerprint import compare, take_fingerprint
from superqode_ls.workspace.guard_env import GuardEvents, install_guard, target_paths
from superqode_ls.workspace.proc import supervise

from .conftest import run_git
from .test_guard_corpus import DANGEROUS

REAL_GIT = shutil.which("git")

# Lines of the corpus not run for real: they loop, background, escalate, or need
# tools that may be missing; their static verdict is covered by the corpus test.
NOT_RUN = {
    "watch git commit -m x",
    "nohup git push &",
    "sudo git clean -fdx",
    "sudo -u root git reset --hard",
    "git rebase -i HEAD~3",
    "git add -p src/x.py",
    "git config -e",
}

# Bypass attempts aimed at the user's repository by absolute path ({U} = the
# user's checkout, {G} = the real git by absolute path). They must be blocked or
# leave the user's repository as it was: through the shim (policy), through the
# hooks that the per-process config points at (ref updates, commits, pushes),
# or because the sandbox's git dir is sealed (private refs, config and index).
BYPASSES = [
    "{G} commit --allow-empty -m bypass",
    "{G} -C {U} branch evil-1",
    "{G} --git-dir={U}/.git branch evil-2",
    "env -u PATH {G} -C {U} tag evil-3",
    "env -u GIT_CONFIG_COUNT {G} commit --allow-empty -m x",
    "env -u GIT_CONFIG_COUNT git commit --allow-empty -m x",
    "GIT_DIR={U}/.git {G} update-ref refs/heads/evil-4 HEAD",
    "GIT_DIR={U}/.git git update-ref refs/heads/evil-5 HEAD",
    "git -C {U} commit --allow-empty -m x",
    "git -C {U} config user.name evil",
    "git -C {U} stash",
    "git -C {U} checkout -b evil-6",
    "git -C {U} reset --hard HEAD",
    "git -C {U} clean -fdx",
    "git --git-dir={U}/.git --work-tree={U} add -A",
    "cd {U} && git add -A && git commit -m x",
    "cd {U} && {G} commit -am x",
    "{G} push {U} HEAD:refs/heads/evil-7",
    "git push {U} HEAD:refs/heads/evil-8",
    "git -c alias.ci=commit ci --allow-empty -m x",
    "bash -c 'cd {U}; git commit -am x'",
    "sh -c '{G} -C {U} branch evil-9'",
    "echo {U} | xargs -I% git -C % branch evil-10",
    "find {U} -maxdepth 1 -name tracked.txt -exec git -C {U} rm {{}} \\;",
    "x=$(git -C {U} tag evil-11)",
    "PATH=/usr/bin:/bin git -C {U} branch evil-12",
    "/usr/bin/env git -C {U} branch evil-13",
    # inside the sandbox, by absolute path: the sealed git dir takes the writes
    "{G} add -A",
    "{G} config user.name evil",
    "{G} -c core.hooksPath=/dev/null commit --allow-empty -m x",
    "{G} -c core.hooksPath=/dev/null branch sealed-1",
    "env -i {G} -c core.hooksPath=/dev/null tag sealed-2",
    "{G} checkout -- tracked.txt",
    "{G} stash",
    "{G} worktree prune",
]

# The guard's gaps: a process that calls git by absolute path (skipping the
# shim) on the user's repository named by absolute path gets past every hook
# (config, index, working files, worktree registrations; with a scrubbed
# environment or a hooksPath override, refs too). No userspace layer can stop
# a process running as the user; the kernel barrier (Landlock) around every
# session process does: these writes fail with EACCES.
KNOWN_GAPS = [
    "env -i {G} -C {U} branch gap-1",
    "{G} -c core.hooksPath=/dev/null -C {U} branch gap-2",
    "{G} -C {U} config core.hooksPath /tmp",
    "cd {U} && {G} add -A",
    "cd {U} && {G} checkout -- tracked.txt",
    "{G} -C {U} remote add evil /tmp/x",
    # the stash ref update is refused, but git has refreshed the index by then
    "cd {U} && {G} stash",
]


def _git_state(repo: Path) -> dict[str, object]:
    """What the user would notice: refs, HEAD, config, hooks, index, stash, files."""
    gd = repo / ".git"
    files = {}
    for p in sorted(repo.rglob("*")):
        parts = p.relative_to(repo).parts
        if parts[0] in (".git", ".superqode") or not p.is_file():
            continue
        files[str(p.relative_to(repo))] = p.read_bytes()
    return {
        "refs": run_git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "HEAD": (gd / "HEAD").read_bytes(),
        "head_commit": run_git(repo, "rev-parse", "HEAD"),
        "config": (gd / "config").read_bytes(),
        "hooks": sorted(os.listdir(gd / "hooks")),
        "index": (gd / "index").read_bytes(),
        "stash": run_git(repo, "stash", "list"),
        "worktrees": sorted(
            w for w in os.listdir(gd / "worktrees") if not w.startswith(("qe-", "sq-"))
        )
        if (gd / "worktrees").is_dir()
        else [],
        "files": files,
    }


@pytest.fixture
def user_repo(make_repo):
    """A repository with everything a user has: branches, a tag, a stash,
    staged, unstaged and untracked changes."""
    repo = make_repo({"tracked.txt": "one\n", "src/app.py": "print('hi')\n"}, name="user repo")
    run_git(repo, "branch", "feature")
    run_git(repo, "tag", "v1")
    (repo / "tracked.txt").write_text("stashed\n")
    run_git(repo, "stash")
    (repo / "src/app.py").write_text("print('staged')\n")
    run_git(repo, "add", "src/app.py")
    (repo / "tracked.txt").write_text("unstaged\n")
    (repo / "untracked.txt").write_text("new\n")
    return repo


def _run_lines(
    lines: list[str], cwd: Path, env: dict[str, str]
) -> list[subprocess.CompletedProcess]:
    out = []
    for line in lines:
        out.append(
            subprocess.run(
                ["bash", "-c", line],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                check=False,
                capture_output=True,
                text=True,
                timeout=60,
            )
        )
    return out


def _fill(line: str, user: Path) -> str:
    return (
        line.replace("/home/user/project", str(user))
        .replace("{U}", f"'{user}'")
        .replace("{G}", REAL_GIT)
        .replace("{{}}", "{}")
    )


@pytest.fixture
def sealed_session(user_repo):
    from superqode_ls.workspace.session import IsolatedSession

    before = (take_fingerprint(user_repo), _git_state(user_repo))
    s = IsolatedSession.create_sync(user_repo, isolation="worktree")
    try:
        yield s, before
    finally:
        v = s.close_sync()
    assert v.verified, v.line
    assert _git_state(user_repo) == before[1]


@pytest.mark.slow
def test_dangerous_corpus_in_a_sealed_session_leaves_the_user_repo_unchanged(
    user_repo, sealed_session
):
    s, (before_fp, before) = sealed_session
    # Reading works in the sealed sandbox through the guard, and sees the user's state.
    reads = [
        "git status --short",
        "git diff --cached --stat",
        "git log --oneline",
        "git stash list",
        "git branch --list",
        "git tag -l",
        "git config --get user.name",
    ]
    out = _run_lines(reads, s.sandbox, s.env())
    assert [r.returncode for r in out] == [0] * len(reads), [r.stderr for r in out]
    assert "src/app.py" in out[1].stdout and "v1" in out[5].stdout
    lines = [_fill(line, user_repo) for line in DANGEROUS if line not in NOT_RUN]
    results = _run_lines(lines, s.sandbox, s.env())
    assert _git_state(user_repo) == before
    assert compare(before_fp, take_fingerprint(user_repo)) == []
    records = s.guard_events()
    assert len(records) >= len(lines) * 0.8
    assert {r["source"] for r in records} >= {"shim"}
    commit = results[0]  # a plain blocked commit fails with the reason on stderr
    assert commit.returncode == 1
    assert "superqode guard: blocked: Commits would permanently alter" in commit.stderr


@pytest.mark.slow
def test_bypasses_in_a_sealed_session_leave_the_user_repo_unchanged(user_repo, sealed_session):
    s, (before_fp, before) = sealed_session
    env = s.env()
    changed = []
    for line in BYPASSES:
        _run_lines([_fill(line, user_repo)], s.sandbox, env)
        if _git_state(user_repo) != before:
            changed.append(line)
            break
    assert not changed, f"changed the user's repository: {changed}"
    assert compare(before_fp, take_fingerprint(user_repo)) == []
    sources = {r["source"] for r in s.guard_events()}
    assert {"shim", "hook:reference-transaction"} <= sources


@pytest.fixture
def plain_sandbox(user_repo, tmp_path):
    """An unsealed `git worktree add --detach` with only the guard on: the
    guard's own layers (shim, hooks, config env) without the sealed git dir."""
    wt = tmp_path / "qe-plain sandbox"
    run_git(user_repo, "worktree", "add", "--detach", "-q", str(wt))
    g = install_guard(tmp_path / "private dir with spaces", GitGuardConfig())
    yield wt, g
    run_git(user_repo, "worktree", "remove", "--force", str(wt), check=False)


def test_guard_layers_hold_in_an_unsealed_worktree(user_repo, plain_sandbox):
    wt, g = plain_sandbox
    before = _git_state(user_repo)
    env = g.env()
    lines = [
        "git commit --allow-empty -m x",
        "git stash",
        "git branch evil",
        "git -c core.hooksPath=/dev/null commit --allow-empty -m x",
        "{G} commit --allow-empty -m x",
        "{G} branch evil-a",
        "{G} tag evil-b",
        "env -u PATH {G} update-ref refs/heads/evil-c HEAD",
        "echo change >> tracked.txt && {G} stash",
        "{G} -C {U} branch evil-d",
        "{G} push {U} HEAD:refs/heads/evil-e",
        "env -u GIT_CONFIG_COUNT git branch evil-f",
    ]
    results = _run_lines([_fill(x, user_repo) for x in lines], wt, env)
    assert all(r.returncode != 0 for r in results), [
        (x, r.returncode, r.stderr) for x, r in zip(lines, results) if r.returncode == 0
    ]
    assert _git_state(user_repo) == before
    records = g.events.poll()
    assert {"shim", "hook:reference-transaction", "hook:pre-commit"} <= {
        r["source"] for r in records
    }


@pytest.mark.parametrize("gap", KNOWN_GAPS)
@pytest.mark.skipif(landlock.abi() is None, reason="this kernel has no Landlock write barrier")
def test_known_gaps_are_held_by_the_kernel_barrier(user_repo, sealed_session, gap):
    from superqode_ls.workspace.guard import command_is_blocked

    s, (_, before) = sealed_session
    line = _fill(gap, user_repo)
    assert command_is_blocked(line) is not None  # the static check does catch it
    env = s.env()
    res = subprocess.run(supervise(["bash", "-c", line], env), cwd=s.sandbox, env=env,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert res.returncode != 0
    assert _git_state(user_repo) == before


def test_safe_commands_work_through_the_shim(user_repo, plain_sandbox):
    wt, g = plain_sandbox
    env = g.env()
    (wt / "sub").mkdir()
    lines = [
        "git status --short",
        "git -C sub log --oneline -1",
        "git --no-pager diff HEAD",
        "git branch --list",
        "git tag -l",
        "git stash list",
        "git config --get user.name",
        "git remote -v",
        "git worktree list",
        "git clean -n",
        "git ls-files | xargs -n1 git blame -s > /dev/null",
    ]
    results = _run_lines(lines, wt, env)
    bad = [(x, r.returncode, r.stderr) for x, r in zip(lines, results) if r.returncode != 0]
    assert not bad
    assert "v1" in results[4].stdout and "stash@{0}" in results[5].stdout
    assert results[6].stdout.strip() == "Test User"
    assert g.events.poll() == []


def test_user_aliases_are_resolved(user_repo, plain_sandbox):
    wt, g = plain_sandbox
    env = g.env()
    gitconfig = Path(os.environ["GIT_CONFIG_GLOBAL"])
    with gitconfig.open("a") as f:
        f.write("[alias]\n\tst = status --short\n\tci = commit\n\tsh = !git commit\n")
    ok, ci, sh = _run_lines(["git st", "git ci --allow-empty -m x", "git sh"], wt, env)
    assert ok.returncode == 0
    assert ci.returncode == 1 and "Commits would permanently alter" in ci.stderr
    assert sh.returncode == 1 and "runs a shell command" in sh.stderr


def test_config_allow_lets_a_command_through_shim_and_hooks(user_repo, tmp_path):
    wt = tmp_path / "qe-allow"
    run_git(user_repo, "worktree", "add", "--detach", "-q", str(wt))
    try:
        g = install_guard(tmp_path / "priv", GitGuardConfig(allow=["git commit"]))
        env = g.env()
        through_shim, direct = _run_lines(
            ["git commit --allow-empty -qm allowed", f"{REAL_GIT} commit --allow-empty -qm direct"],
            wt,
            env,
        )
        assert through_shim.returncode == 0, through_shim.stderr
        assert direct.returncode != 0  # the hooks still refuse what skips the shim
        assert run_git(wt, "log", "-1", "--format=%s").strip() == "allowed"
    finally:
        run_git(user_repo, "worktree", "remove", "--force", str(wt), check=False)


def test_disabled_guard_changes_nothing(tmp_path):
    g = install_guard(tmp_path / "priv", GitGuardConfig(enabled=False))
    base = {"PATH": "/usr/bin:/bin", "GIT_DIR": "/x", "HOME": "/h"}
    env = g.env(base)
    assert env == {"PATH": "/usr/bin:/bin", "HOME": "/h"}


def test_env_keeps_existing_config_entries_and_puts_the_guards_last(tmp_path):
    g = install_guard(tmp_path / "priv")
    base = {
        "PATH": "/usr/bin",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "color.ui",
        "GIT_CONFIG_VALUE_0": "never",
        "SUPERQODE_INTERNAL_GIT": "1",
    }
    env = g.env(base)
    assert env["PATH"].split(os.pathsep)[0] == str(g.bin_dir)
    assert env["GIT_CONFIG_KEY_0"] == "color.ui"
    n = int(env["GIT_CONFIG_COUNT"])
    assert n == 1 + len(g.config_entries)
    keys = [env[f"GIT_CONFIG_KEY_{i}"] for i in range(n)]
    assert keys[1] == "core.hooksPath" and env["GIT_CONFIG_VALUE_1"] == str(g.hooks_dir)
    assert "SUPERQODE_INTERNAL_GIT" not in env
    # Applying twice does not stack entries.
    assert g.env(env)["GIT_CONFIG_COUNT"] == env["GIT_CONFIG_COUNT"]


def test_internal_token_passes_shim_and_hooks(user_repo, plain_sandbox):
    wt, g = plain_sandbox
    env = {**g.env(), **g.internal_env()}
    (r,) = _run_lines(["git commit --allow-empty -qm internal"], wt, env)
    assert r.returncode == 0, r.stderr
    fake = {**g.env(), "SUPERQODE_INTERNAL_GIT": "1"}
    (r,) = _run_lines(["git commit --allow-empty -qm fake"], wt, fake)
    assert r.returncode == 1


def test_protect_scope_lets_other_repositories_work(user_repo, tmp_path):
    """With protect=[...], a project's tests may create and commit in their own
    temporary repositories; the protected ones stay guarded, and the temporary
    repository's own hooks still run."""
    wt = tmp_path / "qe-scope"
    run_git(user_repo, "worktree", "add", "--detach", "-q", str(wt))
    try:
        g = install_guard(tmp_path / "priv", protect=[user_repo / ".git"])
        env = g.env()
        scratch = tmp_path / "scratch"
        script = (
            f"git init -q '{scratch}' && cd '{scratch}' && "
            "printf '#!/bin/sh\\ntouch hook-ran\\n' > .git/hooks/pre-commit && "
            "printf '#!/bin/sh\\ntouch post-ran\\n' > .git/hooks/post-commit && "
            "chmod +x .git/hooks/pre-commit .git/hooks/post-commit && echo x > f && git add f && "
            "git commit -qm one && git branch side && git log --oneline | wc -l"
        )
        (r, inside, outside_user) = _run_lines(
            [script, "git commit --allow-empty -m x", f"git -C '{user_repo}' branch evil"],
            wt,
            env,
        )
        assert r.returncode == 0, r.stderr
        assert (scratch / "hook-ran").exists() and (scratch / "post-ran").exists()
        assert inside.returncode == 1
        assert outside_user.returncode == 1
        assert "evil" not in run_git(user_repo, "branch", "--list")
    finally:
        run_git(user_repo, "worktree", "remove", "--force", str(wt), check=False)


def test_target_paths(user_repo, tmp_path):
    gd = str((user_repo / ".git").resolve())
    assert target_paths(["status"], {}, str(user_repo / "src")) == [gd, gd]
    assert target_paths(["-C", str(user_repo), "log"], {}, "/") == [gd, gd]
    assert target_paths(["--git-dir", gd, "log"], {}, "/") == [gd, gd]
    assert target_paths(["log"], {"GIT_DIR": gd}, "/") == [gd, gd]
    assert target_paths(["status"], {}, str(tmp_path / "nowhere")) == []
    # `git init new` inside a repository is judged by the repository around it.
    assert target_paths(["init", "new/dir"], {}, str(user_repo)) == [gd, gd]


def test_events_poll_returns_only_new_complete_records(tmp_path):
    f = tmp_path / "events.jsonl"
    f.write_text('{"reason": "a", "type": "git.blocked"}\n{"reason": "b"}\n{"reason": "c"')
    ev = GuardEvents(f)
    assert ev.poll() == [{"reason": "a"}, {"reason": "b"}]
    assert ev.poll() == []
    with f.open("a") as fh:
        fh.write('}\nnot json\n{"reason": "d"}\n')
    assert [r["reason"] for r in ev.poll()] == ["c", "d"]
    assert GuardEvents(tmp_path / "missing").poll() == []


def test_shim_is_found_first_and_real_git_is_not_the_shim(tmp_path, monkeypatch):
    g = install_guard(tmp_path / "priv")
    env = g.env()
    out = subprocess.run(
        ["sh", "-c", "command -v git"], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(g.bin_dir / "git")
    # A nested session (the first shim already on PATH) still finds the real git.
    monkeypatch.setenv("PATH", env["PATH"])
    g2 = install_guard(tmp_path / "priv2")
    assert g2.real_git == g.real_git == os.path.realpath(REAL_GIT)


def test_shell_fast_path_never_allows_what_the_check_blocks(tmp_path):
    """The shim's sh fast path execs git without the Python check: every argv
    it takes must be one the check allows, and it must take the common reads."""
    import shlex

    from superqode_ls.workspace.guard import check_git_argv

    from .test_guard_corpus import SAFE

    g = install_guard(tmp_path / "priv", GitGuardConfig(block=["git show"]))
    shim = (g.bin_dir / "git").read_text()
    fast_fn = shim[shim.index("fast() {") : shim.index("\n}\n") + 3]
    argvs = []
    for line in (
        DANGEROUS
        + SAFE
        + [
            "git config --get a --add b",
            "git config --list --global",
            "git branch -a -D x",
            "git tag -l -d v1",
            "git stash list",
            "git remote -v show",
            "git -C",
            "git -C x",
            "git show HEAD",
        ]
    ):
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        if words and words[0] == "git" and not any(c in line for c in "|;&$`<>(){}"):
            argvs.append(words[1:])
    script = fast_fn + "".join(
        f"if fast {shlex.join(a)}; then echo 1; else echo 0; fi\n" if a else "fast; echo $?\n"
        for a in argvs
    )
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
    taken = [line == "1" for line in out.stdout.split()]
    assert len(taken) == len(argvs)
    cfg = GitGuardConfig(block=["git show"])
    wrong = [a for a, t in zip(argvs, taken) if t and not check_git_argv(a, cfg).allowed]
    assert not wrong
    fast = {" ".join(a) for a, t in zip(argvs, taken) if t}
    assert {"status", "diff", "branch -l", "tag -l", "config --get user.name", "stash list"} <= fast
    assert "show HEAD" not in fast  # blocked by the project's block list: never fast


_SHIM_IMPORTS = """
import sys
sys.path.insert(0, sys.argv[1])
before = set(sys.modules)
from superqode_ls.workspace import guard_shim
loaded = set(sys.modules) - before
print(" ".join(sorted(m for m in loaded if m.startswith("superqode_ls"))))
print(" ".join(sorted(m for m in loaded if not m.startswith("superqode_ls"))))
v = guard_shim.check_git_argv(sys.argv[2:])
print(v.allowed, "re" in sys.modules, "superqode_ls.workspace.guard_shell" in sys.modules)
"""


@pytest.mark.parametrize(
    ("argv", "reads_shell"),
    [(["branch", "-d", "x"], False), (["-c", "core.pager=git commit", "log"], True)],
)
def test_the_shims_python_path_loads_the_judge_only(argv, reads_shell):
    """The shim runs as ``python -I -S`` on every judged git call: stdlib
    only, and the shell reader (with ``re``) only for a command git would run."""
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _SHIM_IMPORTS, root, *argv],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    assert out[0].split() == [
        "superqode_ls", "superqode_ls.workspace", "superqode_ls.workspace.guard_judge",
        "superqode_ls.workspace.guard_policy", "superqode_ls.workspace.guard_rules",
        "superqode_ls.workspace.guard_shim", "superqode_ls.workspace.guard_verdict",
    ]
    assert not {"re", "typing", "json", "dataclasses", "pydantic"} & set(out[1].split())
    assert out[2] == f"False {reads_shell} {reads_shell}"
