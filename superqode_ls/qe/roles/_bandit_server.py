"""A warm bandit: imports bandit and loads its plugins once, then forks one
child per request, which runs bandit's own command line.

Run by the language server as ``python -I _bandit_server.py`` with the
interpreter bandit is installed in (SuperQode's), inside a namespace sandbox
of its own where there is one (``_bandit_warm``): the whole file system
read-only (bandit prints its report on the pipe), secrets masked, no
network. Starting bandit costs about
0.12 s of CPU before it reads a file (imports, plugin discovery); a file run
in the editor waits on exactly that. Each request's child applies the
session's kernel barrier itself (the Landlock rules the supervisor would
apply: writes only beneath the session's folders; and reads only beneath
those and the interpreter's folders), moves to the session's
sandbox and environment, and runs ``bandit.cli.main.main()`` with the
request's arguments: the result is what the ``bandit`` command prints.

Protocol, JSON lines on stdin/stdout: first {"ready": true}; request
{"argv", "cwd", "env", "allow" (the session's folders), "abi", "timeout"
(seconds or null)} -> {"rc", "out", "err"}. rc 97: the barrier could not be
applied, or the request names no session (no "allow" or no "abi": fail
closed), nothing ran; rc -9: the child ran out of time and was killed here (in a pid
namespace its pid means nothing to the caller).

Stdlib and bandit only: it runs with ``-I``, outside SuperQode's package.
"""

import importlib.util
import json
import os
import selectors
import signal
import sys
import time

BARRIER_FAILED = 97


def _landlock():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, os.pardir, os.pardir, "workspace", "landlock.py")
    spec = importlib.util.spec_from_file_location("superqode_landlock", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _child(req, out_w, err_w, landlock):
    os.setpgid(0, 0)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the protocol is not bandit's input
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    try:
        allow = _session_folders(req)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req.get("env") or {})
        # Writes only beneath the session's folders, reads beneath those and
        # the interpreter's own: a request reads its session's tree, never
        # your project, HOME or another session's.
        landlock.restrict_self(allow, int(req["abi"]), read=_interpreter_paths())
    except (OSError, ValueError, TypeError, KeyError) as e:
        os.write(2, f"superqode barrier: cannot apply Landlock: {e}\n".encode())
        os._exit(BARRIER_FAILED)
    for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    from bandit.cli import main as bandit_main

    sys.argv = ["bandit", *req["argv"]]
    code = 0
    try:
        bandit_main.main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except BaseException as e:  # noqa: BLE001 - reported as bandit's own failure
        os.write(2, f"bandit crashed: {type(e).__name__}: {e}\n".encode())
        code = 2
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _session_folders(req):
    """The request's session folders; a request with none (no session behind
    it, or no Landlock to hold it) is refused, not run unconfined."""
    allow = req.get("allow")
    if (not isinstance(allow, list) or not allow or not req.get("abi")
            or not all(isinstance(p, str) and os.path.isabs(p) for p in allow)):
        raise ValueError("the request names no session to confine it to; refused")
    return allow


def _interpreter_paths():
    """What a child may read besides its session: the interpreter's and its
    packages' folders (bandit imports its formatters as it runs)."""
    paths = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
             *(p for p in sys.path if p and os.path.isabs(p))}
    return sorted(os.path.realpath(p) for p in paths if os.path.exists(p))


def _collect(out_r, err_r, pid, timeout):
    """The child's output; past ``timeout`` its process group is killed
    (what it wrote until then is kept)."""
    chunks = {out_r: [], err_r: []}
    sel = selectors.DefaultSelector()
    for fd in chunks:
        sel.register(fd, selectors.EVENT_READ)
    open_fds = set(chunks)
    deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
    while open_fds:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            for kill in (os.killpg, os.kill):  # (before its setpgid: the child alone)
                try:
                    kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            deadline = None  # the pipes close as the group dies
            continue
        for key, _ in sel.select(left):
            data = os.read(key.fd, 1 << 16)
            if data:
                chunks[key.fd].append(data)
            else:
                sel.unregister(key.fd)
                open_fds.discard(key.fd)
    sel.close()
    return b"".join(chunks[out_r]), b"".join(chunks[err_r])


def _reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    import bandit.cli.main  # noqa: F401 - the imports a request no longer pays
    from bandit.core import extension_loader  # noqa: F401 - plugins found once

    landlock = _landlock()
    _reply({"ready": True})
    for line in sys.stdin:
        req = json.loads(line)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(out_r)
            os.close(err_r)
            _child(req, out_w, err_w, landlock)
        os.close(out_w)
        os.close(err_w)
        out, err = _collect(out_r, err_r, pid, req.get("timeout"))
        os.close(out_r)
        os.close(err_r)
        _, status = os.waitpid(pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        _reply({"rc": rc, "out": out.decode("utf-8", "replace"),
                "err": err.decode("utf-8", "replace")[-4000:]})


if __name__ == "__main__":
    main()
