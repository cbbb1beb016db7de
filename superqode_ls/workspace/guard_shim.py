"""What runs inside the sandbox on every guarded git call: the ``git`` shim's
slow path and the guard's hooks (see ``guard_env`` for how they are installed).

Only ``os`` and ``sys`` at import time (plus the guard's judge, its tables and
verdict; not the shell reader): this costs every git call that is not on the
shim's shell fast path.
"""

from __future__ import annotations

import os
import sys

from .guard_judge import check_git_argv
from .guard_verdict import DYN, INTERNAL_ENV

if False:  # typing only
    from collections.abc import Mapping, Sequence
    from typing import Any

ALLOWED_BY_CONFIG = "allowed by qe.git_guard.allow"


def _env_config(env: Mapping[str, str]) -> list[tuple[str, str]]:
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        return []
    out = []
    for n in range(max(count, 0)):
        key = env.get(f"GIT_CONFIG_KEY_{n}")
        if key is None:
            break
        out.append((key, env.get(f"GIT_CONFIG_VALUE_{n}", "")))
    return out


def _set_env_config(env: dict[str, str], entries: Sequence[tuple[str, str]]) -> None:
    for name in [k for k in env if k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))]:
        del env[name]
    env["GIT_CONFIG_COUNT"] = str(len(entries))
    for n, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value


class _Cfg:
    def __init__(self, s: Mapping[str, Any]):
        self.enabled = s["enabled"]
        self.allow = s["allow"]
        self.block = s["block"]


def _json(value: Any) -> str:
    """Enough of json.dumps for a record (importing json would cost the shim
    an ``re`` import on every blocked call)."""
    if isinstance(value, str):
        out = ['"']
        for c in value:
            o = ord(c)
            if c in '"\\':
                out.append("\\" + c)
            elif o < 0x20 or 0xD800 <= o <= 0xDFFF:
                out.append(f"\\u{o:04x}")
            else:
                out.append(c)
        out.append('"')
        return "".join(out)
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_json(str(k))}: {_json(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(_json(v) for v in value) + "]"


def _record(
    settings: Mapping[str, Any],
    source: str,
    argv: Sequence[str],
    reason: str,
    suggestion: str,
    command: str,
) -> None:
    import time

    sys.stderr.write(f"superqode guard: blocked: {reason} ({suggestion})\n")
    rec = {
        "source": source,
        "time": time.time(),
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "argv": list(argv),
        "command": command,
        "reason": reason,
        "suggestion": suggestion,
    }
    try:
        fd = os.open(settings["events"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (_json(rec) + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except OSError:
        pass  # the refusal itself matters more than its record


def _exec_env(settings: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    out = dict(env)
    ours = [tuple(e) for e in settings["entries"]]
    others = [e for e in _env_config(out) if e not in ours]
    _set_env_config(out, others + ours)
    return out


def _config_params(text: str) -> list[tuple[str, str | None]]:
    """GIT_CONFIG_PARAMETERS: ``'key'='value' 'key2'`` as written by git."""
    if not text:
        return []
    import shlex

    try:
        words = shlex.split(text)
    except ValueError:
        return [(DYN, None)]
    out: list[tuple[str, str | None]] = []
    for w in words:
        k, sep, v = w.partition("=")
        out.append((k, v if sep else None))
    return out


def shim_main(settings: Mapping[str, Any]) -> None:
    argv = sys.argv[1:]
    real = settings["real_git"]
    env = os.environ
    if not settings["enabled"] or env.get(INTERNAL_ENV) == settings["token"]:
        os.execve(real, [real, *argv], _exec_env(settings, env))
    ours = [tuple(e) for e in settings["entries"]]
    extra = [e for e in _env_config(env) if e not in ours]
    extra += _config_params(env.get("GIT_CONFIG_PARAMETERS", ""))
    view = {
        k: v
        for k, v in env.items()
        if not k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
        and k not in ("GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS")
    }

    def resolve_alias(name: str) -> str | None:
        import subprocess

        proc = subprocess.run(
            [real, "config", "--get", f"alias.{name}"],
            env=_exec_env(settings, env),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        return (
            proc.stdout.decode("utf-8", "surrogateescape").strip() if proc.returncode == 0 else None
        )

    verdict = check_git_argv(
        argv, _Cfg(settings), env=view, config=extra, resolve_alias=resolve_alias
    )
    exec_env = _exec_env(settings, env)
    if not verdict.allowed and settings["protect"]:
        targets = target_paths(argv, view, os.getcwd())
        if targets is not None and not _protected(targets, settings["protect"]):
            verdict = None  # not one of the guarded repositories
    if verdict is not None and not verdict.allowed:
        _record(settings, "shim", argv, verdict.reason, verdict.suggestion, verdict.command)
        sys.exit(1)
    if verdict is not None and verdict.reason.startswith(ALLOWED_BY_CONFIG):
        exec_env[INTERNAL_ENV] = settings["token"]  # the hooks honour the user's allow list
    sys.stdout.flush()
    os.execve(real, [real, *argv], exec_env)


def hook_main(settings: Mapping[str, Any], name: str) -> None:
    env = os.environ
    if env.get(INTERNAL_ENV) == settings["token"] or not settings["enabled"]:
        sys.exit(0)
    if name == "reference-transaction" and (sys.argv[1:2] != ["prepared"]):
        sys.exit(0)
    git_dir = env.get("GIT_DIR") or _discover(os.getcwd()) or ".git"
    targets = _git_paths(os.path.abspath(git_dir))
    if settings["protect"] and not _protected(targets, settings["protect"]):
        _chain(settings, name, targets[-1])
        sys.exit(0)
    detail = ""
    if name == "reference-transaction":
        refs = [line.split()[-1] for line in sys.stdin.read().splitlines() if line.strip()]
        if not refs:
            sys.exit(0)
        detail = ", ".join(refs[:5]) + (" ..." if len(refs) > 5 else "")
        reason = f"ref updates are refused in this sandbox ({detail})"
    elif name in ("pre-push", "pre-receive", "update"):
        reason = "pushing is refused in this sandbox"
    elif name == "pre-auto-gc":
        reason = "automatic garbage collection is refused in this sandbox"
    else:
        reason = f"{name.replace('pre-', '')} is refused in this sandbox"
    _record(
        settings,
        f"hook:{name}",
        [name, *sys.argv[1:]],
        reason,
        "leave changes uncommitted; SuperQode collects sandbox changes as patches",
        f"git hook {name}",
    )
    sys.exit(1)


def _chain(settings: Mapping[str, Any], name: str, common_dir: str) -> None:
    """Run the repository's own hook, as git would have without the guard."""
    own = os.path.join(common_dir, "hooks", name)
    if os.path.realpath(own).startswith(os.path.realpath(settings["hooks_dir"]) + os.sep):
        return
    if os.path.isfile(own) and os.access(own, os.X_OK):
        os.execv(own, [own, *sys.argv[1:]])


# --------------------------------------------------------------------------
# Which repository a git command line works on


def _discover(start: str) -> str | None:
    d = os.path.abspath(start)
    while True:
        dotgit = os.path.join(d, ".git")
        if os.path.isfile(dotgit):
            try:
                with open(dotgit, encoding="utf-8") as f:
                    line = f.readline().strip()
            except OSError:
                return None
            if line.startswith("gitdir:"):
                return os.path.join(d, line[7:].strip())
            return None
        if os.path.isdir(dotgit):
            return dotgit
        if all(os.path.exists(os.path.join(d, x)) for x in ("HEAD", "objects", "refs")):
            return d  # a bare repository
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _git_paths(git_dir: str) -> list[str]:
    paths = [os.path.realpath(git_dir)]
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as f:
            common = f.read().strip()
        paths.append(os.path.realpath(os.path.join(git_dir, common)))
    except OSError:
        paths.append(paths[0])
    return paths


def target_paths(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> list[str] | None:
    """Real paths of the git dir and common dir ``argv`` would work on; [] when
    it works on no repository; None when that cannot be told."""
    argv = list(argv)
    if argv and os.path.basename(argv[0]) == "git":
        argv = argv[1:]
    git_dir = env.get("GIT_DIR")
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-C" and i + 1 < len(argv):
            cwd = os.path.join(cwd, argv[i + 1])
            i += 2
        elif a.startswith("-C") and len(a) > 2:
            cwd = os.path.join(cwd, a[2:])
            i += 1
        elif a == "--git-dir" and i + 1 < len(argv):
            git_dir = argv[i + 1]
            i += 2
        elif a.startswith("--git-dir="):
            git_dir = a.split("=", 1)[1]
            i += 1
        elif a in ("-c", "--work-tree", "--namespace", "--config-env", "--super-prefix"):
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            break
    sub = argv[i] if i < len(argv) else ""
    extra = [
        env[v]
        for v in ("GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_INDEX_FILE", "GIT_WORK_TREE")
        if env.get(v)
    ]
    if sub in ("init", "clone"):
        if any(a.startswith("--separate-git-dir") or a == "--bare" for a in argv[i:]):
            return None
        pos = [a for a in argv[i + 1 :] if not a.startswith("-")]
        if any(
            a
            in (
                "-c",
                "--config",
                "-o",
                "--origin",
                "-b",
                "--branch",
                "--template",
                "-u",
                "--upload-pack",
                "--reference",
                "--depth",
                "-j",
                "--jobs",
                "--separate-git-dir",
                "--object-format",
                "--shared",
                "--filter",
            )
            for a in argv[i + 1 :]
        ):
            return None  # options with values: positions are ambiguous
        target = (
            pos[0]
            if sub == "init" and pos
            else (pos[1] if sub == "clone" and len(pos) > 1 else ".")
        )
        d = os.path.join(cwd, target)
        while not os.path.exists(d):
            d = os.path.dirname(d)
        found = _discover(d)
    elif git_dir:
        found = os.path.join(cwd, git_dir)
    else:
        found = _discover(cwd)
    paths = [os.path.realpath(os.path.join(cwd, p)) for p in extra]
    if found:
        paths += _git_paths(found)
    return paths


def _protected(paths: Sequence[str], roots: Sequence[str]) -> bool:
    for p in paths:
        for r in roots:
            if p == r or p.startswith(r.rstrip(os.sep) + os.sep):
                return True
    return False
