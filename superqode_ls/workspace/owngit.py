"""SuperQode's own git dir for a sandbox: what its unconfined git calls read.

A session may write its private git dir (``private/git``: config, commondir,
gitdir, hooks, info/, objects and their alternates, the index) and every file
of its sandbox, ``.git`` included. Git run *outside* the session's barrier on
any of that would execute what the session planted: a ``filter.<x>.clean``
in the config selected by a planted ``.gitattributes``, ``core.fsmonitor``, a
hook, an ``include.path``; or follow a ``commondir``/``gitdir``/alternates
redirection to a place of the session's choosing.

So SuperQode's own git calls on a sandbox (hashing it, checking it out,
resetting or restoring it) never discover the repository from the sandbox.
They name everything in the environment (:func:`env`):

- ``GIT_DIR``: ``private/own-git``, made here from the user's repository at
  session start, outside every path the session may write (its private dir
  is not; only the folders ``paths.PRIVATE_WRITABLE`` names are);
- ``GIT_OBJECT_DIRECTORY``: the private snapshot store (SuperQode's; its
  alternates name the user's objects), never the session's object dir;
- ``GIT_INDEX_FILE``: an index SuperQode names (its tracking index, or the
  sealed index it is writing before the session starts);
- ``GIT_WORK_TREE``: the sandbox.

No configuration of the user's global or system scope is read
(``GIT_CONFIG_GLOBAL=/dev/null``, ``GIT_CONFIG_NOSYSTEM``: :data:`git.UNTRUSTED_TREE_ENV`).
``own-git``'s configuration is the user's, all scopes flattened (no include
is followed again from here), cut down to what hashing and checking out a
tree reads (:data:`_KEPT_SECTIONS`: ``core``, ``extensions``, ``index``...),
without a key that names a program. So git run here defines no filter,
diff or merge driver at all: a planted ``.gitattributes`` (or attributes
file) can select nothing that runs — not even the user's own git-lfs or
git-crypt, which would otherwise run, unconfined, on whatever a session put
in any file it chose. What is left of an attribute is git's own in-process
conversions (``text``/``eol``, ``ident``, ``working-tree-encoding``). The
cost: a filtered file of a sandbox is hashed as its working-tree bytes
(docs/safety.md, *Git and session state*).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from .git import UNTRUSTED_TREE_ENV, ConfigEntry, config_listing, git

OWN_GIT = "own-git"
# Not carried from the user's configuration: a path, a command or a repository
# shape that belongs to the user's checkout, not to a sandbox.
_DROPPED = ("core.worktree", "core.hookspath", "core.bare", "core.fsmonitor")
_DROPPED_PREFIXES = ("include.", "includeif.")
# What own-git keeps of the user's configuration: the sections that decide how
# a work tree is hashed and checked out. An allow-list, so a key git adds
# tomorrow that runs a program is not carried by default (failing closed
# costs at most a hash that differs from the user's, i.e. a cold sandbox).
_KEPT_SECTIONS = frozenset({"core", "extensions", "index", "i18n", "feature", "checkout",
                            "splitindex", "pack"})
# Keys of those sections that name a program or a place to run one.
_PROGRAM_KEYS = frozenset({"core.sshcommand", "core.gitproxy", "core.askpass", "core.editor",
                           "core.pager", "core.alternaterefscommand",
                           "core.alternaterefsprefixes", "core.fsmonitorhookversion"})


def user_config(repo: Path, listing: list[ConfigEntry] | None = None) -> list[tuple[str, str | None]]:
    """The user's repository configuration, includes resolved where they are
    (relative include paths mean the user's ``.git``), in file order.
    ``listing``: ``git.config_listing(repo)``, read already."""
    if listing is not None:
        return [(key, value) for scope, key, value in listing if scope == "local"]
    proc = git(["config", "--local", "--list", "--includes", "-z"], repo, check=False)
    out: list[tuple[str, str | None]] = []
    for rec in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not rec:
            continue
        key, nl, value = rec.partition("\n")
        out.append((key, value if nl else None))
    return out


def own_config(repo: Path, listing: list[ConfigEntry] | None = None) -> list[tuple[str, str | None]]:
    """The user's configuration of every scope (system, global, the
    repository's), as git sees it, cut down to :data:`_KEPT_SECTIONS` less
    :data:`_PROGRAM_KEYS`: what own-git holds, and all git reads there."""
    out: list[tuple[str, str | None]] = []
    for _, key, value in config_listing(repo) if listing is None else listing:
        low = key.lower()
        if low.split(".", 1)[0] in _KEPT_SECTIONS and low not in _PROGRAM_KEYS:
            out.append((key, value))
    return out


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")


def config_text(entries: list[tuple[str, str | None]], extra: Mapping[str, str]) -> str:
    """Git's config file syntax for ``entries`` (``section[.sub].name``), the
    dropped keys left out, ``extra`` appended."""
    lines: list[str] = []
    for key, value in [*entries, *extra.items()]:
        low = key.lower()
        if key not in extra and (low in _DROPPED or low.startswith(_DROPPED_PREFIXES)):
            continue
        section, _, rest = key.partition(".")
        sub, _, name = rest.rpartition(".")
        if not section or not name:
            continue
        head = f'[{section} "{_quote(sub)}"]' if sub else f"[{section}]"
        lines.append(head)
        lines.append(f"\t{name}" if value is None else f'\t{name} = "{_quote(value)}"')
    return "\n".join(lines) + "\n"


def make(own: Path, repo: Path, common: Path, base: str,
         listing: list[ConfigEntry] | None = None) -> None:
    """Write ``own`` (a fresh folder of SuperQode's) from the user's repository
    (``common``: its common git dir; ``listing``: its configuration, read)."""
    if own.is_symlink():
        own.unlink()
    elif own.exists():
        shutil.rmtree(own)
    for d in ("info", "refs", "objects"):
        (own / d).mkdir(parents=True)
    (own / "HEAD").write_text(base + "\n")
    (own / "config").write_text(config_text(own_config(repo, listing), {"core.bare": "false"}))
    for name in ("exclude", "attributes"):
        src = common / "info" / name
        if src.is_file():
            shutil.copyfile(src, own / "info" / name)


def add_excludes(own: Path, lines: str) -> None:
    with open(own / "info" / "exclude", "a", encoding="utf-8", errors="surrogateescape") as f:
        f.write(lines)


def env(own: Path, work_tree: Path, index: Path, objects: Path) -> dict[str, str]:
    """The environment of an unconfined git call on a sandbox (module doc).
    A session's object dir is not an alternate: what it holds is not read."""
    return {
        "GIT_DIR": str(own),
        "GIT_WORK_TREE": str(work_tree),
        "GIT_INDEX_FILE": str(index),
        "GIT_OBJECT_DIRECTORY": str(objects),
        # A partial clone's missing object must not start a fetch (remote
        # helpers, ssh commands) from here.
        "GIT_NO_LAZY_FETCH": "1",
        **UNTRUSTED_TREE_ENV,
    }


def expected_links(sandbox: Path, wt: Path) -> dict[Path, str]:
    """What SuperQode wrote into the files that point git somewhere: a session
    that rewrote one tampered with its git dir (see :func:`tampered`)."""
    return {
        sandbox / ".git": f"gitdir: {wt}\n",
        wt / "commondir": "../common\n",
    }


def tampered(sandbox: Path, wt: Path, alternates: str) -> str | None:
    """One line naming the first redirection the session planted (a
    ``.git`` file, ``commondir`` or the object alternates changed or made a
    link), or None. Nothing of SuperQode's reads them; this decides that the
    sandbox is not parked for another session."""
    wants = {**expected_links(sandbox, wt),
             wt.parent / "common" / "objects" / "info" / "alternates": alternates}
    for path, text in wants.items():
        want = text.encode("utf-8", "surrogateescape")
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                data = os.read(fd, len(want) + 1) if stat.S_ISREG(os.fstat(fd).st_mode) else None
            finally:
                os.close(fd)
        except OSError as e:
            return f"{path} is not SuperQode's any more ({e.strerror or e})"
        if data != want:
            return f"{path} was rewritten by the session"
    return None
