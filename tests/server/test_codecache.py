"""The protocol's generated code kept between server starts (server/codecache.py):
reused, only from a private file of this user that no session can reach."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.config import Config
from superqode_ls.server import codecache
from superqode_ls.workspace import namespaces

# A fresh interpreter's server start up to the protocol's types: what the
# cache did there, and whether the types it built work.
START = """
import json, sys
from superqode_ls.server import codecache
c = codecache.begin()
from lsprotocol import types
from superqode_ls.server.setup import create_server
create_server()
p = types.Position(line=1, character=2)
ok = p == types.Position(line=1, character=2) and p != types.Position(line=1, character=3) \\
    and str(p) == "1:2" and types.Range(start=p, end=p).end.character == 2
codecache.save()
print(json.dumps({"on": c is not None, "hits": c.hits if c else 0, "misses": c.misses if c else 0,
                  "ok": ok}))
"""


def start(env_extra: dict[str, str] | None = None) -> dict:
    env = {**os.environ, **(env_extra or {})}
    out = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_start_reuses_the_compiled_code():
    first = start()
    path = codecache.cache_path()
    assert first["ok"] and first["misses"] > 300 and first["hits"] == 0
    assert path.is_file() and (path.stat().st_mode & 0o777) == 0o600
    second = start()
    assert second["ok"]
    assert second["hits"] >= first["misses"] - 10 and second["misses"] < 10
    mtime = path.stat().st_mtime_ns
    start()
    assert path.stat().st_mtime_ns == mtime  # a start with nothing new leaves it as it is


def test_cached_code_is_what_compile_gives():
    start()
    table = marshal.loads(codecache.cache_path().read_bytes())
    cache = codecache.CodeCache(codecache.cache_path())
    assert cache.stored.keys() == table.keys()
    # attrs and cattrs compile with ``from __future__ import annotations``
    # in force: the cache's compile must inherit the same flag.
    import attr._make

    flags = codecache._future_flags(attr._make)
    assert flags & __import__("__future__").annotations.compiler_flag
    src = "def f(x: undefined_name) -> int:\n    return x\n"
    compiled = cache.compiler(flags)(src, "<t>", "exec")
    direct = compile(src, "<t>", "exec", flags, True)
    assert compiled == direct and compiled != compile(src, "<t>", "exec", 0, True)
    ns: dict = {}
    exec(compiled, ns)  # noqa: S102 - the annotation is not evaluated (it names nothing)
    assert ns["f"](3) == 3


def test_off_switch():
    assert start({"SUPERQODE_CODE_CACHE": "off"})["on"] is False
    assert not codecache.cache_path().exists()


def test_the_cache_is_hidden_from_every_session(tmp_path):
    """Code read from it runs outside the sandbox: its folder is one the
    namespace sandbox masks (the server's own secrets) and no session's
    write barrier lists."""
    hidden = namespaces.hidden_paths(Config(), {"HOME": str(tmp_path)})
    folder = codecache.cache_path().parent
    assert str(folder) in hidden
    assert (folder.stat().st_mode & 0o777) == 0o700


def _plant(path: Path, marker: Path, src: str, filename: str, flags: int) -> None:
    """A cache whose entry for ``src`` is code that writes ``marker``."""
    evil = compile(f"open({str(marker)!r}, 'w').write('ran')\n", filename, "exec", flags, True)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_bytes(marshal.dumps({codecache._key(src, filename, "exec", flags): evil}))


@pytest.mark.parametrize("how", ["group-writable", "world-writable", "symlink", "writable-folder"])
def test_red_team_a_cache_others_could_write_is_never_run(tmp_path, how):
    """A cache file another user or process could have written (a writable
    mode, a link to a file elsewhere, a folder others can write) is ignored:
    the text is compiled afresh and the planted code never runs."""
    marker = tmp_path / "ran"
    src, filename = "x = 1\n", "<attrs generated methods planted>"
    path = codecache.cache_path()
    if how == "symlink":
        elsewhere = tmp_path / "elsewhere.marshal"
        _plant(elsewhere, marker, src, filename, 0)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.symlink_to(elsewhere)
    else:
        _plant(path, marker, src, filename, 0)
        if how == "group-writable":
            path.chmod(0o620)
        elif how == "world-writable":
            path.chmod(0o602)
        else:
            path.parent.chmod(0o777)
    cache = codecache.CodeCache(path)
    assert cache.stored == {}
    ns: dict = {}
    exec(cache.compiler(0)(src, filename, "exec"), ns)  # noqa: S102 - what attrs does with it
    assert ns["x"] == 1 and not marker.exists()
    # The same planted file, private, is used: the checks above are what stop it.
    if how != "symlink":
        path.chmod(0o600)
        path.parent.chmod(0o700)
        exec(codecache.CodeCache(path).compiler(0)(src, filename, "exec"), {})  # noqa: S102
        assert marker.read_text() == "ran"


@pytest.mark.parametrize("content", [b"", b"not marshal", marshal.dumps({b"k": "not code"}),
                                     marshal.dumps([1, 2])])
def test_a_broken_cache_is_ignored(content):
    path = codecache.cache_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_bytes(content)
    path.chmod(0o600)
    assert codecache.CodeCache(path).stored == {}
    assert start()["ok"]


def _frame(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def test_the_server_keeps_its_code_at_exit(tmp_path):
    """superqode-ls over stdio: initialize, shutdown, exit; the next start
    finds the cache its exit wrote."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit", "params": None},
    ]
    out = subprocess.run([sys.executable, "-m", "superqode_ls.server"],
                         input=b"".join(_frame(m) for m in messages), capture_output=True,
                         timeout=120, check=False)
    assert b'"id": 1' in out.stdout or b'"id":1' in out.stdout, out.stderr[-2000:]
    path = codecache.cache_path()
    assert path.is_file() and len(codecache.CodeCache(path).stored) > 300
