"""The guard's shell reader: finds every git invocation in a shell command
line (``sh -c``, ``&&``/``||``/``;``/pipes, ``$(...)``, backticks, ``xargs``,
``env``/``nice``/``timeout`` wrappers, ``find -exec``, ``GIT_DIR=...`` prefixes,
absolute paths to git...) and hands each to a judge.

The judge is a parameter, not an import: ``guard_judge`` reads commands that
git itself would run (a pager, an editor) with this module, so importing it
back would be a cycle.
"""

from __future__ import annotations

import os
import re

from .guard_lexer import HEREDOC, _Lexer
from .guard_policy import _READ_ONLY
from .guard_rules import _KNOWN_SUBCOMMANDS, _is_git_word
from .guard_verdict import DYN, INTERNAL_ENV, GuardVerdict

if False:  # typing only
    from collections.abc import Callable, Sequence
    from typing import Any

    Judge = Callable[..., GuardVerdict]

_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\+?=(.*)$", re.DOTALL)

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


def scan(cmd: str | Sequence[str], cfg: Any, judge: Judge) -> list[GuardVerdict]:
    """Every git invocation in ``cmd`` (a shell string, or an argv list of one
    command), each with ``judge``'s verdict. Empty when no git runs."""
    out: list[GuardVerdict] = []
    if isinstance(cmd, str):
        _Shell(cfg, out, 0, judge).script(cmd)
    else:
        _Shell(cfg, out, 0, judge).simple(list(cmd), {})
    return out


class _Shell:
    def __init__(self, cfg, out: list[GuardVerdict], depth: int, judge: Judge):
        self.cfg = cfg
        self.judge = judge
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
            _Shell(self.cfg, self.out, self.depth + 1, self.judge).script(sub)
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
        _Shell(self.cfg, self.out, self.depth + 1, self.judge).script(text)

    def simple(self, words: list[str], env: dict[str, str]) -> None:
        env = {**self.exported, **env}
        i = 0
        while i < len(words) and (m := _ASSIGN_RE.match(words[i])):
            name, value = m.groups()
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
            self.out.append(self.judge(words, self.cfg, env=env))
            return
        if DYN in cmd:
            # `$(which git) commit`: if the arguments read like a git command, judge them.
            if args and (args[0] in _KNOWN_SUBCOMMANDS or args[0].startswith("-")):
                v = self.judge(args, self.cfg, env=env)
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
