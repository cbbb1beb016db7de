"""Red team: the TCP language server. Any local process (a session's tools
included) can connect to a loopback port; only the client holding the token
of this start gets in, one client at a time, and only on loopback."""

from __future__ import annotations

import json
import os
import queue
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from pygls.uris import from_fs_path

TIMEOUT = 60


def _frame(msg: dict) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read(sock: socket.socket) -> dict | None:
    """The next message, or None when the server closed (or reset) the connection."""
    try:
        return _read_open(sock)
    except ConnectionResetError:
        return None


def _read_open(sock: socket.socket) -> dict | None:
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        if not data:
            return None
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
                 .split(b":")[1])
    while len(rest) < length:
        data = sock.recv(65536)
        if not data:
            return None
        rest += data
    return json.loads(rest[:length])


def _read_result(sock: socket.socket, msg_id: int) -> dict:
    while True:
        msg = _read(sock)
        assert msg is not None, "the server closed an authenticated connection"
        if msg.get("id") == msg_id and "method" not in msg:
            return msg


def _initialize(root: Path, token: str | None) -> dict:
    params: dict = {"processId": None, "rootUri": from_fs_path(str(root)), "capabilities": {}}
    if token is not None:
        params["initializationOptions"] = {"token": token}
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


class Server:
    def __init__(self, host: str = "127.0.0.1"):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "superqode_ls.server", "--tcp", f"{host}:0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        line = self.wait_for("listening on")
        where = line.split("listening on ", 1)[1].split(";", 1)[0]
        self.port = int(where.rsplit(":", 1)[1])
        self.token_file = Path(line.rsplit(" from ", 1)[1].strip())
        self.token = self.token_file.read_text().strip()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)
        self.lines.put("")

    def wait_for(self, needle: str) -> str:
        while True:
            line = self.lines.get(timeout=TIMEOUT)
            self.seen.append(line)
            if needle in line:
                return line
            assert line, f"server ended before {needle!r}: {''.join(self.seen)}"

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=TIMEOUT)


@pytest.fixture
def server():
    s = Server()
    yield s
    s.stop()


def test_the_token_file_is_private_and_fresh_per_start(server):
    mode = server.token_file.stat().st_mode
    assert stat.S_IMODE(mode) == 0o600
    assert stat.S_IMODE(server.token_file.parent.stat().st_mode) == 0o700
    assert len(server.token) >= 32
    other = Server()
    try:
        assert other.token != server.token
    finally:
        other.stop()


@pytest.mark.parametrize("token", [None, "guessed", ""])
def test_a_client_without_the_token_is_refused(server, tmp_path, token):
    with server.connect() as sock:
        sock.sendall(_frame(_initialize(tmp_path, token)))
        assert _read(sock) is None  # closed without an answer
    server.wait_for("refused a connection")
    # The server is still there for its real client.
    with server.connect() as sock:
        sock.sendall(_frame(_initialize(tmp_path, server.token)))
        assert _read_result(sock, 1)["result"]["serverInfo"]["name"] == "superqode-ls"


def test_a_first_message_other_than_initialize_is_refused(server, tmp_path):
    with server.connect() as sock:
        sock.sendall(_frame({"jsonrpc": "2.0", "id": 7, "method": "workspace/executeCommand",
                             "params": {"command": "superqode.listSessions", "arguments": []}}))
        assert _read(sock) is None
    server.wait_for("refused a connection")


def test_the_token_holder_gets_in_and_a_second_client_is_refused(server, tmp_path):
    with server.connect() as editor:
        editor.sendall(_frame(_initialize(tmp_path, server.token)))
        caps = _read_result(editor, 1)["result"]["capabilities"]
        assert "superqode.runQE" in caps["executeCommandProvider"]["commands"]
        editor.sendall(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        editor.sendall(_frame({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
                               "params": {"command": "superqode.listSessions", "arguments": []}}))
        assert "sessions" in _read_result(editor, 2)["result"]
        # A second client, even one that read the token, cannot take over.
        with server.connect() as intruder:
            intruder.sendall(_frame(_initialize(tmp_path, server.token)))
            assert _read(intruder) is None
        server.wait_for("a client is already connected")
        # The editor's connection is untouched.
        editor.sendall(_frame({"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand",
                               "params": {"command": "superqode.listSessions", "arguments": []}}))
        assert "sessions" in _read_result(editor, 3)["result"]
    # The client left: the server ends (nobody takes its place) and its token goes.
    assert server.proc.wait(timeout=TIMEOUT) == 0
    assert not server.token_file.exists()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "example.com", "::"])
def test_a_non_loopback_host_is_refused(host):
    proc = subprocess.run([sys.executable, "-m", "superqode_ls.server", "--tcp", f"{host}:0"],
                          check=False, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "loopback" in lines[0], proc.stderr
    assert not (Path(os.environ["SUPERQODE_HOME"]) / "run").exists()
