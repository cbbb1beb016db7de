"""The git guard: is this git command line safe to run in a QE sandbox?

``check_git_argv`` judges one git invocation (global options, ``-c`` overrides
and ``-c alias.*`` expansions included); ``check_command_line`` finds every git
invocation inside a shell command line (``sh -c``, ``&&``/``||``/``;``/pipes,
``$(...)``, backticks, ``xargs``, ``env``/``nice``/``timeout`` wrappers,
``find -exec``, ``GIT_DIR=...`` prefixes, absolute paths to git...).

Stdlib only and import-light on purpose: the sandbox's ``git`` shim imports this
file on every git call (see ``guard_env``).

The policy: reading is allowed; anything that writes repository state (refs,
HEAD, index, config, hooks, stash, object store), discards work, talks to
remotes, points git at another repository or swaps out the guard's hooks is
blocked. Dynamic parts a static reader cannot resolve (``git $CMD``) are
treated as the worst case.
"""

from __future__ import annotations

import os

if False:  # typing only; the shim must not pay for importing typing
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

# Marks a word (or part of one) whose value is only known at run time:
# command substitutions, unknown variables, xargs input.
DYN = "\x00"

CONFIG_HINT = "add a pattern to qe.git_guard.allow in superqode.yaml if this is intended"


class GuardVerdict:
    """The guard's answer for one git invocation (a plain class: dataclasses
    would cost the shim an import on every git call)."""

    __slots__ = ("allowed", "command", "reason", "suggestion")

    def __init__(self, allowed: bool, reason: str, suggestion: str, command: str):
        self.allowed = allowed
        self.reason = reason
        self.suggestion = suggestion
        self.command = command

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GuardVerdict) and self._t() == other._t()

    def __hash__(self) -> int:
        return hash(self._t())

    def _t(self) -> tuple:
        return (self.allowed, self.reason, self.suggestion, self.command)

    def __repr__(self) -> str:
        return (
            f"GuardVerdict(allowed={self.allowed!r}, reason={self.reason!r}, "
            f"suggestion={self.suggestion!r}, command={self.command!r})"
        )

    @property
    def blocked(self) -> bool:
        return not self.allowed

    def line(self) -> str:
        if self.allowed:
            return f"allowed: {self.command}"
        return f"blocked: {self.reason} ({self.suggestion})"


# --------------------------------------------------------------------------
# Policy tables


_READ_ONLY = frozenset(
    [
        "status",
        "diff",
        "log",
        "show",
        "blame",
        "annotate",
        "grep",
        "ls-files",
        "ls-tree",
        "rev-parse",
        "rev-list",
        "cat-file",
        "describe",
        "shortlog",
        "show-ref",
        "for-each-ref",
        "name-rev",
        "merge-base",
        "diff-tree",
        "diff-files",
        "diff-index",
        "version",
        "help",
        "whatchanged",
        "cherry",
        "range-diff",
        "var",
        "check-ignore",
        "check-attr",
        "check-ref-format",
        "check-mailmap",
        "count-objects",
        "verify-commit",
        "verify-tag",
        "verify-pack",
        "show-branch",
        "ls-remote",
        "archive",
        "format-patch",
        "difftool",
        "get-tar-commit-id",
        "column",
        "stripspace",
        "interpret-trailers",
        "patch-id",
        "request-pull",
        "fast-export",
        "merge-tree",
        "merge-file",
        "show-index",
        "unpack-file",
        "mailinfo",
        "mailsplit",
        "shell-quote",
    ]
)

# subcommand -> (reason, suggestion) when blocked outright.
_R = {
    "commit": (
        "Commits would permanently alter repository history",
        "leave changes uncommitted; SuperQode collects sandbox changes as patches",
    ),
    "push": (
        "Pushing would publish commits to another repository",
        "propose changes as patches; push from your own checkout",
    ),
    "pull": (
        "Pulling fetches and merges, rewriting refs and the working tree",
        "use `git log`/`git diff` against refs that already exist",
    ),
    "fetch": (
        "Fetching updates remote-tracking refs and contacts remotes",
        "work with the refs already in the repository",
    ),
    "clone": (
        "Cloning creates a new repository and contacts remotes",
        "read files from the sandbox instead",
    ),
    "init": (
        "Initialising would create or reinitialise a repository",
        "work in the sandbox's existing repository",
    ),
    "reset": (
        "Reset moves HEAD and rewrites the index, and can discard work",
        "inspect with `git diff` / `git log`; SuperQode restores sandboxes itself",
    ),
    "checkout": (
        "Checkout moves HEAD and overwrites working files",
        "read another version with `git show REV:PATH`",
    ),
    "switch": (
        "Switching branches moves HEAD and overwrites working files",
        "read another version with `git show REV:PATH`",
    ),
    "restore": (
        "Restore overwrites working files or the index",
        "read the committed version with `git show HEAD:PATH`",
    ),
    "add": (
        "Staging changes modifies the index",
        "leave changes unstaged; SuperQode records working-tree changes itself",
    ),
    "rm": (
        "git rm deletes files and modifies the index",
        "delete files directly if needed; the index stays as it is",
    ),
    "mv": (
        "git mv renames files in the index",
        "move files directly if needed; the index stays as it is",
    ),
    "stash": (
        "Stash rewrites the working tree and the stash ref",
        "inspect with `git stash list` / `git stash show`",
    ),
    "merge": (
        "Merging creates commits and moves refs",
        "preview with `git merge-tree` or `git diff A...B`",
    ),
    "rebase": ("Rebasing rewrites repository history", "inspect with `git log` / `git range-diff`"),
    "cherry-pick": (
        "Cherry-picking creates commits",
        "apply a diff to the working tree with `git diff A B | git apply`",
    ),
    "revert": ("Reverting creates commits", "show the inverse change with `git diff B A`"),
    "am": (
        "git am creates commits from patches",
        "apply the patch to the working tree with `git apply`",
    ),
    "gc": (
        "Garbage collection can permanently delete unreachable objects",
        "use `git count-objects -v` to inspect the object store",
    ),
    "prune": (
        "Pruning permanently deletes unreachable objects",
        "use `git fsck --unreachable` to inspect",
    ),
    "prune-packed": ("Pruning rewrites the object store", "nothing to do inside a sandbox"),
    "repack": ("Repacking rewrites the object store", "nothing to do inside a sandbox"),
    "pack-refs": ("Packing refs rewrites the ref store", "read refs with `git show-ref`"),
    "maintenance": (
        "Maintenance rewrites the object store and config",
        "nothing to do inside a sandbox",
    ),
    "commit-graph": (
        "Writing the commit graph changes repository files",
        "nothing to do inside a sandbox",
    ),
    "multi-pack-index": (
        "Writing the multi-pack index changes repository files",
        "nothing to do inside a sandbox",
    ),
    "update-ref": (
        "Direct ref updates rewrite repository state",
        "read refs with `git show-ref` / `git rev-parse`",
    ),
    "update-index": (
        "Updating the index modifies repository state",
        "read the index with `git ls-files -s`",
    ),
    "read-tree": ("read-tree rewrites the index", "read trees with `git ls-tree`"),
    "checkout-index": (
        "checkout-index overwrites working files",
        "read files with `git show :PATH`",
    ),
    "write-tree": (
        "write-tree writes objects into the repository",
        "read the index with `git ls-files -s`",
    ),
    "commit-tree": ("commit-tree creates commits", "leave changes uncommitted"),
    "mktree": ("mktree writes objects into the repository", "read trees with `git ls-tree`"),
    "mktag": ("mktag writes objects into the repository", "read tags with `git tag -l`"),
    "unpack-objects": (
        "Unpacking writes objects into the repository",
        "nothing to do inside a sandbox",
    ),
    "index-pack": ("index-pack writes into the object store", "use `git verify-pack`"),
    "fast-import": ("fast-import writes objects and refs", "nothing to do inside a sandbox"),
    "filter-branch": (
        "filter-branch rewrites repository history",
        "inspect history with `git log`",
    ),
    "filter-repo": ("filter-repo rewrites repository history", "inspect history with `git log`"),
    "replay": ("replay rewrites history onto new bases", "inspect with `git log`"),
    "update-server-info": (
        "update-server-info writes repository files",
        "nothing to do inside a sandbox",
    ),
    "mergetool": (
        "mergetool writes merge results into the working tree and index",
        "inspect conflicts with `git diff`",
    ),
    "citool": ("citool creates commits", "leave changes uncommitted"),
    "gui": ("git gui can commit and change refs", "use `git status` / `git diff`"),
    "send-email": ("send-email sends mail", "write patches with `git format-patch`"),
    "send-pack": ("send-pack pushes to another repository", "propose changes as patches"),
    "receive-pack": ("receive-pack accepts pushes into a repository", "nothing to do here"),
    "upload-pack": ("upload-pack serves a repository to other processes", "nothing to do here"),
    "upload-archive": ("upload-archive serves a repository", "use `git archive`"),
    "daemon": ("git daemon serves repositories over the network", "nothing to do here"),
    "instaweb": ("instaweb starts a web server", "use `git log`"),
    "http-backend": ("http-backend serves repositories", "nothing to do here"),
    "http-fetch": ("http-fetch downloads objects into the repository", "nothing to do here"),
    "http-push": ("http-push publishes to a remote", "propose changes as patches"),
    "imap-send": ("imap-send uploads mail", "write patches with `git format-patch`"),
    "credential": ("Credential commands read or store secrets", "nothing to do here"),
    "credential-store": ("Credential helpers read or store secrets", "nothing to do here"),
    "credential-cache": ("Credential helpers read or store secrets", "nothing to do here"),
    "shell": ("git shell runs restricted commands for remotes", "nothing to do here"),
    "svn": ("git svn rewrites refs and contacts remotes", "nothing to do here"),
    "p4": ("git p4 rewrites refs and contacts remotes", "nothing to do here"),
    "cvsimport": ("cvsimport writes commits", "nothing to do here"),
    "cvsserver": ("cvsserver serves the repository", "nothing to do here"),
    "cvsexportcommit": ("cvsexportcommit writes to another repository", "nothing to do here"),
    "archimport": ("archimport writes commits", "nothing to do here"),
    "quiltimport": ("quiltimport writes commits", "apply patches with `git apply`"),
    "submodule--helper": (
        "Internal submodule plumbing changes repository state",
        "use `git submodule status`",
    ),
    "scalar": ("scalar re-configures the repository", "nothing to do here"),
}

_REDIRECT_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_EXEC_PATH",
)
# Setting these would replace the guard's own per-process git configuration.
_CONFIG_ENV = ("GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG", "GIT_CONFIG_SYSTEM")
# Environment variables whose value git runs as a shell command.
_COMMAND_ENV = (
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_PAGER",
    "PAGER",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_EXTERNAL_DIFF",
    "GIT_PROXY_COMMAND",
    "EDITOR",
    "VISUAL",
)
INTERNAL_ENV = "SUPERQODE_INTERNAL_GIT"

# Config keys whose value git runs as a shell command (lower-case glob patterns).
_COMMAND_KEYS = (
    "core.pager",
    "pager.*",
    "core.editor",
    "sequence.editor",
    "core.sshcommand",
    "core.gitproxy",
    "core.askpass",
    "diff.external",
    "diff.*.command",
    "diff.*.textconv",
    "difftool.*.cmd",
    "mergetool.*.cmd",
    "merge.*.driver",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "credential.helper",
    "credential.*.helper",
    "gpg.program",
    "gpg.*.program",
    "uploadpack.packobjectshook",
    "core.alternaterefscommand",
    "sendemail.*",
    "web.browser",
    "browser.*.cmd",
    "browser.*.path",
    "man.*.cmd",
    "man.*.path",
    "remote.*.receivepack",
    "remote.*.uploadpack",
    "remote.*.vcs",
    "ssh.variant",
    "instaweb.*",
    "gui.*",
    "guitool.*.cmd",
    "sequence.*",
)
# Config keys that redirect git to other state or disable the guard.
_REDIRECT_KEYS = {
    "core.hookspath": (
        "Overriding core.hooksPath would switch off the guard's git hooks",
        "run the command without the -c core.hooksPath override",
    ),
    "core.worktree": (
        "Overriding core.worktree points git at another working tree",
        "run git from inside the sandbox",
    ),
    "core.bare": (
        "Overriding core.bare changes where git looks for the repository",
        "run git from inside the sandbox",
    ),
    "include.path": (
        "Including another config file could switch off the guard",
        "pass settings with -c KEY=VALUE",
    ),
    "core.fsmonitor": ("core.fsmonitor runs an arbitrary program", "leave core.fsmonitor unset"),
    "core.sharedrepository": (
        "Changing core.sharedRepository rewrites file modes",
        "leave it unset",
    ),
}
_REDIRECT_KEY_GLOBS = (
    ("includeif.*", "Conditional includes could switch off the guard"),
    ("protocol.*", "Re-enabling git transports could reach other repositories"),
    ("extensions.*", "Repository extensions change how git reads the repository"),
)

_GLOBAL_WITH_VALUE = {
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--config-env",
    "--attr-source",
    "--list-cmds",
}
_GLOBAL_FLAGS = {
    "-p",
    "--paginate",
    "-P",
    "--no-pager",
    "--no-replace-objects",
    "--no-lazy-fetch",
    "--no-optional-locks",
    "--no-advice",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--html-path",
    "--man-path",
    "--info-path",
    "--version",
    "-v",
    "--help",
    "-h",
}


_SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def _quote(argv: Sequence[str]) -> str:
    out = []
    for a in argv:
        a = a.replace(DYN, "$(...)")
        if a and all(c in _SAFE_CHARS for c in a):
            out.append(a)
        else:
            out.append("'" + a.replace("'", "'\"'\"'") + "'")
    return " ".join(out)


def _glob(text: str, pattern: str) -> bool:
    """fnmatch for the guard's own key tables (no re import on the hot path)."""
    if "*" not in pattern:
        return text == pattern
    pre, suf = pattern.split("*", 1)
    return len(text) >= len(pre) + len(suf) and text.startswith(pre) and text.endswith(suf)


# --------------------------------------------------------------------------
# Configuration (duck-typed: anything with enabled/allow/block)


def _cfg_lists(cfg: Any) -> tuple[bool, list[list[str]], list[list[str]]]:
    if cfg is None:
        return True, [], []
    enabled = bool(getattr(cfg, "enabled", True))
    return (
        enabled,
        _patterns(getattr(cfg, "allow", ()) or ()),
        _patterns(getattr(cfg, "block", ()) or ()),
    )


def _patterns(items: Iterable[str]) -> list[list[str]]:
    out = []
    for item in items:
        if "'" in item or '"' in item or "\\" in item:
            import shlex  # only for quoted patterns: shlex costs the shim an `re` import

            try:
                words = shlex.split(item)
            except ValueError:
                words = item.split()
        else:
            words = item.split()
        if words and os.path.basename(words[0]) == "git":
            words = words[1:]
        if words:
            out.append(words)
    return out


def _matches(pattern: list[str], sub: str, args: Sequence[str]) -> str | None:
    """``pattern`` = [SUBCOMMAND, WORD...]: the subcommand must match and every
    further word must match some argument (fnmatch, any order)."""
    import fnmatch

    if not fnmatch.fnmatchcase(sub, pattern[0]):
        return None
    for word in pattern[1:]:
        if not any(fnmatch.fnmatchcase(a, word) for a in args):
            return None
    return "git " + " ".join(pattern)


# --------------------------------------------------------------------------
# One git invocation


def check_git_argv(
    argv: Sequence[str],
    cfg: Any = None,
    *,
    env: Mapping[str, str] | None = None,
    config: Sequence[tuple[str, str | None]] = (),
    resolve_alias: Any = None,
) -> GuardVerdict:
    """Judge one git invocation. ``argv`` may start with the ``git`` word or not.

    ``env``: the environment git will see (assignments in front of the command,
    or the real environment in the shim). ``config``: (key, value) settings
    given outside argv (GIT_CONFIG_COUNT entries), judged like ``-c``.
    ``resolve_alias(name) -> str | None``
    looks up aliases from git's configuration for unknown subcommands (the shim
    passes one; without it an unknown subcommand is blocked).
    """
    argv = list(argv)
    if argv and _is_git_word(argv[0]):
        first = os.path.basename(argv[0]).removesuffix(".exe")
        argv = argv[1:]
        if first.startswith("git-"):  # dashed form: /usr/lib/git-core/git-commit
            argv = [first[4:], *argv]
    display = _quote(["git", *argv])
    enabled, allow, block = _cfg_lists(cfg)
    if not enabled:
        return GuardVerdict(True, "the git guard is disabled (qe.git_guard.enabled)", "", display)
    judge = _Judge(display, allow, block, env or {}, resolve_alias)
    judge.config.extend(config)
    return judge.run(argv)


class _Judge:
    def __init__(self, display, allow, block, env, resolve_alias):
        self.display = display
        self.allow = allow
        self.block = block
        self.env = env
        self.resolve_alias = resolve_alias
        self.config: list[tuple[str, str | None]] = []

    def verdict(self, ok: bool, reason: str, suggestion: str = "") -> GuardVerdict:
        return GuardVerdict(ok, reason, suggestion, self.display)

    def run(self, argv: list[str]) -> GuardVerdict:
        bad = self._check_env()
        if bad:
            return bad
        i = 0
        while i < len(argv):
            a = argv[i]
            if a in ("--git-dir", "--work-tree", "--bare", "--super-prefix") or a.startswith(
                ("--git-dir=", "--work-tree=", "--super-prefix=")
            ):
                return self.verdict(
                    False,
                    f"{a.split('=')[0]} points git at another repository, bypassing the sandbox",
                    "run git from inside the sandbox without --git-dir/--work-tree",
                )
            if a.startswith("--exec-path="):
                return self.verdict(
                    False,
                    "--exec-path=DIR makes git run programs from another directory",
                    "run git without --exec-path",
                )
            if a == "-c":
                if i + 1 >= len(argv):
                    return self.verdict(True, "incomplete command (git will refuse it)")
                self._add_config(argv[i + 1])
                i += 2
                continue
            if a.startswith("-c") and len(a) > 2:
                self._add_config(a[2:])
                i += 1
                continue
            if a == "--config-env" or a.startswith("--config-env="):
                spec = (
                    a.split("=", 1)[1] if "=" in a else (argv[i + 1] if i + 1 < len(argv) else "")
                )
                key = spec.split("=", 1)[0]
                envvar = spec.split("=", 1)[1] if "=" in spec else ""
                self.config.append((key, self.env.get(envvar, DYN)))
                i += 1 if "=" in a else 2
                continue
            if a in _GLOBAL_WITH_VALUE:
                i += 2
                continue
            if a.startswith(tuple(k + "=" for k in _GLOBAL_WITH_VALUE if k.startswith("--"))):
                i += 1
                continue
            if a.startswith("-C") and len(a) > 2:
                i += 1
                continue
            if a in _GLOBAL_FLAGS or a == "--exec-path":
                i += 1
                continue
            break
        bad = self._check_config()
        if bad:
            return bad
        rest = argv[i:]
        if not rest:
            return self.verdict(True, "no git command (prints help or version)")
        return self._subcommand(rest[0], rest[1:], depth=0)

    # -- environment and -c

    def _check_env(self) -> GuardVerdict | None:
        for name in _REDIRECT_ENV:
            if name in self.env:
                return self.verdict(
                    False,
                    f"{name} points git at another repository, bypassing the sandbox",
                    f"run git without {name}",
                )
        for name in self.env:
            if name in _CONFIG_ENV or name.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")):
                return self.verdict(
                    False,
                    f"{name} would replace the guard's git configuration",
                    "pass settings with -c KEY=VALUE instead",
                )
            if name == INTERNAL_ENV:
                return self.verdict(
                    False,
                    f"{INTERNAL_ENV} is reserved for SuperQode's own git calls",
                    "run git without it",
                )
        for name in _COMMAND_ENV:
            value = self.env.get(name)
            if value and _command_is_blocked(value):
                return self.verdict(
                    False, f"{name} runs a command that the guard blocks", f"unset {name}"
                )
        return None

    def _add_config(self, spec: str) -> None:
        key, sep, value = spec.partition("=")
        self.config.append((key, value if sep else None))

    def _check_config(self) -> GuardVerdict | None:
        for key, value in self.config:
            k = key.lower()
            if DYN in k:
                return self.verdict(
                    False,
                    "a -c override whose key is computed at run time",
                    "spell the key out",
                )
            if k in _REDIRECT_KEYS:
                if k == "core.fsmonitor" and (value or "").lower() in (
                    "false",
                    "0",
                    "no",
                    "off",
                    "",
                ):
                    continue
                reason, suggestion = _REDIRECT_KEYS[k]
                return self.verdict(False, reason, suggestion)
            for glob, reason in _REDIRECT_KEY_GLOBS:
                if _glob(k, glob):
                    return self.verdict(False, reason, f"run git without -c {key}")
            if any(_glob(k, g) for g in _COMMAND_KEYS) and (
                value is None or DYN in value or _command_is_blocked(value)
            ):
                return self.verdict(
                    False,
                    f"-c {key} runs a command that the guard blocks",
                    f"run git without -c {key}",
                )
        return None

    def _alias(self, name: str) -> str | None:
        for key, value in reversed(self.config):
            if key.lower() == f"alias.{name.lower()}":
                return value if value is not None else ""
        if self.resolve_alias is not None:
            return self.resolve_alias(name)
        return None

    # -- the subcommand

    def _subcommand(self, sub: str, args: list[str], depth: int) -> GuardVerdict:
        if DYN in sub:
            return self.verdict(
                False,
                "the git command is computed at run time, so it cannot be checked",
                "spell the git command out",
            )
        for pattern in self.block:
            hit = _matches(pattern, sub, args)
            if hit:
                return self.verdict(
                    False,
                    f"blocked by qe.git_guard.block: {hit}",
                    "remove the pattern from qe.git_guard.block to allow it",
                )
        for pattern in self.allow:
            hit = _matches(pattern, sub, args)
            if hit:
                return self.verdict(True, f"allowed by qe.git_guard.allow: {hit}")
        if args in (["-h"], ["--help"]) or sub == "help":
            return self.verdict(True, "help only")
        if sub in _READ_ONLY:
            return self._read_only(sub, args)
        rule = _RULES.get(sub)
        if rule is not None:
            result = rule(args)
            if result is None:
                return self.verdict(True, f"read-only use of git {sub}")
            return self.verdict(False, *result)
        if sub in _R:
            return self.verdict(False, *_R[sub])
        expansion = self._alias(sub)
        if expansion is not None:
            if depth > 8:
                return self.verdict(False, "alias expansion loops", "define the alias directly")
            if expansion.startswith("!"):
                return self.verdict(
                    False,
                    f"alias {sub!r} runs a shell command (`{expansion[1:]}`)",
                    "run the underlying command directly",
                )
            import shlex

            try:
                words = shlex.split(expansion)
            except ValueError:
                return self.verdict(False, f"alias {sub!r} cannot be parsed", "run git directly")
            if not words:
                return self.verdict(False, f"alias {sub!r} is empty", "run git directly")
            # An alias may itself carry -c options etc.; judge the expansion fully.
            inner = _Judge(self.display, self.allow, self.block, {}, self.resolve_alias)
            inner.config = list(self.config)
            v = inner._run_alias(words + args, depth + 1)
            return v
        return self.verdict(
            False,
            f"unknown git command {sub!r} (it could be an alias or an external program)",
            CONFIG_HINT,
        )

    def _run_alias(self, argv: list[str], depth: int) -> GuardVerdict:
        i = 0
        while i < len(argv) and argv[i].startswith("-"):
            a = argv[i]
            if a == "-c" and i + 1 < len(argv):
                self._add_config(argv[i + 1])
                i += 2
                continue
            if a in ("--git-dir", "--work-tree") or a.startswith(("--git-dir=", "--work-tree=")):
                return self.verdict(
                    False,
                    f"{a.split('=')[0]} points git at another repository",
                    "run git from inside the sandbox",
                )
            i += 2 if a in _GLOBAL_WITH_VALUE else 1
        bad = self._check_config()
        if bad or i >= len(argv):
            return bad or self.verdict(True, "alias without a command")
        return self._subcommand(argv[i], argv[i + 1 :], depth)

    def _read_only(self, sub: str, args: list[str]) -> GuardVerdict:
        # Options of read-only commands that run programs.
        runs = {
            "grep": ("-O", "--open-files-in-pager"),
            "difftool": ("-x", "--extcmd", "-t", "--tool"),
            "ls-remote": ("--upload-pack", "-u"),
            "archive": ("--exec",),
        }.get(sub, ())
        for j, a in enumerate(args):
            if a == "--":
                break
            for opt in runs:
                value = None
                if a == opt:
                    value = args[j + 1] if j + 1 < len(args) else ""
                elif a.startswith(opt + "=") or (
                    len(opt) == 2 and a.startswith(opt) and len(a) > 2
                ):
                    value = a[len(opt) + (1 if a.startswith(opt + "=") else 0) :]
                if (
                    value is not None
                    and opt not in ("-t", "--tool")
                    and (DYN in value or _command_is_blocked(value))
                ):
                    return self.verdict(
                        False,
                        f"git {sub} {opt} runs a command the guard blocks",
                        f"run git {sub} without {opt}",
                    )
        if sub == "archive" and any(a == "--remote" or a.startswith("--remote=") for a in args):
            return self.verdict(
                False,
                "git archive --remote contacts another repository",
                "archive the sandbox's own commits",
            )
        return self.verdict(True, f"git {sub} only reads the repository")


# --------------------------------------------------------------------------
# Subcommands whose safety depends on their arguments. Each returns None when
# the invocation only reads, else (reason, suggestion).


def _split(args: Sequence[str], with_value: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """(options, positionals); stops option parsing at ``--``."""
    with_value = set(with_value)
    opts, pos = [], []
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


# --------------------------------------------------------------------------
# Shell command lines


def _is_git_word(word: str) -> bool:
    base = os.path.basename(word)
    if base in ("git", "git.exe"):
        return True
    return base.startswith("git-") and base[4:].removesuffix(".exe") in _KNOWN_SUBCOMMANDS


_KNOWN_SUBCOMMANDS = _READ_ONLY | set(_R) | set(_RULES)


def check_command_line(cmd: str | Sequence[str], cfg: Any = None) -> list[GuardVerdict]:
    """Every git invocation found in ``cmd`` (a shell string, or an argv list of
    one command), each with its verdict. Empty when no git runs."""
    _load_re()
    out: list[GuardVerdict] = []
    if isinstance(cmd, str):
        _Shell(cfg, out, 0).script(cmd)
    else:
        _Shell(cfg, out, 0).simple(list(cmd), {})
    return out


def command_is_blocked(cmd: str | Sequence[str], cfg: Any = None) -> GuardVerdict | None:
    """The first blocking verdict in ``cmd``, or None."""
    for v in check_command_line(cmd, cfg):
        if not v.allowed:
            return v
    return None


def _command_is_blocked(text: str) -> bool:
    if DYN in text:
        return True
    return command_is_blocked(text) is not None


_OPS = ("&&", "||", ";;", "|&", ";", "&", "|", "(", ")")
_REDIRS = ("<<<", "<<-", "&>>", "<<", ">>", "<&", ">&", "&>", ">|", "<>", "<", ">")
_RESERVED = {
    "!",
    "{",
    "}",
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "do",
    "done",
    "while",
    "until",
    "for",
    "case",
    "esac",
    "in",
    "function",
    "select",
    "coproc",
}
_NON_EXEC = {
    "echo",
    "printf",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "cat",
    "less",
    "more",
    "man",
    "which",
    "whereis",
    "type",
    "test",
    "[",
    "[[",
    "ls",
    "head",
    "tail",
    "wc",
    "true",
    "false",
    ":",
    "apt",
    "apt-get",
    "brew",
    "dnf",
    "yum",
    "pip",
    "pip3",
    "cd",
    "pwd",
    "read",
    "hash",
    "alias",
    "unalias",
    "unset",
    "help",
}
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish"}


class _Lexer:
    """Splits a shell script into words and operators. Substitutions
    (``$(...)``, backticks, ``<(...)``) are collected for a separate check and
    leave DYN in the word; quotes are removed; redirections become ``("redir",
    op)`` tokens; here-document bodies are skipped."""

    def __init__(self, text: str):
        self.s = text
        self.i = 0
        self.tokens: list[tuple[str, str, bool]] = []  # (kind, value, was_quoted)
        self.subs: list[str] = []
        self.heredocs: list[tuple[str, int]] = []
        self.bodies: list[str] = []  # here-document texts, by HEREDOC reference

    def run(self):
        s = self.s
        word: list[str] = []
        have_word = False
        quoted = False

        def end_word():
            nonlocal word, have_word, quoted
            if have_word:
                self.tokens.append(("word", "".join(word), quoted))
            word, have_word, quoted = [], False, False

        while self.i < len(s):
            c = s[self.i]
            if c in " \t":
                end_word()
                self.i += 1
            elif c == "\n":
                end_word()
                self.tokens.append(("op", ";", False))
                self.i += 1
                self._skip_heredocs()
            elif c == "#" and not have_word:
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
            elif c == "\\":
                if self.i + 1 < len(s) and s[self.i + 1] == "\n":
                    self.i += 2
                    continue
                word.append(s[self.i + 1 : self.i + 2])
                have_word = True
                quoted = True
                self.i += 2
            elif c == "'":
                j = s.find("'", self.i + 1)
                j = len(s) if j < 0 else j
                word.append(s[self.i + 1 : j])
                have_word, quoted = True, True
                self.i = j + 1
            elif c == '"':
                self.i += 1
                have_word, quoted = True, True
                while self.i < len(s) and s[self.i] != '"':
                    d = s[self.i]
                    if d == "\\" and self.i + 1 < len(s) and s[self.i + 1] in '"\\$`\n':
                        word.append(s[self.i + 1])
                        self.i += 2
                    elif d == "$" and s.startswith("$(", self.i):
                        word.append(self._dollar_paren())
                    elif d == "`":
                        word.append(self._backtick())
                    elif d == "$" and s.startswith("${", self.i):
                        word.append(self._braced())
                    else:
                        word.append(d)
                        self.i += 1
                self.i += 1
            elif c == "$" and s.startswith("$(", self.i):
                word.append(self._dollar_paren())
                have_word = True
            elif c == "$" and s.startswith("${", self.i):
                word.append(self._braced())
                have_word = True
            elif c == "`":
                word.append(self._backtick())
                have_word = True
            elif c in "<>" and s.startswith("(", self.i + 1):
                self.i += 1
                inner = self._balanced("(", ")")
                self.subs.append(inner)
                word.append(DYN)
                have_word = True
            else:
                op = next((o for o in _REDIRS if s.startswith(o, self.i)), None)
                if op:
                    if have_word and not quoted and "".join(word).isdigit():
                        word, have_word = [], False  # fd number of a redirection
                    end_word()
                    self.i += len(op)
                    if op in ("<<", "<<-"):
                        self._heredoc_marker()
                    else:
                        self.tokens.append(("redir", op, False))
                    continue
                op = next((o for o in _OPS if s.startswith(o, self.i)), None)
                if op:
                    end_word()
                    self.tokens.append(("op", op, False))
                    self.i += len(op)
                    continue
                word.append(c)
                have_word = True
                self.i += 1
        end_word()
        return self

    def _balanced(self, open_: str, close: str) -> str:
        """Text up to the matching ``close``; self.i is just after ``open_``."""
        s = self.s
        depth = 1
        start = self.i + 1 if s[self.i] == open_ else self.i
        j = start
        while j < len(s):
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == "'":
                k = s.find("'", j + 1)
                j = len(s) if k < 0 else k + 1
                continue
            if c == '"':
                j += 1
                while j < len(s) and s[j] != '"':
                    j += 2 if s[j] == "\\" else 1
                j += 1
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    self.i = j + 1
                    return s[start:j]
            j += 1
        self.i = len(s)
        return s[start:]

    def _dollar_paren(self) -> str:
        if self.s.startswith("$((", self.i):
            self.i += 2
            self._balanced("(", ")")
            # arithmetic: the trailing ")" of "))"
            if self.i < len(self.s) and self.s[self.i] == ")":
                self.i += 1
            return DYN
        self.i += 1
        self.subs.append(self._balanced("(", ")"))
        return DYN

    def _backtick(self) -> str:
        s = self.s
        j = self.i + 1
        buf = []
        while j < len(s) and s[j] != "`":
            if s[j] == "\\" and j + 1 < len(s):
                buf.append(s[j + 1])
                j += 2
                continue
            buf.append(s[j])
            j += 1
        self.subs.append("".join(buf))
        self.i = j + 1
        return DYN

    def _braced(self) -> str:
        self.i += 1
        inner = self._balanced("{", "}")
        # ${VAR:-$(cmd)} and friends
        for m in re.finditer(r"\$\(", inner):
            lex = _Lexer(inner[m.start() :])
            lex.i = 0
            lex._dollar_paren()
            self.subs.extend(lex.subs)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", inner):
            return "${" + inner + "}"
        return DYN

    def _heredoc_marker(self):
        s = self.s
        while self.i < len(s) and s[self.i] in " \t":
            self.i += 1
        j = self.i
        while j < len(s) and s[j] not in " \t\n;&|<>()":
            j += 1
        self.heredocs.append((s[self.i : j].strip("'\"\\"), len(self.bodies)))
        self.tokens.append(("redir", "<<", False))
        self.tokens.append(("word", f"{HEREDOC}{len(self.bodies)}", True))
        self.bodies.append("")
        self.i = j

    def _skip_heredocs(self):
        while self.heredocs:
            marker, n = self.heredocs.pop(0)
            body = []
            while self.i < len(self.s):
                j = self.s.find("\n", self.i)
                j = len(self.s) if j < 0 else j
                line = self.s[self.i : j]
                self.i = j + 1
                if line.strip("\t") == marker:
                    break
                body.append(line)
            self.bodies[n] = "\n".join(body)


HEREDOC = "\x01heredoc:"
_VAR_RE: Any = None
_ASSIGN_RE: Any = None
re: Any = None


def _load_re() -> None:
    """Shell parsing needs ``re``; the shim's argv path does not, so it loads late."""
    global re, _VAR_RE, _ASSIGN_RE
    if _VAR_RE is None:
        import re as _re

        re = _re
        _VAR_RE = _re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
        _ASSIGN_RE = _re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\+?=(.*)$", _re.DOTALL)


class _Shell:
    def __init__(self, cfg, out: list[GuardVerdict], depth: int):
        self.cfg = cfg
        self.out = out
        self.depth = depth
        self.vars: dict[str, str] = {}
        self.exported: dict[str, str] = {}  # `export NAME=...`: seen by later commands
        self.allexport = False  # `set -a`
        self.aliases: dict[str, str] = {}

    def script(self, text: str) -> None:
        if self.depth > 12:
            self.out.append(
                GuardVerdict(
                    False, "command nests too deeply to check", "simplify the command", text[:80]
                )
            )
            return
        lex = _Lexer(text).run()
        for sub in lex.subs:
            _Shell(self.cfg, self.out, self.depth + 1).script(sub)
        commands: list[list[tuple[str, str, bool]]] = [[]]
        pipe_from: list[bool] = [False]
        for tok in lex.tokens:
            if tok[0] == "op":
                commands.append([])
                pipe_from.append(tok[1] in ("|", "|&"))
            else:
                commands[-1].append(tok)
        prev_words: list[str] = []
        prev_stdin: str | None = None
        for toks, piped in zip(commands, pipe_from):
            words, stdin = self._words(toks, lex)
            if not words:
                prev_words, prev_stdin = [], None
                continue
            if self._is_stdin_shell(words):
                if stdin is not None:  # `bash <<EOF` / `sh <<< '...'`: the text is a script
                    self._nested(stdin)
                elif piped and prev_words:
                    # `echo 'git commit' | sh`: what is piped into a shell is a script.
                    first = os.path.basename(prev_words[0])
                    if first in ("echo", "printf"):
                        args = [w for w in prev_words[1:] if not w.startswith("-")]
                        self._nested(" ".join(args).replace("\\n", "\n"))
                    elif first == "cat" and prev_stdin is not None and len(prev_words) == 1:
                        self._nested(prev_stdin)
                    else:
                        self._nested(DYN)
            self.simple(words, {})
            prev_words, prev_stdin = words, stdin

    def _is_stdin_shell(self, words: list[str]) -> bool:
        i = 0
        while i < len(words) and _ASSIGN_RE.match(words[i]):
            i += 1
        if i >= len(words):
            return False
        base = os.path.basename(words[i])
        if base in ("xargs",):
            return False
        return (
            base in _SHELLS
            and not any(
                w.startswith("-") and "c" in w[1:] for w in words[i + 1 :] if not w.startswith("--")
            )
            and not [w for w in words[i + 1 :] if not w.startswith("-")]
        )

    @staticmethod
    def aliases_split(text: str) -> list[str]:
        import shlex

        try:
            return shlex.split(text)
        except ValueError:
            return [DYN]

    def _words(self, toks, lex: _Lexer) -> tuple[list[str], str | None]:
        """The command's words after expansion, and the text a here-document or
        here-string feeds its standard input (None without one)."""
        words: list[str] = []
        stdin: str | None = None
        redir = None
        for kind, value, quoted in toks:
            if kind == "redir":
                redir = value
                continue
            if redir is not None:
                if value.startswith(HEREDOC):
                    stdin = lex.bodies[int(value[len(HEREDOC) :])]
                elif redir == "<<<":
                    stdin = value
                redir = None
                continue
            words.extend(self._expand(value, quoted))
        return words, stdin

    def _expand(self, word: str, quoted: bool) -> list[str]:
        if "$" not in word:
            return [word]
        whole = _VAR_RE.fullmatch(word)

        def sub(m):
            name = m.group(1) or m.group(2)
            return self.vars.get(name, DYN)

        value = _VAR_RE.sub(sub, word)
        if whole and not quoted:
            return value.split() or []
        return [value]

    def _nested(self, text: str) -> None:
        if DYN in text and not text.replace(DYN, "").strip():
            self.out.append(
                GuardVerdict(
                    False,
                    "a shell runs a script computed at run time",
                    "spell the commands out",
                    "sh",
                )
            )
            return
        _Shell(self.cfg, self.out, self.depth + 1).script(text)

    def simple(self, words: list[str], env: dict[str, str]) -> None:
        env = {**self.exported, **env}
        i = 0
        while i < len(words) and _ASSIGN_RE.match(words[i]):
            name, value = _ASSIGN_RE.match(words[i]).groups()
            env[name] = value
            i += 1
        words = words[i:]
        if not words:
            self.vars.update(env)  # plain assignments: remembered for $VAR
            for name, value in env.items():
                # Git's own variables may already be exported by the caller.
                if self.allexport or name.startswith("GIT_") or name == INTERNAL_ENV:
                    self.exported[name] = value
            return
        cmd = words[0]
        if cmd in self.aliases and self.depth < 12:
            alias, self.aliases = self.aliases, {k: v for k, v in self.aliases.items() if k != cmd}
            try:
                return self.simple(self.aliases_split(alias[cmd]) + words[1:], env)
            finally:
                self.aliases = alias
        base = os.path.basename(cmd)
        args = words[1:]
        if base == "alias":
            for a in args:
                name, sep, value = a.partition("=")
                if sep:
                    self.aliases[name] = value
            return
        if base == "set" and any(
            a == "-o"
            and j + 1 < len(args)
            and args[j + 1] == "allexport"
            or (a.startswith("-") and "a" in a[1:] and not a.startswith("--"))
            for j, a in enumerate(args)
        ):
            self.allexport = True
        if cmd in _RESERVED or base == "time":
            rest = args
            while rest and rest[0].startswith("-") and base == "time":
                rest = rest[1:]
            return self.simple(rest, env)
        if _is_git_word(cmd):
            self.out.append(check_git_argv(words, self.cfg, env=env))
            return
        if DYN in cmd:
            # `$(which git) commit`: if the arguments read like a git command, judge them.
            if args and (args[0] in _KNOWN_SUBCOMMANDS or args[0].startswith("-")):
                v = check_git_argv(args, self.cfg, env=env)
                if not v.allowed and args[0] in _KNOWN_SUBCOMMANDS - _READ_ONLY:
                    self.out.append(v)
            return
        if base in ("export", "local", "declare", "readonly", "typeset"):
            for a in args:
                m = _ASSIGN_RE.match(a)
                if m:
                    self.vars[m.group(1)] = m.group(2)
                    if base == "export" or "-x" in args or self.allexport:
                        self.exported[m.group(1)] = m.group(2)
                elif (base == "export" or "-x" in args) and a in self.vars:
                    self.exported[a] = self.vars[a]
            return
        handler = getattr(self, "_w_" + base.replace("-", "_").replace(".", "_"), None)
        if handler is not None:
            return handler(args, env)
        if base in _SHELLS:
            return self._shell(args, env)
        if base in _NON_EXEC:
            return
        # An unknown program: if it is handed `git ...` as arguments it may run it.
        for j, a in enumerate(args):
            if _is_git_word(a):
                self.simple(args[j:], env)
                return

    # -- wrappers: each finds the command it runs

    def _w_env(self, args, env):
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-i", "--ignore-environment", "-", "-0", "--null", "-v", "--debug"):
                i += 1
            elif a in ("-u", "--unset", "-C", "--chdir"):
                i += 2
            elif a.startswith(("--unset=", "--chdir=", "-u", "-C")) and len(a) > 2:
                i += 1
            elif a in ("-S", "--split-string") or a.startswith(("-S", "--split-string=")):
                import shlex

                if a in ("-S", "--split-string"):
                    text, j = (args[i + 1] if i + 1 < len(args) else ""), i + 2
                else:
                    text, j = (a.split("=", 1)[1] if a.startswith("--") else a[2:]), i + 1
                try:
                    split = shlex.split(text)
                except ValueError:
                    split = [DYN]
                return self.simple(split + list(args[j:]), env)
            elif a == "--":
                i += 1
                break
            elif _ASSIGN_RE.match(a):
                name, value = _ASSIGN_RE.match(a).groups()
                env[name] = value
                i += 1
            elif a.startswith("-"):
                i += 1
            else:
                break
        self.simple(list(args[i:]), env)

    def _skip_opts(self, args, with_value=(), stop_at_first=True):
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--":
                return i + 1
            if a in with_value:
                i += 2
            elif a.startswith("-") and len(a) > 1:
                i += 1
            else:
                return i
        return i

    def _w_command(self, args, env):
        if any(a in ("-v", "-V") for a in args[:2]):
            return
        self.simple(args[self._skip_opts(args) :], env)

    def _w_exec(self, args, env):
        self.simple(args[self._skip_opts(args, {"-a"}) :], env)

    def _w_builtin(self, args, env):
        self.simple(args, env)

    def _w_nohup(self, args, env):
        self.simple(args[self._skip_opts(args) :], env)

    _w_setsid = _w_nohup
    _w_unbuffer = _w_nohup

    def _w_nice(self, args, env):
        self.simple(args[self._skip_opts(args, {"-n", "--adjustment"}) :], env)

    def _w_timeout(self, args, env):
        i = self._skip_opts(args, {"-s", "--signal", "-k", "--kill-after"})
        self.simple(args[i + 1 :], env)  # skip DURATION

    def _w_sudo(self, args, env):
        i = self._skip_opts(args, {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"})
        rest = args[i:]
        while rest and _ASSIGN_RE.match(rest[0]):
            n, v = _ASSIGN_RE.match(rest[0]).groups()
            env[n] = v
            rest = rest[1:]
        self.simple(rest, env)

    _w_doas = _w_sudo

    def _w_stdbuf(self, args, env):
        self.simple(args[self._skip_opts(args, {"-i", "-o", "-e"}) :], env)

    def _w_ionice(self, args, env):
        self.simple(args[self._skip_opts(args, {"-c", "-n", "-p", "-P", "-u"}) :], env)

    def _w_chrt(self, args, env):
        i = self._skip_opts(args)
        self.simple(args[i + 1 :], env)  # skip PRIORITY

    def _w_taskset(self, args, env):
        i = self._skip_opts(args, {"-c", "--cpu-list"})
        if i < len(args) and not any(a in ("-c", "--cpu-list") for a in args[:i]):
            i += 1  # MASK
        self.simple(args[i:], env)

    def _w_flock(self, args, env):
        for j, a in enumerate(args):
            if a in ("-c", "--command") and j + 1 < len(args):
                return self._nested(args[j + 1])
        i = self._skip_opts(args, {"-w", "--timeout", "-E", "--conflict-exit-code"})
        self.simple(args[i + 1 :], env)  # skip LOCKFILE

    def _w_watch(self, args, env):
        i = self._skip_opts(args, {"-n", "--interval", "-d"})
        self._nested(" ".join(args[i:]))

    def _w_eval(self, args, env):
        self._nested(" ".join(args))

    def _w_su(self, args, env):
        for j, a in enumerate(args):
            if a in ("-c", "--command") and j + 1 < len(args):
                return self._nested(args[j + 1])

    def _w_script(self, args, env):
        self._w_su(args, env)

    def _w_xargs(self, args, env):
        i = 0
        with_value = {
            "-n",
            "-L",
            "-P",
            "-s",
            "-d",
            "-E",
            "-a",
            "-I",
            "--max-args",
            "--max-lines",
            "--max-procs",
            "--delimiter",
            "--arg-file",
            "-e",
            "-i",
        }
        while i < len(args) and args[i].startswith("-"):
            a = args[i]
            if a == "--":
                i += 1
                break
            i += 2 if a in with_value else 1
        rest = list(args[i:]) or ["echo"]
        # xargs appends its input: unknown words at run time.
        self.simple(rest + [DYN], env)

    _w_parallel = _w_xargs

    def _w_find(self, args, env):
        j = 0
        while j < len(args):
            if args[j] in ("-exec", "-execdir", "-ok", "-okdir"):
                k = j + 1
                while k < len(args) and args[k] not in (";", "+", "\\;"):
                    k += 1
                cmd = [DYN if a == "{}" else a.replace("{}", DYN) for a in args[j + 1 : k]]
                self.simple(cmd, env)
                j = k
            j += 1

    def _shell(self, args, env):
        i = 0
        command = None
        while i < len(args):
            a = args[i]
            if a == "--":
                i += 1
                break
            if a.startswith(("-", "+")) and len(a) > 1 and not a.startswith("--"):
                if "c" in a[1:]:
                    command = True
                if "o" in a[1:] or "O" in a[1:]:
                    i += 1
                i += 1
            elif a.startswith("--"):
                i += 1
            else:
                break
        if command:
            if i < len(args):
                self._nested(args[i])
            return

    def _w_busybox(self, args, env):
        if args:
            self.simple(args, env)
