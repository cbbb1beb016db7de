"""Splits a shell script into words and operators for the guard's shell
reader (``guard_shell``)."""

from __future__ import annotations

import re

from .guard_verdict import DYN

_OPS = ("&&", "||", ";;", "|&", ";", "&", "|", "(", ")")
_REDIRS = ("<<<", "<<-", "&>>", "<<", ">>", "<&", ">&", "&>", ">|", "<>", "<", ">")

HEREDOC = "\x01heredoc:"


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
