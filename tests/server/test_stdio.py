"""stdin read on the event loop (a pipe) and pygls's reader (anything else)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time

import pytest

from superqode_ls.server.stdio import LINE_LIMIT, Framer, pollable


def frame(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _framer():
    errors: list[str] = []
    return Framer(errors.append), errors


def _bodies(framer: Framer) -> list[bytes]:
    """What the server's reader does: a body that is not JSON goes back to
    the framer, which reads on from the next header."""
    out = []
    while (b := framer.next()) is not None:
        try:
            json.loads(b)
        except ValueError:
            framer.bad_body(b, "not JSON")
            continue
        out.append(b)
    return out


def test_framer_reassembles_split_messages():
    framer, errors = _framer()
    message = frame({"jsonrpc": "2.0", "method": "x", "params": {"é": 1}})
    got = []
    for i in range(0, len(message), 7):  # dribbled in, as a slow pipe would
        framer.feed(message[i:i + 7])
        got += _bodies(framer)
    assert [json.loads(b)["params"] for b in got] == [{"é": 1}] and errors == []


@pytest.mark.parametrize("bad, why", [
    (b"Content-Type: application/json\r\n\r\n{\"id\": 9}", "no Content-Length"),
    (b"Content-Length: abc\r\n\r\n{}", "Content-Length 'abc'"),
    (b"Content-Length: -4\r\n\r\n{}", "Content-Length '-4'"),
    (b"Content-Length: 999999999999\r\n\r\n{}", "Content-Length '999999999999'"),
    (b"X" * (LINE_LIMIT + 10), "header longer than"),
])
def test_framer_skips_a_bad_frame_to_the_next_header(bad, why):
    framer, errors = _framer()
    good = frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    framer.feed(bad)
    assert _bodies(framer) == []
    framer.feed(good)
    assert [json.loads(b)["id"] for b in _bodies(framer)] == [2]
    assert len(errors) == 1 and why in errors[0]


def test_framer_reads_lf_only_headers_and_case_insensitive_names():
    framer, errors = _framer()
    framer.feed(b"content-length: 2\n\n{}" + b"Content-Length: 2\r\nContent-Type: x\r\n\r\n[]")
    assert _bodies(framer) == [b"{}", b"[]"] and errors == []


def test_framer_recovers_from_a_content_length_too_long_or_too_short():
    framer, errors = _framer()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x"}).encode()
    good = frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    # Far too long, the next message arriving later: no wait for the bytes
    # that would swallow it (and more), while the client waits for an answer.
    framer.feed(b"Content-Length: %d\r\n\r\n" % (len(body) + 5000) + body)
    assert _bodies(framer) == []
    framer.feed(good)
    assert [json.loads(b)["id"] for b in _bodies(framer)] == [2]
    assert errors == ["stdin: message skipped (Content-Length longer than its body)"]
    # Too long, the next message in the same read: the cut-out "body" is not JSON.
    framer.feed(b"Content-Length: %d\r\n\r\n" % (len(body) + 50) + body + good)
    assert [json.loads(b)["id"] for b in _bodies(framer)] == [2]
    # Too short: one line for the whole bad message, the next one read.
    framer.feed(b"Content-Length: 5\r\n\r\n" + body + good)
    assert [json.loads(b)["id"] for b in _bodies(framer)] == [2]
    assert len(errors) == 3


def test_server_answers_after_every_framing_error():
    """A real server on pipes: each malformed frame, then a request that must
    get its answer; at the end shutdown and exit still work."""
    proc = subprocess.Popen([sys.executable, "-m", "superqode_ls.server"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    responses: dict[int, dict] = {}
    framer, _ = _framer()

    def ask(raw: bytes, want: int) -> dict:
        proc.stdin.write(raw)
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while want not in responses:
            left = deadline - time.monotonic()
            assert left > 0, f"no answer to request {want}"
            ready, _, _ = select.select([proc.stdout], [], [], left)
            if ready:
                framer.feed(os.read(proc.stdout.fileno(), 1 << 16))
                for b in _bodies(framer):
                    msg = json.loads(b)
                    if "id" in msg and "method" not in msg:
                        responses[msg["id"]] = msg
        return responses[want]

    def request(n: int) -> bytes:
        return frame({"jsonrpc": "2.0", "id": n, "method": "workspace/executeCommand",
                      "params": {"command": "superqode.listSessions", "arguments": []}})

    try:
        init = ask(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"processId": None, "rootUri": None, "capabilities": {}}}), 1)
        assert "capabilities" in init["result"]
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        bad = [
            b"Content-Type: application/json\r\n\r\n{\"jsonrpc\": \"2.0\", \"id\": 900}",
            b"Content-Length: abc\r\n\r\n{}",
            b"Content-Length: 400\r\n\r\n{\"jsonrpc\": \"2.0\", \"method\": \"x\"}",
            b"Content-Length: 3\r\n\r\n{\"jsonrpc\": \"2.0\"}",
            b"Content-Length: 9\r\n\r\nnot json!",
            b"X" * (LINE_LIMIT + 10),
        ]
        for i, raw in enumerate(bad, start=10):
            assert "result" in ask(raw + request(i), i), responses[i]
        lf = json.dumps({"jsonrpc": "2.0", "id": 50, "method": "workspace/executeCommand",
                         "params": {"command": "superqode.listSessions", "arguments": []}}).encode()
        assert "result" in ask(b"Content-Length: %d\n\n" % len(lf) + lf, 50)
        ask(frame({"jsonrpc": "2.0", "id": 99, "method": "shutdown"}), 99)
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.close()
        assert proc.wait(30) == 0
        err = proc.stderr.read().decode()
        # One line per bad frame.
        assert err.count("stdin: message skipped") + err.count("stdin: header longer") == len(bad)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


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
