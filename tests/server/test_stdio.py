"""stdin read on the event loop (a pipe) and pygls's reader (anything else)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

from superqode_ls.server.stdio import LINE_LIMIT, PipeReader, pollable


def frame(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_pipe_reader_reassembles_split_messages():
    async def go():
        r, w = os.pipe()
        stdin = os.fdopen(r, "rb", buffering=0)
        reader = PipeReader(stdin)
        message = frame({"jsonrpc": "2.0", "method": "x", "params": {"é": 1}})
        loop = asyncio.get_running_loop()

        async def feed():
            for i in range(0, len(message), 7):  # dribbled in, as a slow pipe would
                os.write(w, message[i:i + 7])
                await asyncio.sleep(0.001)
            os.write(w, b"Content-Length: 10\r\n\r\nshort")
            os.close(w)

        feeder = loop.create_task(feed())
        header = await reader.readline()
        blank = await reader.readline()
        n = int(header.split(b":")[1])
        body = await reader.readexactly(n)
        assert header.startswith(b"Content-Length: ") and blank == b"\r\n"
        assert json.loads(body)["params"] == {"é": 1}
        await reader.readline()
        await reader.readline()
        assert await reader.readexactly(10) == b"short"  # EOF mid-body: what came
        assert await reader.readline() == b""  # then EOF
        await feeder
        stdin.close()

    asyncio.run(go())


def test_pipe_reader_stops_on_an_overlong_header_line():
    async def go():
        r, w = os.pipe()
        stdin = os.fdopen(r, "rb", buffering=0)
        reader = PipeReader(stdin)
        loop = asyncio.get_running_loop()

        def feed():
            with os.fdopen(w, "wb") as out:
                try:
                    out.write(b"X" * (LINE_LIMIT + 10))
                except BrokenPipeError:
                    pass

        writer = loop.run_in_executor(None, feed)
        assert await reader.readline() == b""
        stdin.close()
        await writer

    asyncio.run(go())


def test_server_over_a_regular_file_as_stdin(tmp_path):
    """epoll cannot watch a regular file: the server falls back to pygls's reader."""
    script = tmp_path / "session.lsp"
    script.write_bytes(
        frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"processId": None, "rootUri": None, "capabilities": {}}})
        + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        + frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        + frame({"jsonrpc": "2.0", "method": "exit"})
    )
    with open(script, "rb") as fh:
        assert not pollable(fh)
        out = subprocess.run([sys.executable, "-m", "superqode_ls.server"], stdin=fh,
                             capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    assert b'"id": 1' in out.stdout.replace(b'"id":1', b'"id": 1')
    assert b"capabilities" in out.stdout


def test_pipes_and_sockets_are_pollable(tmp_path):
    import socket

    r, w = os.pipe()
    a, b = socket.socketpair()
    try:
        with os.fdopen(r, "rb", buffering=0) as fh:
            assert pollable(fh)
        assert pollable(a.makefile("rb"))
    finally:
        os.close(w)
        a.close()
        b.close()
