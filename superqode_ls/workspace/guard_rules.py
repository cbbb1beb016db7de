"""Subcommands whose safety depends on their arguments (``branch``, ``tag``,
``config``, ``stash``...). Each rule returns None when the invocation only
reads, else (reason, suggestion). Also which words name git itself.
"""

from __future__ import annotations

import os

from .guard_policy import _R, _READ_ONLY
from .guard_verdict import DYN

if False:  # typing only
    from collections.abc import Iterable, Sequence


def _split(args: Sequence[str], with_value: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """(options, positionals); stops option parsing at ``--``."""
    with_value = set(with_value)
    opts: list[str] = []
    pos: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            pos.extend(args[i + 1 :])
            break
        if a.startswith("-") and a != "-" and DYN not in a:
            opts.append(a)
            if a in with_value and i + 1 < len(args):
                i += 1
        else:
            pos.append(a)
        i += 1
    return opts, pos


def _has(opts: Iterable[str], *names: str) -> bool:
    for o in opts:
        for n in names:
            if o == n or (n.startswith("--") and o.startswith(n + "=")):
                return True
            # Bundled short options: -fd, -xdf ...
            if (
                len(n) == 2
                and n[0] == "-"
                and not o.startswith("--")
                and o.startswith("-")
                and n[1] in o[1:]
            ):
                return True
    return False


def _branch(args):
    opts, pos = _split(
        args,
        {
            "--contains",
            "--no-contains",
            "--merged",
            "--no-merged",
            "--points-at",
            "--sort",
            "--format",
            "--color",
            "--column",
            "--abbrev",
        },
    )
    writes = (
        "-d",
        "-D",
        "--delete",
        "-m",
        "-M",
        "--move",
        "-c",
        "-C",
        "--copy",
        "-f",
        "--force",
        "-u",
        "--set-upstream-to",
        "--unset-upstream",
        "--edit-description",
        "--track",
        "-t",
        "--no-track",
        "--create-reflog",
        "--recurse-submodules",
    )
    long_writes = [w for w in writes if w.startswith("--")]
    short_writes = [w for w in writes if not w.startswith("--")]
    if (
        any(o in short_writes for o in opts)
        or _has(opts, *long_writes)
        or any(not o.startswith("--") and set(o[1:]) & set("dDmMcCfut") for o in opts)
    ):
        return (
            "Creating, deleting or renaming branches changes refs",
            "list branches with `git branch --list`",
        )
    if pos and not _has(opts, "-l", "--list", "--show-current"):
        return ("Creating a branch changes refs", "list branches with `git branch --list`")
    return None


def _tag(args):
    opts, pos = _split(
        args,
        {
            "--contains",
            "--no-contains",
            "--merged",
            "--no-merged",
            "--points-at",
            "--sort",
            "--format",
            "--color",
            "--column",
            "-n",
        },
    )
    if _has(
        opts,
        "-d",
        "--delete",
        "-a",
        "--annotate",
        "-s",
        "--sign",
        "-u",
        "--local-user",
        "-f",
        "--force",
        "-m",
        "--message",
        "-F",
        "--file",
        "-e",
        "--edit",
        "--create-reflog",
    ):
        return ("Creating or deleting tags changes refs", "list tags with `git tag -l`")
    if _has(opts, "-v", "--verify"):
        return None
    if pos and not _has(opts, "-l", "--list"):
        return ("Creating a tag changes refs", "list tags with `git tag -l`")
    return None


_CONFIG_READ = (
    "--get",
    "--get-all",
    "--get-regexp",
    "--get-urlmatch",
    "-l",
    "--list",
    "--get-color",
    "--get-colorbool",
)
_CONFIG_WRITE = (
    "--add",
    "--unset",
    "--unset-all",
    "--replace-all",
    "--rename-section",
    "--remove-section",
    "-e",
    "--edit",
)


def _config(args):
    verbs = {
        "get": True,
        "list": True,
        "set": False,
        "unset": False,
        "rename-section": False,
        "remove-section": False,
        "edit": False,
    }
    opts, pos = _split(
        args, {"-f", "--file", "--blob", "--type", "--default", "--comment", "--value", "-t"}
    )
    if pos and pos[0] in verbs and not any(o in _CONFIG_READ + _CONFIG_WRITE for o in opts):
        if verbs[pos[0]]:
            return None
        return (
            "Writing git configuration changes how the repository behaves",
            "read settings with `git config get KEY`",
        )
    if _has(opts, *_CONFIG_WRITE):
        return (
            "Writing git configuration changes how the repository behaves",
            "read settings with `git config --get KEY`",
        )
    if _has(opts, *_CONFIG_READ):
        return None
    if len(pos) <= 1:
        return None  # `git config KEY` reads
    return (
        "Writing git configuration changes how the repository behaves",
        "read settings with `git config --get KEY`",
    )


def _remote(args):
    _, pos = _split(args)
    if not pos or pos[0] in ("show", "get-url"):
        return None
    return ("Changing remotes alters repository configuration", "list remotes with `git remote -v`")


def _worktree(args):
    _, pos = _split(args)
    if pos and pos[0] == "list":
        return None
    return (
        "Managing worktrees alters the repository's administrative files",
        "list worktrees with `git worktree list`",
    )


def _stash(args):
    _, pos = _split(args)
    if pos and pos[0] in ("list", "show"):
        return None
    return _R["stash"]


def _clean(args):
    opts, _ = _split(args, {"-e", "--exclude"})
    if _has(opts, "-n", "--dry-run") and not _has(opts, "-i", "--interactive"):
        return None
    return ("Clean permanently deletes untracked files", "preview with `git clean -n`")


def _checkout(args):
    return None if not args else _R["checkout"]


def _reset(args):
    if _has(args, "--hard"):
        return (
            "Hard reset discards uncommitted changes and moves HEAD",
            "inspect with `git diff`; SuperQode restores sandboxes itself",
        )
    return _R["reset"]


def _reflog(args):
    _, pos = _split(args)
    if not pos or pos[0] in ("show", "exists") or pos[0] not in ("expire", "delete"):
        return None
    return ("Expiring or deleting reflog entries loses history", "read with `git reflog show`")


def _notes(args):
    _, pos = _split(args, {"--ref"})
    if not pos or pos[0] in ("list", "show", "get-ref"):
        return None
    return ("Changing notes updates refs", "read notes with `git notes show`")


def _replace(args):
    opts, pos = _split(args, {"--format"})
    if not pos or _has(opts, "-l", "--list"):
        return None
    return ("Replace refs change how history reads", "list them with `git replace -l`")


def _symbolic_ref(args):
    opts, pos = _split(args, {"-m"})
    if len(pos) <= 1 and not _has(opts, "-d", "--delete"):
        return None
    return (
        "symbolic-ref with a target rewrites HEAD or another ref",
        "read it with `git symbolic-ref HEAD`",
    )


def _submodule(args):
    _, pos = _split(args)
    if not pos or pos[0] in ("status", "summary"):
        return None
    return (
        "Submodule commands change submodule checkouts and config",
        "inspect with `git submodule status`",
    )


def _sparse_checkout(args):
    _, pos = _split(args)
    if pos and pos[0] == "list":
        return None
    return (
        "sparse-checkout rewrites the working tree and config",
        "inspect with `git sparse-checkout list`",
    )


def _bisect(args):
    _, pos = _split(args)
    if pos and pos[0] in ("log", "visualize", "view", "help", "terms"):
        return None
    return ("Bisecting moves HEAD and writes refs", "inspect history with `git log`")


def _rerere(args):
    _, pos = _split(args)
    if pos and pos[0] in ("status", "diff", "remaining"):
        return None
    return ("rerere changes recorded resolutions", "inspect with `git rerere status`")


def _apply(args):
    opts, _ = _split(
        args,
        {
            "-p",
            "-C",
            "--exclude",
            "--include",
            "--directory",
            "--whitespace",
            "--build-fake-ancestor",
        },
    )
    if _has(opts, "--index", "--cached", "--3way", "-3", "--intent-to-add", "-N"):
        return (
            "git apply --index/--cached modifies the index",
            "apply to the working tree only with `git apply`",
        )
    return None


def _hash_object(args):
    if _has(args, "-w"):
        return ("hash-object -w writes objects into the repository", "compute the id without -w")
    return None


def _fsck(args):
    if _has(args, "--lost-found"):
        return ("fsck --lost-found writes into the repository", "run git fsck without it")
    return None


def _lfs(args):
    _, pos = _split(args)
    if (
        not pos
        or pos[0] in ("ls-files", "status", "env", "version", "logs", "track")
        and not (pos[0] == "track" and len(pos) > 1)
    ):
        return None
    return ("git lfs commands change LFS objects, hooks or config", "inspect with `git lfs status`")


def _update_index(args):
    # A stat refresh is what `git status` does on its own; anything else edits entries.
    refresh = {"--refresh", "--really-refresh"}
    harmless = refresh | {"-q", "--ignore-submodules", "--unmerged", "--ignore-missing"}
    if any(a in refresh for a in args) and all(a in harmless for a in args):
        return None
    return _R["update-index"]


def _bundle(args):
    _, pos = _split(args)
    if pos and pos[0] in ("verify", "list-heads"):
        return None
    if pos and pos[0] == "create":
        return None  # writes a bundle file only
    return ("Unbundling writes objects into the repository", "inspect with `git bundle verify`")


_RULES = {
    "branch": _branch,
    "tag": _tag,
    "config": _config,
    "remote": _remote,
    "worktree": _worktree,
    "stash": _stash,
    "clean": _clean,
    "checkout": _checkout,
    "reset": _reset,
    "reflog": _reflog,
    "notes": _notes,
    "replace": _replace,
    "symbolic-ref": _symbolic_ref,
    "submodule": _submodule,
    "sparse-checkout": _sparse_checkout,
    "bisect": _bisect,
    "rerere": _rerere,
    "apply": _apply,
    "hash-object": _hash_object,
    "fsck": _fsck,
    "lfs": _lfs,
    "bundle": _bundle,
    "update-index": _update_index,
}


_KNOWN_SUBCOMMANDS = _READ_ONLY | set(_R) | set(_RULES)


def _is_git_word(word: str) -> bool:
    base = os.path.basename(word)
    if base in ("git", "git.exe"):
        return True
    return base.startswith("git-") and base[4:].removesuffix(".exe") in _KNOWN_SUBCOMMANDS
