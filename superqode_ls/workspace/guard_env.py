"""Enforcing the git guard for every process in a sandbox.

``install_guard(private_dir, cfg)`` writes, under ``private_dir/guard``:

- ``bin/git``: a shim put first on PATH. It judges the command with
  ``guard.check_git_argv`` and either execs the real git (found when the guard
  was installed) or prints ``superqode guard: blocked: <reason> (<suggestion>)``,
  appends a JSON line to ``events.jsonl`` and exits 1.
- ``hooks/``: ``reference-transaction`` refuses every ref update, and
  ``pre-commit``, ``pre-merge-commit``, ``pre-rebase``, ``pre-push``,
  ``pre-applypatch``, ``pre-receive``, ``update``, ``pre-auto-gc`` refuse too.
  They catch what gets past the shim (``/usr/bin/git commit``, ``env -u PATH``)
  because ``GuardInstall.env()`` points ``core.hooksPath`` at them through
  ``GIT_CONFIG_COUNT``: per-process configuration, so neither the user's
  ``.git/config`` nor ``.git/hooks`` is ever written.

Scope: with ``protect=[...]`` (git dirs / directories), the shim and hooks only
enforce the policy on repositories under those paths; git run on anything else
(a project's tests creating temporary repositories) passes, and the hooks chain
to that repository's own hooks. Without ``protect`` every repository is guarded.

SuperQode's own git calls are let through by ``GuardInstall.internal_env()``
(``SUPERQODE_INTERNAL_GIT`` set to a per-install token, not guessable by a
process that merely sets the variable). ``superqode_ls.workspace.git`` calls
already bypass both layers (``core.hooksPath=/dev/null``, config env scrubbed).

This module is stdlib-only: the shim and hooks import it on every call.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .guard import INTERNAL_ENV
from .guard_shim import _env_config, _set_env_config, hook_main, shim_main, target_paths

__all__ = ["GuardEvents", "GuardInstall", "hook_main", "install_guard", "shim_main", "target_paths"]

HOOKS = (
    "reference-transaction",
    "pre-commit",
    "pre-merge-commit",
    "pre-rebase",
    "pre-push",
    "pre-applypatch",
    "pre-receive",
    "update",
    "pre-auto-gc",
)
# Inherited variables that would send the sandbox's git somewhere else.
_DROP_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG_PARAMETERS",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_EXEC_PATH",
    INTERNAL_ENV,
)


@dataclass
class GuardInstall:
    private_dir: Path
    bin_dir: Path
    hooks_dir: Path
    events_file: Path
    real_git: str
    enabled: bool
    token: str
    config_entries: list[tuple[str, str]] = field(default_factory=list)
    events: GuardEvents = field(init=False)

    def __post_init__(self) -> None:
        self.events = GuardEvents(self.events_file)

    def env(self, base_env: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base_env`` (default: os.environ) with the shim first on PATH and the
        guard's git configuration added after any existing GIT_CONFIG_* entries."""
        env = dict(os.environ if base_env is None else base_env)
        for name in _DROP_ENV:
            env.pop(name, None)
        if not self.enabled:
            return env
        path = [
            p for p in env.get("PATH", os.defpath).split(os.pathsep) if p and p != str(self.bin_dir)
        ]
        env["PATH"] = os.pathsep.join([str(self.bin_dir), *path])
        existing = [e for e in _env_config(env) if e not in self.config_entries]
        _set_env_config(env, existing + list(self.config_entries))
        return env

    def internal_env(self) -> dict[str, str]:
        """Extra variables for SuperQode's own git calls inside the sandbox."""
        return {INTERNAL_ENV: self.token}


def find_real_git(exclude: Sequence[Path] = ()) -> str:
    skip = {os.path.realpath(p) for p in exclude}
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not d or os.path.realpath(d) in skip:
            continue
        cand = os.path.join(d, "git")
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            # Another SuperQode shim (nested sessions) is not the real git.
            try:
                with open(cand, "rb") as f:
                    if b"superqode git shim" in f.read(512):
                        continue
            except OSError:
                continue
            return os.path.realpath(cand)
    raise FileNotFoundError("git not found on PATH")


def install_guard(
    private_dir: Path, cfg: Any = None, *, protect: Sequence[Path] = ()
) -> GuardInstall:
    """Write the shim, hooks and settings under ``private_dir/guard``.

    ``cfg``: a GitGuardConfig-like object (enabled, allow, block) or None.
    ``protect``: repositories (git dirs or any directory) the policy applies to;
    empty means every repository.
    """
    root = Path(private_dir) / "guard"
    bin_dir, hooks_dir = root / "bin", root / "hooks"
    bin_dir.mkdir(parents=True, exist_ok=True)
    hooks_dir.mkdir(parents=True, exist_ok=True)
    events = root / "events.jsonl"
    events.touch()
    enabled = bool(getattr(cfg, "enabled", True)) if cfg is not None else True
    real_git = find_real_git(exclude=[bin_dir])
    token = secrets.token_hex(16)
    entries = [
        ("core.hooksPath", str(hooks_dir)),
        ("protocol.ext.allow", "never"),
        ("gc.auto", "0"),
        ("maintenance.auto", "false"),
        ("core.fsmonitor", "false"),
        ("receive.denyCurrentBranch", "refuse"),
    ]
    if not protect:
        entries.append(("protocol.allow", "never"))
    settings = {
        "real_git": real_git,
        "events": str(events),
        "token": token,
        "enabled": enabled,
        "allow": list(getattr(cfg, "allow", []) or []),
        "block": list(getattr(cfg, "block", []) or []),
        "protect": [os.path.realpath(p) for p in protect],
        "entries": entries,
        "hooks_dir": str(hooks_dir),
    }
    pkg_parent = str(Path(__file__).resolve().parents[2])
    lib_dir = root / "lib"
    lib_dir.mkdir(exist_ok=True)
    shim_py = lib_dir / "git-shim.py"
    shim_py.write_text(_python_body(pkg_parent, f"shim_main({settings!r})"), encoding="utf-8")
    _write_exec(bin_dir / "git", _shim_text(settings, shim_py))
    for name in HOOKS:
        _write_hook(hooks_dir / name, lib_dir, pkg_parent, f"hook_main({settings!r}, {name!r})")
    return GuardInstall(
        private_dir=Path(private_dir),
        bin_dir=bin_dir,
        hooks_dir=hooks_dir,
        events_file=events,
        real_git=real_git,
        enabled=enabled,
        token=token,
        config_entries=[(k, v) for k, v in entries],
    )


# Subcommands the shell fast path execs without starting Python: they only
# read, and take no option that runs a program (grep -O, difftool -x and
# ls-remote --upload-pack go through the full check).
FAST_READ_ONLY = (
    "status",
    "diff",
    "log",
    "show",
    "blame",
    "annotate",
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
    "whatchanged",
    "cherry",
    "range-diff",
    "var",
    "check-ignore",
    "check-attr",
    "check-ref-format",
    "count-objects",
    "show-branch",
    "--version",
    "help",
)
_FAST_GLOBALS = (
    "--no-pager",
    "-P",
    "-p",
    "--paginate",
    "--no-optional-locks",
    "--no-replace-objects",
    "--literal-pathspecs",
    "--no-advice",
)


def _python_body(pkg_parent: str, call: str) -> str:
    return (
        "# superqode git shim (generated by SuperQode LS; the git guard)\n"
        "import sys\n"
        f"sys.path.insert(0, {pkg_parent!r})\n"
        "from superqode_ls.workspace.guard_shim import hook_main, shim_main\n"
        f"{call}\n"
    )


def _shim_text(settings: dict, lib_script: Path) -> str:
    """The ``git`` shim: plain sh so that read-only calls (most of them) cost
    one sh start; everything else goes to the Python check."""
    import fnmatch

    q = shlex.quote
    blocked = [p[0] for p in _blocked_firsts(settings["block"])]
    fast = [c for c in FAST_READ_ONLY if not any(fnmatch.fnmatchcase(c, b) for b in blocked)]
    unset_vars = [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_EXEC_PATH",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG",
        "GIT_CONFIG_SYSTEM",
        INTERNAL_ENV,
    ]
    unset_test = "".join("${" + v + "+x}" for v in unset_vars)
    entries = settings["entries"]
    real = q(settings["real_git"])
    lines = [
        "#!/bin/sh",
        "# superqode git shim (generated by SuperQode LS; the git guard). Do not edit.",
    ]
    if not settings["enabled"]:
        lines.append(f'exec {real} "$@"')
        return "\n".join(lines) + "\n"
    special = {
        # Read-only forms of commands that can also write: each case returns 0
        # only when every argument is one the Python check would allow too.
        "branch": [
            (
                '      for a do case "$a" in -l|--list|-a|--all|-r|--remotes|-v|-vv|--verbose'
                "|--show-current|--no-color|--no-column) ;; *) return 1 ;; esac; done; return 0 ;;"
            )
        ],
        "tag": ['      for a do case "$a" in -l|--list) ;; *) return 1 ;; esac; done; return 0 ;;'],
        "remote": [
            '      case "${1-}" in show|get-url) return 0 ;; esac',
            '      for a do case "$a" in -v|--verbose) ;; *) return 1 ;; esac; done; return 0 ;;',
        ],
        "stash": ['      case "${1-}" in list|show) return 0 ;; esac; return 1 ;;'],
        "worktree": ['      [ "${1-}" = list ]; return ;;'],
        "config": [
            (
                '      case "${1-}" in --get|--get-all|--get-regexp|-l|--list|get|list) ;;'
                " *) return 1 ;; esac"
            ),
            (
                '      for a do case "$a" in --add|--unset|--unset-all|--replace-all|--rename-section'
                "|--remove-section|-e|--edit|-f|--file|--file=*|--blob|--blob=*|--global|--system"
                "|--worktree|--local|set|unset|edit) return 1 ;; esac; done; return 0 ;;"
            ),
        ],
    }
    special = {
        k: v for k, v in special.items() if not any(fnmatch.fnmatchcase(k, b) for b in blocked)
    }
    if fast or special:
        lines += [
            "fast() {",
            "  while [ $# -gt 0 ]; do",
            '    case "$1" in',
            "      -C) [ $# -ge 2 ] || return 1; shift ;;",
            f"      {'|'.join(_FAST_GLOBALS)}) ;;",
            "      *) break ;;",
            "    esac",
            "    shift",
            "  done",
            "  [ $# -gt 0 ] || return 1",
            "  sub=$1; shift",
            '  case "$sub" in',
        ]
        if fast:
            lines.append(f"    {'|'.join(fast)}) return 0 ;;")
        for name, body in special.items():
            lines.append(f"    {name})")
            lines += body
        lines += [
            "  esac",
            "  return 1",
            "}",
            f'if [ -z "{unset_test}" ] && [ "${{GIT_CONFIG_COUNT-}}" = {len(entries)} ] \\',
            f'   && [ "${{GIT_CONFIG_VALUE_0-}}" = {q(entries[0][1])} ] && fast "$@"; then',
            f'  exec {real} "$@"',
            "fi",
        ]
    lines.append(f'exec {q(sys.executable)} -IS {q(str(lib_script))} "$@"')
    return "\n".join(lines) + "\n"


def _blocked_firsts(block: list[str]) -> list[list[str]]:
    from .guard import _patterns

    return _patterns(block)


def _write_exec(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.replace(tmp, path)


def _write_hook(path: Path, lib_dir: Path, pkg_parent: str, call: str) -> None:
    py = sys.executable
    body = _python_body(pkg_parent, call)
    if " " not in py and len(py) < 120:
        _write_exec(path, f"#!{py} -IS\n{body}")
        return
    # A shebang cannot carry spaces or long paths: go through sh.
    script = lib_dir / f"{path.name}.py"
    script.write_text(body, encoding="utf-8")
    _write_exec(
        path,
        f'#!/bin/sh\n# superqode git hook\nexec {shlex.quote(py)} -IS {shlex.quote(str(script))} "$@"\n',
    )


# --------------------------------------------------------------------------
# Reading the records


class GuardEvents:
    """New ``git.blocked`` records since the last ``poll()``: dicts with
    source ("shim" or "hook:<name>"), time, pid, cwd, argv, command, reason,
    suggestion (no "type" key, so they can be passed as event data)."""

    def __init__(self, events_file: Path):
        self.path = Path(events_file)
        self._offset = 0

    def poll(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self._offset += end + 1
        out = []
        for line in data[: end + 1].splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                rec.pop("type", None)  # every record is a git.blocked event
                out.append(rec)
        return out


def remove_guard(private_dir: Path) -> None:
    shutil.rmtree(Path(private_dir) / "guard", ignore_errors=True)
