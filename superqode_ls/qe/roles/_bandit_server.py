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
those, the interpreter's standard library and, of the site-packages
folders, only the distributions the server's modules belong to: bandit, its
plugins and their dependencies; see ``_read_paths``), moves to the session's
sandbox and environment, and runs ``bandit.cli.main.main()`` with the
request's arguments: the result is what the ``bandit`` command prints.

Protocol, JSON lines on stdin/stdout: first {"ready": true} (or {"ready":
false, "error"} and the server ends: it cannot say what a child may read,
so it serves nothing -- fail closed); request
{"argv", "cwd", "env", "allow" (the session's folders), "abi", "timeout"
(seconds or null)} -> {"rc", "out", "err"}. rc 97: the barrier could not be
applied, or the request names no session (no "allow" or no "abi": fail
closed), nothing ran; rc -9: the child ran out of time and was killed here (in a pid
namespace its pid means nothing to the caller).

Stdlib and bandit only: it runs with ``-I``, outside SuperQode's package.
"""

import ctypes
import importlib.util
import json
import os
import pwd
import re
import selectors
import signal
import sys
import sysconfig
import time

BARRIER_FAILED = 97


def _landlock():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, os.pardir, os.pardir, "workspace", "landlock.py")
    spec = importlib.util.spec_from_file_location("superqode_landlock", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_PR_SET_PDEATHSIG = 1


def _child(req, out_w, err_w, landlock, reads, server):
    os.setpgid(0, 0)
    # It dies with the server (its own process group escapes the server's
    # kill; without a pid namespace around them it would run on unbounded).
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != server:  # the server died before that
        os._exit(BARRIER_FAILED)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the protocol is not bandit's input
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    try:
        allow = _session_folders(req)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req.get("env") or {})
        # Writes only beneath the session's folders, reads beneath those and
        # what bandit is made of: a request reads its session's tree, never
        # your project, HOME, another session's or the rest of a prefix.
        if not reads[0]:
            raise ValueError("no read set: refused")
        landlock.restrict_self(allow, int(req["abi"]), read=reads[0], list_only=reads[1])
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


def _read_paths(modules=None, path=None, home=None):
    """What a child may read besides its session (called once bandit and its
    plugins are imported): the interpreter's standard library, less any
    site-packages folder inside it (a pyenv or python.org Python keeps one
    there, with every package installed globally), and, of each
    site-packages folder the server's modules came from, only the
    distributions those modules belong to (``_distributions``): bandit, its
    plugins and their dependencies, each its own top-level packages and
    ``.dist-info``. Not the rest of such a folder (for a system Python all
    of ``dist-packages``; its ``.pth`` files; other projects), nor the
    interpreter's prefixes.

    A child reads little of it: the json report of a run reads none of
    these files (traced with strace: bandit, its plugins and formatters are
    loaded by the server before it forks); it is what a lazy import or a
    traceback's source lines may need.

    Returns (read beneath, list only). Raises ValueError when it cannot say -- no standard library found,
    bandit not under any folder, or a folder that holds HOME (a venv made in
    HOME itself, a .pth naming it): the server then serves nothing (fail
    closed)."""
    modules = sys.modules if modules is None else modules
    path = sys.path if path is None else path
    homes = {os.path.realpath(h) for h in (home, os.environ.get("HOME"), _pw_home()) if h}
    stdlib = _stdlib()
    # The deepest entry first: a site-packages inside a folder also on the path.
    entries = sorted({os.path.realpath(p) for p in path if p and os.path.isabs(p)
                      and os.path.isdir(p)}, key=len, reverse=True)
    sites = {e for e in entries if e not in stdlib and not _inside_stdlib_proper(e, stdlib)}
    loaded = {}  # a site-packages folder -> the names in it the server's modules came from
    bandit = None
    real = {}  # a module's folder -> where it leads (one realpath per folder: 400 modules)
    for name, mod in list(modules.items()):
        where = getattr(mod, "__file__", None)
        if not where or name in ("__main__", _LANDLOCK):  # (this server's own: loaded)
            continue
        folder, base = os.path.split(os.path.abspath(where))
        if folder not in real:
            real[folder] = os.path.realpath(folder)
        where = os.path.join(real[folder], base)
        holder = next((e for e in entries if where.startswith(e + os.sep)), None)
        if holder is None:
            continue
        if holder in sites:
            loaded.setdefault(holder, set()).add(where[len(holder) + 1:].split(os.sep)[0])
        if name == "bandit":
            bandit = holder
    if bandit is None or bandit not in sites:
        raise ValueError("bandit was not loaded from a site-packages folder on sys.path")
    found = set()
    for holder, names in loaded.items():
        if any(h == holder or h.startswith(holder + os.sep) for h in homes):
            # (a .pth naming HOME): nothing read from there is trusted
            raise ValueError(f"{holder} holds the home folder: bandit is not served from it")
        found.update(_distributions(holder, names))
    # A site-packages folder inside the standard library is not part of it.
    holes = {h for h in sites | {os.path.join(s, n) for s in stdlib for n in _SITE_NAMES}
             if os.path.isdir(h)}
    for s in stdlib:
        found.update(_cover(s, holes))
    for p in found:
        if p == "/" or any(h == p or h.startswith(p + os.sep) for h in homes):
            raise ValueError(f"{p} holds the home folder: a child would read all of it")
    # Listed, not read: a folder split above and each site-packages folder
    # (an import's finder lists them again if one changed; its files' names
    # are all a child learns there).
    listed = {s for s in stdlib if s not in found} | set(loaded)
    return sorted(found), sorted(listed)


_LANDLOCK = "superqode_landlock"  # this server's copy of workspace/landlock.py
_SITE_NAMES = ("site-packages", "dist-packages")
_FIRST = re.compile(r'^"?([^/,"\n]+)', re.MULTILINE)


def _stdlib():
    base = {"base": sys.base_prefix, "installed_base": sys.base_prefix,
            "platbase": sys.base_exec_prefix, "installed_platbase": sys.base_exec_prefix}
    found = {os.path.realpath(sysconfig.get_path(k, vars=base)) for k in ("stdlib", "platstdlib")}
    found.add(os.path.dirname(os.path.realpath(os.__file__)))
    found = {p for p in found if os.path.isdir(p)}
    if not found:
        raise ValueError("no standard library folder found")
    return found


def _inside_stdlib_proper(entry, stdlib):
    """Whether ``entry`` is a folder of the standard library itself (its
    ``lib-dynload``), not a site-packages folder kept inside it."""
    for s in stdlib:
        if entry.startswith(s + os.sep):
            rest = entry[len(s) + 1:].split(os.sep)
            return not any(part in _SITE_NAMES for part in rest)
    return False


def _cover(root, holes):
    """``root`` less the folders ``holes``: ``[root]`` when none is inside it,
    else each of its entries that holds no hole, and those holding one split
    the same way (each kept entry is read beneath, as ``root`` would be)."""
    inside = [h for h in holes if h.startswith(root + os.sep)]
    if not inside:
        return [root]
    out = []
    for name in sorted(os.listdir(root)):
        p = os.path.join(root, name)
        if p in inside:
            continue
        if any(h.startswith(p + os.sep) for h in inside):
            if os.path.isdir(p) and not os.path.islink(p):
                out += _cover(p, inside)
            continue
        out.append(p)
    return out


def _distributions(site, names):
    """Of the folder ``site``: the entries of the distributions that the
    loaded ``names`` (entries of it) belong to -- each distribution's
    top-level packages and modules and its metadata folder -- and the loaded
    names no distribution claims. Never a ``.pth`` file (it was read when
    the server started; a child has no use for it). Raises ValueError when a
    distribution's metadata cannot be read."""
    import importlib.metadata

    listing = set(os.listdir(site))
    by_stem = {}  # "yaml" -> {"yaml", "yaml.py", ...}: top_level.txt names what to claim
    for entry in listing:
        if not entry.endswith((".dist-info", ".egg-info", ".pth")):
            by_stem.setdefault(entry.split(".", 1)[0], set()).add(entry)
    needed = set(names)
    out = set()
    try:
        for dist in importlib.metadata.distributions(path=[site]):
            meta = getattr(dist, "_path", None)
            if meta is None or os.path.realpath(os.path.dirname(str(meta))) != site:
                continue  # not one of this folder's (an egg-link's elsewhere)
            mine = _claims(dist, listing, by_stem)
            if mine & needed:
                out |= mine | {os.path.basename(str(meta))}
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read the distributions in {site}: {e}") from e
    out |= needed
    paths = []
    for name in sorted(out):
        if name.endswith(".pth") or name == "__pycache__" or name not in listing:
            continue
        paths.append(os.path.join(site, name))
        if name.endswith(".py"):  # a top-level module's bytecode
            cache = os.path.join(site, "__pycache__")
            stem = name[:-3] + "."
            if os.path.isdir(cache):
                paths += [os.path.join(cache, c) for c in sorted(os.listdir(cache))
                          if c.startswith(stem) and c.endswith(".pyc")]
    return paths


def _claims(dist, listing, by_stem):
    """The entries of its folder (``listing``) a distribution installed:
    the first part of each path in its RECORD (or an egg's
    installed-files.txt), and its top_level.txt names (a Debian package's
    egg-info has no file list)."""
    # Each line's path up to its first "/" or ",": 10,000 lines in a venv.
    claims = set(_FIRST.findall(dist.read_text("RECORD") or "")) & listing
    for line in (dist.read_text("installed-files.txt") or "").splitlines():
        parts = os.path.normpath(line).split(os.sep)
        if len(parts) > 1 and parts[0] == os.pardir and parts[1] in listing:
            claims.add(parts[1])
    for top in (dist.read_text("top_level.txt") or "").splitlines():
        claims |= by_stem.get(top.strip(), set())
    claims.discard("__pycache__")
    return claims


def _pw_home():
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


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
    try:
        reads = _read_paths()
    except ValueError as e:
        _reply({"ready": False, "error": str(e)})
        return
    server = os.getpid()
    _reply({"ready": True})
    for line in sys.stdin:
        req = json.loads(line)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(out_r)
            os.close(err_r)
            _child(req, out_w, err_w, landlock, reads, server)
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
