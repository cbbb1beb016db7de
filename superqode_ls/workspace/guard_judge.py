"""The git-argument judge: is one git invocation (global options, ``-c``
overrides, ``-c alias.*`` expansions, the environment it runs in) safe?

Stdlib only: this is the sandbox shim's Python path. A command git would run
(``-c core.pager=...``, ``GIT_EDITOR``) is judged by the shell reader, which is
loaded only then (and never imports this module back: it is handed the judge).
"""

from __future__ import annotations

import os

from .guard_policy import (
    _COMMAND_ENV,
    _COMMAND_KEYS,
    _CONFIG_ENV,
    _GLOBAL_FLAGS,
    _GLOBAL_WITH_VALUE,
    _R,
    _READ_ONLY,
    _REDIRECT_ENV,
    _REDIRECT_KEY_GLOBS,
    _REDIRECT_KEYS,
)
from .guard_rules import _RULES, _is_git_word
from .guard_verdict import (
    CONFIG_HINT,
    DYN,
    INTERNAL_ENV,
    GuardVerdict,
    _cfg_lists,
    _glob,
    _matches,
    _quote,
)

if False:  # typing only
    from collections.abc import Mapping, Sequence
    from typing import Any


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


def _command_is_blocked(text: str) -> bool:
    """A command git would run through the shell (a pager, an editor...)."""
    if DYN in text:
        return True
    from .guard_shell import scan  # only when a value is a command: it costs `re`

    return any(not v.allowed for v in scan(text, None, check_git_argv))
