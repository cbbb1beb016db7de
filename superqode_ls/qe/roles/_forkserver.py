"""A warm mutant server: a pytest plugin that collects once and forks per mutant.

Copied into a scratch dir and loaded with ``-p superqode_forkserver`` into
the project's own ``pytest`` command (its interpreter, its plugins, its
configuration), run in one worker's scratch copy. pytest starts, imports the
tests (and through them the code under test) and collects them once; then,
instead of running them, this plugin's ``pytest_runtestloop`` serves requests:

* the code under test is imported in this parent process, and its function
  objects are indexed by (qualified name, first line);
* per mutant, the mutated file is compiled here; the functions whose code
  differs are listed; a forked child swaps those functions' ``__code__`` in
  place and runs only the already collected items that cover the line.

Forking per mutant keeps module state sound: whatever a mutant's tests do to
globals, registries or caches dies with the child, and the parent never runs
a test. A mutant that is not inside a function body (module or class level,
a default value) or that changes a closure's free variables cannot be
swapped; the reply says so and the caller runs it in a fresh process.

Protocol (JSON lines on the fds that were stdin/stdout when pytest started;
pytest's own output goes to stderr): first {"ready": true, "items": n,
"errors": k, "loaded", "at"} (wall clock when this plugin was loaded and
when collection ended: the start's split); then request {"file", "module", "source" (null: unmutated),
"tests", "timeout"} -> reply {"rc", "timed_out", "duration"} or
{"fallback": why}. rc: 0 every test passed, 1 a test failed, 3 the harness
broke. Before any mutant, request {"trace": [files], "shard": [k, n], "out",
"timeout"} runs shard k of n of the collected tests (whole test files) once
in a forked child that records (coverage.py, one context per test, only
``files`` measured) which lines of ``files`` each test runs and
writes {"tests": {nodeid: {"passed", "duration", "lines": {file: [line]}}},
"times": {step: monotonic seconds}} to ``out``: the line map, with no separate pass of the suite
(``_forktrace``, copied beside this plugin as ``superqode_forktrace``).

Workers: request {"spawn": [ids], "dirs": [dir per id], "trace"} makes this first
process fork one worker per id (the session collected once, shared copy on
write), each in its own directory, and from then on route each request
that names a worker ({"w": id, ...}) to it, running nothing itself;
{"w": id, "close": true} ends one; "trace": they trace first (coverage.py is
imported here once, before the forks). A worker says {"ready": true, "w": id,
"items": n, "errors": k} and tags every reply with its id; all write to
the one stdout, each reply in one write() under PIPE_BUF bytes, so none
interleave. A request for a worker that is gone gets {"w": id, "gone":
true}. It imports nothing from SuperQode: it runs in the project's Python.
"""

import contextlib
import gc
import importlib
import json
import os
import select
import signal
import sys
import time
import types
import warnings

import pytest

try:  # beside this plugin in the run's plugins folder, as it is loaded there
    import superqode_forktrace as _trace
except ImportError:  # imported as part of SuperQode (its tests)
    from . import _forktrace as _trace

_IN = _OUT = None
if __name__ == "superqode_forkserver":  # loaded by pytest -p, not imported by SuperQode
    # Taken before pytest's capture replaces fds 0 and 1.
    _IN = os.fdopen(os.dup(0), "r", encoding="utf-8")
    _OUT = os.dup(1)
    os.dup2(2, 1)  # terminal output must not reach the protocol

_ROOT = os.path.realpath(os.getcwd())
_LOADED = time.time()  # this plugin is loaded once pytest is imported: the start's split
_W = None  # this worker's id in a forked worker (see _spawn); None in the first process
# Forked workers share the first process's stdout: one write() of at most
# PIPE_BUF bytes to a pipe is never interleaved with another's.
_PIPE_BUF = 4096


def _reply(obj):
    if _W is not None:
        obj = {**obj, "w": _W}
    data = (json.dumps(obj) + "\n").encode()
    if len(data) > _PIPE_BUF and "fallback" in obj:
        return _reply({"fallback": str(obj["fallback"])[:200]})
    while data:
        data = data[os.write(_OUT, data):]


def _key(code):
    return (getattr(code, "co_qualname", code.co_name), code.co_firstlineno)


def _codes(code, out, dupes, parents, parent=None):
    """Every code object under ``code`` by key (``dupes``: keys seen twice,
    e.g. two lambdas on one line: never swapped; ``parents``: key -> the
    key of the code it is defined in)."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            k = _key(const)
            if k in out:
                dupes.add(k)
            out[k] = const
            parents[k] = parent
            _codes(const, out, dupes, parents, k)
    return out


def _is_function(code):
    # CO_OPTIMIZED | CO_NEWLOCALS: functions, lambdas, comprehensions; not
    # module or class bodies, which run once at import time.
    return code.co_flags & 0x3 == 0x3


def _shallow(code):
    """A code object with its nested code objects reduced to their keys:
    equal for two versions of a module or class body that differ only inside
    functions."""
    consts = tuple(("<code>",) + _key(c) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return (code.co_code, code.co_names, consts)


class _Target:
    """The code under test as imported here, and its live functions."""

    def __init__(self, path, module, source):
        self.path = path
        self.filename = module.__file__
        self.orig = compile(source, self.filename, "exec", dont_inherit=True)
        self.dupes = set()
        self.parents = {}
        self.codes = _codes(self.orig, {}, self.dupes, self.parents)
        self.live = {}
        real = os.path.realpath(self.filename)
        names = {}
        for obj in gc.get_objects():
            if type(obj) is types.FunctionType:
                fn = obj.__code__.co_filename
                if fn not in names:
                    names[fn] = os.path.realpath(fn) == real
                if names[fn]:
                    self.live.setdefault(_key(obj.__code__), []).append(obj)

    def swaps(self, source):
        """[(function, new code)] for a mutated source, or why not."""
        try:
            new = compile(source, self.filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as e:
            return f"does not compile: {e}"
        dupes = set()
        codes = _codes(new, {}, dupes, {})
        if not set(codes) <= set(self.codes):
            return "the mutant adds a function"
        if _shallow(new) != _shallow(self.orig):
            return "module-level code changes"
        out = []
        changed = set()
        for k, code in codes.items():
            old = self.codes[k]
            if code == old:
                continue
            if not _is_function(old):
                if _shallow(code) != _shallow(old):
                    return "class-level code changes"
                continue
            if k in dupes or k in self.dupes:
                return "ambiguous function"
            changed.add(k)
            for fn in self.live.get(k, ()):
                if fn.__code__ != old:
                    return "a live function differs from the file"
                if len(code.co_freevars) != len(fn.__closure__ or ()):
                    return "the mutant changes a closure"
                out.append((fn, code))
        # A removed nested code (a generator expression dropped with its
        # call) goes with its enclosing function, which changed too.
        changed.update(k for k in self.codes if k not in codes)
        for k in changed:
            # Code with no live function (a comprehension, a nested def) is
            # reached through a swapped enclosing function, or only at import.
            up = k
            while up is not None and not self.live.get(up):
                up = self.parents.get(up)
                if up is not None and not _is_function(self.codes[up]):
                    up = None
            if up is None:
                return "code that runs at import time changes"
        return out


def _find_module(path, name):
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if f and os.path.realpath(f) == path:
            return mod
    if not name:
        return None
    try:
        return importlib.import_module(name)
    except BaseException:  # noqa: BLE001 - the caller falls back to a fresh run
        return None


def _wait(pid, timeout):
    """(exit code, timed out); the child's whole tree is killed on a timeout."""
    deadline = time.monotonic() + timeout
    fd = None
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pass
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status), False
            left = deadline - time.monotonic()
            if left <= 0:
                _kill_tree(pid)
                _, status = os.waitpid(pid, 0)
                return os.waitstatus_to_exitcode(status), True
            if fd is not None:
                select.select([fd], [], [], left)
            else:
                time.sleep(min(0.005, left))
    finally:
        if fd is not None:
            os.close(fd)


def _kill_tree(pid):
    try:
        import psutil

        proc = psutil.Process(pid)
        for p in proc.children(recursive=True) + [proc]:
            try:
                p.kill()
            except psutil.Error:
                pass
    except Exception:  # noqa: BLE001 - no psutil in the project's environment
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _no_repr(*args, **kwargs):
    return "failed on a mutant"


def _child(session, items, swaps):
    try:
        for fn, code in swaps:
            fn.__code__ = code
        for item in items:
            # Only pass/fail matters here: formatting a failure's traceback
            # (source, locals, diffs) is most of a killed mutant's time.
            item.repr_failure = _no_repr
            item._repr_failure_py = _no_repr
        before = session.testsfailed
        hook = session.config.hook
        for i, item in enumerate(items):
            nextitem = items[i + 1] if i + 1 < len(items) else None
            hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            if session.testsfailed > before:
                # -x: the first failure decides; fixtures are still torn down
                # so the tests' own subprocesses and files do not outlive us.
                with contextlib.suppress(BaseException):
                    session._setupstate.teardown_exact(None)
                os._exit(1)
        os._exit(0)
    except BaseException:  # noqa: BLE001 - pytest.exit, KeyboardInterrupt, our bug
        os._exit(2 if session.testsfailed else 3)


def _fork(timeout, child, *args):
    start = time.monotonic()
    with warnings.catch_warnings():
        # Python 3.12 warns about fork() in a threaded process; a project
        # with `filterwarnings = error` must not turn that into a failure.
        warnings.simplefilter("ignore")
        pid = os.fork()
    if pid == 0:
        child(*args)
        os._exit(3)  # not reached: the child ends itself
    rc, timed_out = _wait(pid, timeout)
    _reply({"rc": rc, "timed_out": timed_out, "duration": time.monotonic() - start})


def _spawn(session, ids, dirs, routes):
    """Fork one worker per id, each serving the requests the first process
    routes to it (``_route``) from the same collected session (copy on
    write: no second start, import or collection), in its own directory."""
    for wid, cwd in zip(ids, dirs):
        r, w = os.pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fork() in a threaded process (3.12)
            pid = os.fork()
        if pid == 0:
            global _IN, _W
            try:
                os.close(w)
                for fd in routes.values():
                    os.close(fd)
                _IN.close()
                _IN, _W = os.fdopen(r, "r", encoding="utf-8"), wid
                if cwd:
                    # The tests' own relative files and writes: its own copy,
                    # as a worker started there would have. The code under
                    # test stays the first process's, already imported.
                    os.chdir(cwd)
                _reply({"ready": True, "items": len(session.items),
                        "errors": session.testsfailed})
                _serve(session)
            finally:
                os._exit(0)
        os.close(r)
        routes[wid] = w


def _route(session, req):
    """The first process, once asked to spawn: from then on it runs no test
    and only forks workers and passes each request to the worker it names
    (its replies go straight to the shared stdout). A worker closed or gone
    gets {"gone": true} for anything sent to it. At the end of its input it
    waits for its workers and exits."""
    routes = {}
    while True:
        if "spawn" in req:
            if req.get("trace"):
                _trace.preload()
            _spawn(session, req["spawn"], req.get("dirs") or [None] * len(req["spawn"]), routes)
        else:
            wid = req.get("w")
            fd = routes.get(wid)
            if fd is not None and req.get("close"):
                os.close(fd)
                del routes[wid]
            elif fd is not None:
                data = (json.dumps(req) + "\n").encode()
                try:
                    while data:
                        data = data[os.write(fd, data):]
                except OSError:
                    os.close(fd)
                    del routes[wid]
                    fd = None
            if fd is None and not req.get("close"):
                os.write(_OUT, (json.dumps({"w": wid, "gone": True}) + "\n").encode())
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        line = _IN.readline()
        if not line:
            # Workers end when their input closes; waiting for them makes
            # their CPU time part of this process's (what a bench counts).
            for fd in routes.values():
                os.close(fd)
            with contextlib.suppress(ChildProcessError):
                while True:  # every worker, also those closed earlier
                    os.waitpid(-1, 0)
            os._exit(0)
        req = json.loads(line)


def _serve(session):
    by_id = {item.nodeid: item for item in session.items}
    targets = {}
    for line in _IN:
        req = json.loads(line)
        if "spawn" in req and _W is None:
            _route(session, req)
            return
        if "trace" in req:
            files = {os.path.realpath(os.path.join(_ROOT, rel)): rel for rel in req["trace"]}
            items = _trace.shard(session.items, *req["shard"])
            _fork(float(req["timeout"]), _trace.trace_child, session, items, files, req["out"])
            continue
        path = os.path.realpath(os.path.join(_ROOT, req["file"]))
        items = [by_id[t] for t in req["tests"] if t in by_id]
        if len(items) != len(req["tests"]):
            _reply({"fallback": "a covering test was not collected"})
            continue
        swaps = []
        if req.get("source") is not None:
            target = targets.get(path)
            if target is None:
                module = _find_module(path, req.get("module"))
                if module is None or os.path.realpath(module.__file__ or "") != path:
                    _reply({"fallback": "the module cannot be imported by name"})
                    continue
                with open(path, encoding="utf-8") as fh:
                    target = targets[path] = _Target(path, module, fh.read())
            swaps = target.swaps(req["source"])
            if isinstance(swaps, str):
                _reply({"fallback": swaps})
                continue
        _fork(float(req["timeout"]), _child, session, items, swaps)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    if _OUT is None:
        return None
    _reply({"ready": True, "items": len(session.items), "errors": session.testsfailed,
            "loaded": _LOADED, "at": time.time()})
    _serve(session)
    return True
