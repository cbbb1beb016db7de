"""Running git on the user's repository and on sandboxes.

Every internal call: never runs hooks, never auto-gcs, never takes optional
locks (a plain ``git status`` would otherwise refresh and rewrite the user's
index and race their own git commands), never prompts.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import EXIT_FAILED, SuperQodeError

SAFE_CONFIG: tuple[str, ...] = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "core.fsmonitor=false",
    # Never into a submodule: in a sandbox its git dir is the session's
    # (private/git/modules, or a planted ``sub/.git``), and git would run
    # there with that config and those hooks (the user's
    # ``submodule.recurse=true`` would otherwise make read-tree do it).
    "-c", "submodule.recurse=false",
    "-c", "core.quotepath=false",
    "-c", "advice.detachedHead=false",
    "-c", "commit.gpgsign=false",
    "-c", "user.name=SuperQode",
    "-c", "user.email=superqode@localhost",
    # Writing a sandbox's files is bound by the disk, not the CPU: git's
    # sequential checkout took 3.7-9.9 s for 20,000 files where four workers
    # took 1.6-2.0 s on the same disk (bench/sandbox.py's repository). Fixed,
    # not per core, because one core waits on the disk just the same.
    "-c", "checkout.workers=4",
)

# For git run on a tree a session could write (a sandbox, SuperQode's store):
# no configuration of the user's global or system scope. Those define the
# user's filter, diff and merge drivers (``git lfs install`` writes its
# driver there), which a planted ``.gitattributes`` would otherwise select,
# and git would run them outside the barrier on the session's bytes. What
# git reads instead is a git dir of SuperQode's (workspace/owngit.py).
UNTRUSTED_TREE_ENV: Mapping[str, str] = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}

# Variables that would redirect git away from the repository we name.
_REDIRECTS = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_PREFIX",
)


_FILTER_FAILED = re.compile(r"^fatal: (?P<file>.+): (?P<side>clean|smudge) filter '?(?P<name>[^' ]+)'? failed$")


class GitError(SuperQodeError):
    """git refused something the engine needed; the work did not run (exit 3)."""

    exit_code = EXIT_FAILED

    def __init__(self, args: Sequence[str], code: int, stderr: str):
        self.args_ = list(args)
        self.code = code
        self.stderr = stderr.strip()
        lines = self.stderr.splitlines()
        last = lines[-1] if lines else f"exit {code}"
        m = _FILTER_FAILED.match(last)
        if m:
            # The user's own filter command (git-lfs, git-crypt...) failed:
            # name it, the file, and why, rather than the git call.
            why = next((ln for ln in lines if not ln.startswith(("fatal:", "error:"))), "")
            why = why or next((ln for ln in lines if ln.startswith("error:")), "")
            msg = (f"git filter '{m['name']}' ({m['side']}) failed on {m['file']}"
                   + (f": {why.removeprefix('error: ')}" if why else ""))
        else:
            words = [a for i, a in enumerate(args) if a != "-c" and (i == 0 or args[i - 1] != "-c")]
            msg = f"git {' '.join(words[:2])} failed: {last}"
        super().__init__(msg)


def alternates_line(path: Path | str) -> str:
    """One line of an ``objects/info/alternates`` file. The file is
    newline-separated; git reads a line that starts with a double quote as a
    C-style quoted path, so a path holding a newline (or a leading quote)
    is written that way rather than split in two."""
    text = str(path)
    if "\n" not in text and not text.startswith('"'):
        return text
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{body}"'


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REDIRECTS and not k.startswith("GIT_CONFIG_KEY_") and not k.startswith("GIT_CONFIG_VALUE_")}
    if "PATH" in env:
        # git runs filter drivers (and their shell) from the work tree: a
        # relative PATH entry would find a sandbox's planted program there.
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if os.path.isabs(p))
    env.update(
        GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0",
        GIT_AUTO_GC="0",
        LC_ALL="C",
        LANG="C",
    )
    if extra:
        env.update(extra)
    return env


def git(
    args: Sequence[str],
    cwd: Path | str,
    *,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    cmd = ["git", *SAFE_CONFIG, *args]
    proc = subprocess.run(
        cmd, cwd=str(cwd), env=git_env(env), input=input,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
    )
    if check and proc.returncode != 0:
        raise GitError(list(args), proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc


def git_out(args: Sequence[str], cwd: Path | str, **kw) -> str:
    return git(args, cwd, **kw).stdout.decode("utf-8", "surrogateescape").strip()


async def agit(
    args: Sequence[str],
    cwd: Path | str,
    *,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    check: bool = True,
) -> tuple[int, bytes, bytes]:
    proc = await asyncio.create_subprocess_exec(
        "git", *SAFE_CONFIG, *args, cwd=str(cwd), env=git_env(env),
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    out, err = await proc.communicate(input)
    if check and proc.returncode != 0:
        raise GitError(list(args), proc.returncode or 0, err.decode("utf-8", "replace"))
    return proc.returncode or 0, out, err


# ``ls-tree -r -z`` of the trees read last, by tree id: a session asks for
# the tree it carries in twice (its symlinks, its submodules), and the
# listing of a tree id is the same in every store that has it. A few, so
# the language server keeps at most a few listings of its last sessions.
_LISTINGS: dict[str, bytes] = {}
_LISTINGS_MAX = 2
_listings_lock = threading.Lock()
_OBJECT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def tree_listing(tree: str, cwd: Path | str, *, env: Mapping[str, str] | None = None) -> bytes:
    """``git ls-tree -r -z TREE``'s output; git runs once per tree id (a
    name such as ``HEAD`` is always asked)."""
    by_id = bool(_OBJECT_ID.fullmatch(tree))
    if by_id:
        with _listings_lock:
            known = _LISTINGS.get(tree)
        if known is not None:
            return known
    out = git(["ls-tree", "-r", "-z", tree], cwd, env=env).stdout
    if by_id:
        with _listings_lock:
            _LISTINGS.pop(tree, None)
            _LISTINGS[tree] = out
            while len(_LISTINGS) > _LISTINGS_MAX:
                del _LISTINGS[next(iter(_LISTINGS))]
    return out


def repo_root(path: Path) -> Path | None:
    """Top of the git work tree containing ``path``, or None outside git."""
    p = Path(path)
    if not p.exists():
        return None
    proc = git(["rev-parse", "--show-toplevel"], p if p.is_dir() else p.parent, check=False)
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.decode("utf-8", "surrogateescape").strip())


_HEAD_LINE = re.compile(rb"\n([0-9a-f]{40}(?:[0-9a-f]{24})?)\n\Z")


def repo_root_head(folder: Path) -> tuple[Path | None, str | None]:
    """(:func:`repo_root` of ``folder``, :func:`head_commit` there) from one
    git process where a session's start ran two: ``--show-toplevel`` prints
    the top (a path may hold a newline) and a newline first, then HEAD's
    commit; an unborn HEAD prints nothing more and exits 1. Any other answer
    (not a repository, git's own folder, a damaged HEAD) is asked again the
    old way, two processes, so that it is answered as those two functions do."""
    proc = git(["rev-parse", "--show-toplevel", "--verify", "-q", "HEAD^{commit}"], folder, check=False)
    out = proc.stdout
    if proc.returncode == 0 and (m := _HEAD_LINE.search(out)) is not None and m.start() > 0:
        return Path(out[:m.start()].decode("utf-8", "surrogateescape")), m.group(1).decode()
    if proc.returncode == 1 and len(out) > 1 and out.endswith(b"\n") and not proc.stderr:
        return Path(out[:-1].decode("utf-8", "surrogateescape")), None
    root = repo_root(folder)
    return root, (head_commit(root) if root is not None else None)


ConfigEntry = tuple[str, str, "str | None"]  # (scope, key, value); value None: a bare key


def config_listing(repo: Path) -> list[ConfigEntry]:
    """Every configuration entry git reads in ``repo``, includes resolved
    (an included file's entries carry the scope of the file that includes
    it), in git's order; ``SAFE_CONFIG``'s own ``-c`` settings left out.
    One git process where a session's making asked three (the user's
    repository entries, the entries SuperQode's own git dir keeps, the
    filter drivers); empty when git cannot read the configuration."""
    proc = git(["config", "--list", "--includes", "--show-scope", "-z"], repo, check=False)
    out: list[ConfigEntry] = []
    if proc.returncode != 0:
        return out
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    for scope, rec in zip(fields[0::2], fields[1::2], strict=False):  # scope NUL key LF value NUL
        if scope == "command":
            continue
        key, nl, value = rec.partition("\n")
        out.append((scope, key, value if nl else None))
    return out


def git_dir(repo: Path) -> Path:
    return Path(git_out(["rev-parse", "--absolute-git-dir"], repo))


def common_dir(repo: Path) -> Path:
    p = Path(git_out(["rev-parse", "--git-common-dir"], repo))
    return p if p.is_absolute() else (Path(repo) / p).resolve()


def copy_index(src: Path, dst: Path) -> None:
    """Copy a git index keeping its timestamps. git re-reads any entry whose
    file is not older than the index itself ("racily clean"): a copy stamped
    with the time of copying would instead trust stat data that cannot see a
    same-size edit made in the same clock tick as the index was written."""
    shutil.copy2(src, dst)


def registration_dirs(common: Path) -> list[Path]:
    """``<common dir>/worktrees/*``, git's linked-worktree registrations. The
    folder comes and goes with the last registration, so a missing one (even
    between a check and the listing) is simply none."""
    try:
        return sorted((common / "worktrees").iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def head_commit(repo: Path) -> str | None:
    proc = git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], repo, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def resolve_commit(repo: Path, ref: str) -> str:
    proc = git(["rev-parse", "--verify", "-q", "--end-of-options", f"{ref}^{{commit}}"], repo, check=False)
    if proc.returncode != 0:
        raise GitError(["rev-parse", ref], proc.returncode, f"unknown revision {ref!r}")
    return proc.stdout.decode().strip()
