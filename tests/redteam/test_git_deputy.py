"""No confused deputy in SuperQode's own git: a session plants configuration,
attributes, hooks and redirections in what it may write (its private git dir,
its sandbox), then SuperQode runs git on the sandbox outside the barrier
(hashing it for changes, restoring a checkpoint, refreshing and parking it,
resetting it for the next session). The planted commands must never run:
each would write a marker outside the sandbox and append to ``~/.bashrc``.

Every plant is made *inside* the session's barrier (the session can do it),
and each variant first proves it is live: plain git, discovering the
repository from the sandbox the way SuperQode used to, runs it."""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from superqode_ls.events import EventBus
from superqode_ls.workspace import landlock, pool
from superqode_ls.workspace.proc import supervise
from superqode_ls.workspace.session import IsolatedSession

from ..safety_helpers import content_fingerprint
from ..workspace.helpers import tree_state

pytestmark = pytest.mark.skipif(
    landlock.abi() is None,
    reason="this kernel has no Landlock: a session could write anywhere, there is no deputy",
)



def _home(home: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(home):
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) != str(home / ".superqode")]
        for name in filenames:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as fh:
                out[p] = hashlib.sha256(fh.read()).hexdigest()
    return out


def as_session(s: IsolatedSession, script: str) -> None:
    """``script`` run by ``sh`` the way the session runs anything: behind its barrier."""
    env = s.env()
    proc = subprocess.run(supervise(["sh", "-c", script], env), cwd=s.sandbox, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"the session could not plant: {proc.stderr}"


def live(s: IsolatedSession, world: dict, *args: str) -> None:
    """The plant works: git found from the sandbox (the old way) runs it. The
    index is a throw-away copy of the session's and the marker is removed again."""
    scratch = s.private / "tmp" / "live-index"
    shutil.copyfile(s.private / "git" / "wt" / "index", scratch)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_DIR")}
    env["GIT_INDEX_FILE"] = str(scratch)
    env["SQ_DEMO_BASHRC"] = str(s.private / "tmp" / "demo-bashrc")
    subprocess.run(["git", *args], cwd=s.sandbox, env=env, capture_output=True, timeout=60,
                   check=False)
    assert world["marker"].exists(), "the planted command should be live for plain git"
    world["marker"].unlink()
    scratch.unlink(missing_ok=True)


def exercise(s: IsolatedSession) -> None:
    """SuperQode's own git on the sandbox, as a session's life drives it."""
    s.changes_sync()
    cp = s.tree.checkpoint()
    s.tree.restore(cp)
    s.changes_sync()


def never_ran(world: dict, before_repo: dict, before_home: dict) -> None:
    assert not world["marker"].exists(), "a command the session planted ran outside its barrier"
    assert content_fingerprint(world["repo"]) == before_repo
    assert _home(world["home"]) == before_home


def start(world: dict, bus: EventBus | None = None) -> IsolatedSession:
    return IsolatedSession.create_sync(world["repo"], bus=bus)


def _common(s: IsolatedSession) -> Path:
    return s.private / "git" / "common"


def _filter_plant(evil: str) -> str:
    """A filter driver whose every side runs ``evil`` (and passes data through)."""
    cmd = _config_value(f"sh -c {shlex.quote(evil + '; cat')}")
    conv = _config_value(f"sh -c {shlex.quote(evil + '; cat $0')}")
    return (f'[filter "x"]\n\tclean = {cmd}\n\tsmudge = {cmd}\n\trequired = true\n'
            f'[diff "x"]\n\ttextconv = {conv}\n')


def _config_value(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _attributes(rel: str = ".gitattributes") -> str:
    return f"printf '* filter=x diff=x\\n' > {rel}; echo changed > app.py; "


def _two_sessions(world: dict, plant, live_args: tuple[str, ...] | None,
                  expect_tampered: bool, last=None,
                  expect_reuse: bool | None = None,
                  users_drivers: bool = False) -> tuple[IsolatedSession, IsolatedSession, list]:
    """First session plants and is exercised and closed (``last``: planted just
    before the close); a second one follows (reused unless the first was
    tampered with, or ``expect_reuse`` says otherwise) and is exercised too.
    ``users_drivers``: the user's configuration holds the commands (the
    session's own git may carry them; SuperQode's never)."""
    repo = world["repo"]
    before_repo, before_home = content_fingerprint(repo), _home(world["home"])
    events: list = []
    bus = EventBus()
    bus.subscribe(events.append)
    first = start(world, bus)
    try:
        as_session(first, plant(first))
        if live_args:
            live(first, world, *live_args)
        exercise(first)
        if last is not None:
            as_session(first, last(first))
    finally:
        first.close_sync()
    tampered = [e for e in events if e.type == "workspace.git_tampered"]
    assert bool(tampered) == expect_tampered, tampered
    assert len(pool.slots(repo)) == (0 if expect_tampered else 1)
    second = start(world)
    try:
        assert second.reused == (not expect_tampered if expect_reuse is None else expect_reuse)
        assert tree_state(second.sandbox) == tree_state(repo)
        assert second.changes_sync().empty
        cfg = (_common(second) / "config").read_text()
        if not users_drivers:  # the next session's git dir is made afresh
            assert str(world["marker"]) not in cfg
        assert str(world["marker"]) not in (second.private / "own-git" / "config").read_text()
        exercise(second)
    finally:
        second.close_sync()
    assert first.verification.verified and second.verification.verified
    never_ran(world, before_repo, before_home)
    return first, second, tampered


def test_filter_in_the_private_config_with_planted_attributes(world):
    def plant(s):
        return (f"cat >> {_common(s) / 'config'} <<'EOF'\n{_filter_plant(world['evil'])}EOF\n"
                + _attributes())
    _two_sessions(world, plant, ("add", "-A"), expect_tampered=False)


def test_attributes_in_the_private_info_folder(world):
    def plant(s):
        return (f"cat >> {_common(s) / 'config'} <<'EOF'\n{_filter_plant(world['evil'])}EOF\n"
                f"printf '* filter=x\\n' > {_common(s) / 'info' / 'attributes'}; "
                "echo changed > app.py")
    _two_sessions(world, plant, ("add", "-A"), expect_tampered=False)


def test_fsmonitor_and_hooks_in_the_private_git_dir(world):
    def plant(s):
        hooks = _common(s) / "hooks"
        hook = f"#!/bin/sh\n{world['evil']}\n"
        monitor = _config_value(world["evil"] + "; false")
        return (f"cat >> {_common(s) / 'config'} <<'EOF'\n[core]\n\tfsmonitor = {monitor}\nEOF\n"
                + "".join(f"printf %s {shlex.quote(hook)} > {hooks / n}; chmod +x {hooks / n}; "
                          for n in ("post-index-change", "pre-commit", "post-checkout"))
                + "echo changed > app.py")
    _two_sessions(world, plant, ("status",), expect_tampered=False)


def test_hooks_path_pointed_at_a_planted_folder(world):
    def plant(s):
        d = s.private / "tmp" / "hooks"
        return (f"mkdir -p {d}; printf '#!/bin/sh\\n%s\\n' {shlex.quote(world['evil'])} "
                f"> {d}/post-index-change; chmod +x {d}/post-index-change; "
                f"printf '[core]\\n\\thooksPath = {d}\\n' >> {_common(s) / 'config'}; "
                "echo changed > app.py")
    _two_sessions(world, plant, ("update-index", "--add", "app.py"), expect_tampered=False)


def test_include_path_to_a_planted_file(world):
    def plant(s):
        inc = s.private / "scratch" / "evil.cfg"
        return (f"mkdir -p {inc.parent}; cat > {inc} <<'EOF'\n{_filter_plant(world['evil'])}EOF\n"
                f"printf '[include]\\n\\tpath = {inc}\\n' >> {_common(s) / 'config'}; "
                + _attributes())
    _two_sessions(world, plant, ("add", "-A"), expect_tampered=False)


def _planted_copy(s: IsolatedSession, name: str, world: dict) -> str:
    """A copy of the private common dir at ``git/<name>`` with the evil filter."""
    copy = s.private / "git" / name
    return (f"cp -r {_common(s)} {copy}; "
            f"cat >> {copy / 'config'} <<'EOF'\n{_filter_plant(world['evil'])}EOF\n")


def test_commondir_pointed_at_a_planted_copy_is_not_parked_nor_followed(world):
    def plant(s):
        return (_planted_copy(s, "evil", world)
                + f"echo ../evil > {s.private / 'git' / 'wt' / 'commondir'}; " + _attributes())
    _, _, tampered = _two_sessions(world, plant, ("add", "-A"), expect_tampered=True)
    assert "commondir" in tampered[0].data["detail"]


def test_gitdir_file_redirected_to_a_planted_git_dir(world):
    def plant(s):
        fake = s.private / "git" / "fake"
        return (_planted_copy(s, "fake", world) + f"cp {s.private / 'git' / 'wt' / 'index'} {fake}/; "
                f"echo 'gitdir: {fake}' > .git; " + _attributes())
    _two_sessions(world, plant, ("add", "-A"), expect_tampered=True)


def test_alternates_to_an_attacker_folder_are_not_parked(world, tmp_path):
    def plant(s):
        return f"echo {tmp_path / 'attacker' / 'objects'} >> {_common(s) / 'objects/info/alternates'}"
    _two_sessions(world, plant, None, expect_tampered=True)


def test_symlinks_at_the_index_and_the_git_file_are_never_written_through(world):
    """The private index and the sandbox's ``.git`` made links to the user's
    ``~/.bashrc`` and the user's index: closing, parking and the next session
    write neither."""
    def plant(s):
        return (f"ln -sf {world['bashrc']} {s.private / 'git' / 'wt' / 'index'}; "
                f"rm .git; ln -s {world['bashrc']} .git")
    _two_sessions(world, plant, None, expect_tampered=True)


def test_a_planted_redefinition_of_the_users_own_filter_is_not_used(world, make_repo):
    """The session's redefinition of the user's filter (lfs-like) in its
    private config is not used; nor is the user's own driver: SuperQode's git
    on a sandbox defines no driver (owngit.py), so the filtered file is hashed
    as it is, and the next session's reuse proof (against the user's filtered
    state) fails: a cold sandbox, the cost of running no driver."""
    repo = world["repo"]
    subprocess.run(["git", "config", "filter.rot.clean", "tr a-z n-za-m"], cwd=repo, check=True)
    subprocess.run(["git", "config", "filter.rot.smudge", "tr n-za-m a-z"], cwd=repo, check=True)
    (repo / ".gitattributes").write_text("*.sec filter=rot\n")
    (repo / "k.sec").write_text("secret\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "filtered"], cwd=repo, check=True)
    (repo / "k.sec").write_text("secret edited\n")

    def plant(s):
        cmd = _config_value(f"sh -c {shlex.quote(world['evil'] + '; cat')}")
        return (f"cat >> {_common(s) / 'config'} <<'EOF'\n[filter \"rot\"]\n\tclean = {cmd}\nEOF\n"
                "echo changed > app.py; echo edited again > k.sec")
    _two_sessions(world, plant, ("add", "-A"), expect_tampered=False, expect_reuse=False)


def test_a_clean_session_still_parks_and_the_next_reuses_it(world):
    repo = world["repo"]
    with start(world) as first:
        (first.sandbox / "app.py").write_text("scribbled\n")
        assert [c.path for c in first.changes_sync().changes] == ["app.py"]
    assert len(pool.slots(repo)) == 1
    slot = pool.slots(repo)[0]
    assert sorted(os.listdir(slot)) == ["identity", "index", "tree"]  # no git dir of the session's
    with start(world) as second:
        assert second.reused
        assert tree_state(second.sandbox) == tree_state(repo)
        assert second.changes_sync().empty
    assert second.verification.verified



def test_a_submodule_git_dir_and_folder_planted_in_a_reused_sandbox(world, make_repo):
    """The user's submodule, with ``submodule.recurse`` on: the session plants
    a hook, an fsmonitor and a filter in the submodule's private git dir and
    makes the submodule's ``.git`` a link to ``~/.bashrc``. SuperQode's git
    never recurses into it, and the next session's reset rebuilds the folder
    instead of writing through the link."""
    repo = world["repo"]
    lib = make_repo({"lib.py": "def f():\n    return 1\n"}, name="lib")
    subprocess.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q",
                    str(lib), "vendor/lib"], cwd=repo, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-qm", "submodule"], cwd=repo, check=True)
    subprocess.run(["git", "config", "submodule.recurse", "true"], cwd=repo, check=True)

    def plant(s):
        gitfile = s.sandbox / "vendor" / "lib" / ".git"
        gd = Path(gitfile.read_text().split(":", 1)[1].strip())
        monitor = _config_value(world["evil"] + "; false")
        hook = f"#!/bin/sh\n{world['evil']}\n"
        return (f"cat >> {gd / 'config'} <<'EOF'\n[core]\n\tfsmonitor = {monitor}\n"
                f"{_filter_plant(world['evil'])}EOF\n"
                f"mkdir -p {gd / 'hooks'}; "
                + "".join(f"printf %s {shlex.quote(hook)} > {gd / 'hooks' / n}; "
                          f"chmod +x {gd / 'hooks' / n}; "
                          for n in ("post-index-change", "post-checkout"))
                + "printf '* filter=x\\n' > vendor/lib/.gitattributes; "
                "echo changed > vendor/lib/lib.py; echo changed > app.py")

    def link(s):
        return f"rm vendor/lib/.git; ln -s {world['bashrc']} vendor/lib/.git"

    # Live: the user's recursing git runs the submodule's plant.
    first = start(world)
    try:
        as_session(first, plant(first))
        live(first, world, "status")
    finally:
        first.close_sync()
    for p in pool.slots(repo):  # that sandbox ran plain git: not the one under test
        pool.discard_all(repo)
    _two_sessions(world, plant, None, expect_tampered=False, last=link)


def test_a_users_filter_running_a_project_script_does_not_run_the_sessions_copy(world):
    """The user's driver runs ``sh tools/strip.sh``, a file of the project: git
    runs it in the work tree, so in a sandbox it is the session's to rewrite.
    SuperQode's git turns such a driver off for sandboxes (its files are
    hashed as they are; here the driver is ``cat``, so the reuse still proves)."""
    repo = world["repo"]
    (repo / "tools").mkdir()
    (repo / "tools" / "strip.sh").write_text("cat\n")
    (repo / ".gitattributes").write_text("*.txt filter=strip\n")
    (repo / "notes.txt").write_text("notes\n")
    subprocess.run(["git", "config", "filter.strip.clean", "sh tools/strip.sh"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "strip filter"], cwd=repo, check=True)

    def plant(s):
        return (f"printf '%s; cat\\n' {shlex.quote(world['evil'])} > tools/strip.sh; "
                "echo edited > notes.txt")
    _two_sessions(world, plant, ("add", "-A"), expect_tampered=False)
