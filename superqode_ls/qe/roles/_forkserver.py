"""A warm pytest launcher for mutant runs.

Copied into a scratch dir and run as a script with the current directory set
to one worker's scratch copy. It imports pytest and the installed pytest
plugins once (never the project's own code), then runs each request in a
forked child: the child pays for collecting and running the selected tests,
not for starting Python and importing pytest and its plugins again, which is
most of a small mutant run's cost.

Protocol (JSON lines): request {"args": [...], "timeout": s} on stdin,
reply {"rc": int, "timed_out": bool, "duration": s} on stdout. The first
reply, sent before any request, is {"ready": true} or {"ready": false,
"why": ...} when preloading touched the project's code (a project that is
itself a pytest plugin): the caller then starts a fresh process per mutant.
Children stay in this process's group, so killing the group ends them all.
"""

import contextlib
import importlib
import importlib.util
import json
import os
import signal
import sys
import time

# The caller's fresh-process command is `python -m pytest` from the copy.
sys.path.insert(0, os.getcwd())
ROOT = os.path.realpath(os.getcwd())


def _inside_project(path):
    return bool(path) and os.path.realpath(path).startswith(ROOT + os.sep)


def _preload():
    import pytest  # noqa: F401

    try:
        from importlib.metadata import entry_points

        eps = entry_points(group="pytest11")
    except Exception:  # noqa: BLE001
        eps = []
    for ep in eps:
        name = ep.value.split(":")[0].strip()
        top = name.split(".")[0]
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if spec is None or _inside_project(spec.origin or ""):
            continue
        # A broken plugin is pytest's to report, in the child.
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    for mod in list(sys.modules.values()):
        if _inside_project(getattr(mod, "__file__", None) or ""):
            return f"preloading imported the project's module {mod.__name__}"
    return None


def _kill_tree(pid):
    try:
        import psutil

        proc = psutil.Process(pid)
        victims = proc.children(recursive=True) + [proc]
        for p in victims:
            try:
                p.kill()
            except psutil.Error:
                pass
    except Exception:  # noqa: BLE001
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _child(args):
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    import pytest

    try:
        rc = int(pytest.main(args))
    except BaseException:  # noqa: BLE001
        rc = 3
    os._exit(rc)


def _serve(reply):
    for line in sys.stdin:
        req = json.loads(line)
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(req["args"])
        deadline = start + float(req["timeout"])
        timed_out, status = False, 0
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                timed_out = True
                _kill_tree(pid)
                _, status = os.waitpid(pid, 0)
                break
            time.sleep(0.01)
        rc = os.waitstatus_to_exitcode(status)
        reply({"rc": rc, "timed_out": timed_out, "duration": time.monotonic() - start})


def main():
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints from plugins must not break the protocol

    def reply(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    why = _preload()
    reply({"ready": why is None, "why": why})
    if why is None:
        _serve(reply)


if __name__ == "__main__":
    main()
