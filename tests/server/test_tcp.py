"""server/tcp.py: --tcp listens on loopback only, writes its token owner-only
(replacing whatever was planted there), and answers the client that holds the
token (the clients that do not: tests/redteam/test_tcp_auth.py)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time

import pytest
from pygls.uris import from_fs_path

from superqode_ls.server.tcp import TcpRefused, check_loopback, token_path, write_token


def test_only_loopback_addresses_are_listened_on():
    assert check_loopback("localhost") == "127.0.0.1"
    assert check_loopback("127.0.0.1") == "127.0.0.1"
    assert check_loopback("[::1]") == "::1"
    for host, why in (("0.0.0.0", "not a loopback address"), ("192.168.1.4", "not a loopback"),
                      ("example.org", "not an IP address")):
        with pytest.raises(TcpRefused, match=why) as err:
            check_loopback(host)
        assert "\n" not in str(err.value)


def test_the_token_is_owner_only_and_replaces_a_planted_link(tmp_path):
    path = token_path(4711)
    path.parent.mkdir(parents=True, exist_ok=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, path)  # planted: the token must not be written through it
    assert write_token(4711, "s3cret") == path
    assert not path.is_symlink() and path.read_text() == "s3cret\n"
    assert victim.read_text() == "keep me\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def _frame(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_message(sock: socket.socket, deadline: float) -> dict:
    buf = b""
    while b"\r\n\r\n" not in buf:
        if time.monotonic() > deadline:
            raise AssertionError("no answer over TCP")
        buf += sock.recv(65536)
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
    while len(rest) < length:
        rest += sock.recv(65536)
    return json.loads(rest[:length])


def test_tcp_mode_answers_initialize(tmp_path):
    """The client that holds this start's token (tests/redteam/test_tcp_auth.py
    has the ones that do not)."""
    from tests.redteam.test_tcp_auth import Server

    server = Server()
    try:
        with server.connect() as sock:
            sock.sendall(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                 "params": {"processId": None, "rootUri": from_fs_path(str(tmp_path)),
                                            "capabilities": {},
                                            "initializationOptions": {"token": server.token}}}))
            msg = _read_message(sock, time.monotonic() + 30)
            assert msg["id"] == 1
            caps = msg["result"]["capabilities"]
            assert "superqode.runQE" in caps["executeCommandProvider"]["commands"]
            assert msg["result"]["serverInfo"]["name"] == "superqode-ls"
    finally:
        server.stop()


def test_bad_tcp_argument_is_a_usage_error():
    proc = subprocess.run([sys.executable, "-m", "superqode_ls.server", "--tcp", "host:notaport"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "not a port" in proc.stderr
