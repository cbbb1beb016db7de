"""``superqode-ls --tcp``: loopback only, one authenticated client.

A TCP port is open to every local process, a session's tools included: one
that connected could send its own settings (so its own trust), run QE or make
branches in the user's repository, or take the server over from the editor.
So:

- the server listens on a loopback address only (anything else is refused
  before the server starts);
- each start makes a random token, written (0600) to
  ``$SUPERQODE_HOME/run/ls-<port>.token``, whose path is printed on stderr;
  the first message of a connection must be ``initialize`` with
  ``initializationOptions.token`` equal to it, within ``AUTH_TIMEOUT_S``,
  else the connection is closed and the attempt logged;
- one client at a time: a connection made while a client is connected is
  refused and logged; when that client goes, the server ends (as pygls's own
  TCP mode does), so nobody takes its place.

Messages after the first go through the same framing as stdio (``stdio.pump``).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import os
import secrets
import sys
import threading
from pathlib import Path

from ..config import superqode_home
from ..errors import SuperQodeError
from .stdio import Framer, pump

log = logging.getLogger(__name__)
AUTH_TIMEOUT_S = 30.0
FIRST_MESSAGE_LIMIT = 1 << 20  # an initialize bigger than this is not an editor's


class TcpRefused(SuperQodeError, ValueError):
    """A --tcp address the server will not listen on (one line)."""


def check_loopback(host: str) -> str:
    """The host to bind; TcpRefused unless it is a loopback address."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        raise TcpRefused(f"--tcp {host}: not an IP address; the server listens on loopback "
                         "only (127.0.0.1 or ::1)") from None
    if not ip.is_loopback:
        raise TcpRefused(f"--tcp {host}: not a loopback address; the server listens on "
                         "127.0.0.1 or ::1 only (a TCP port is open to every local process)")
    return str(ip)


def token_path(port: int) -> Path:
    return superqode_home() / "run" / f"ls-{port}.token"


def write_token(port: int, token: str) -> Path:
    path = token_path(port)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    try:
        path.unlink()  # a previous start's, or anything planted there
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return path


def _token_of(message: object) -> str | None:
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    params = message.get("params")
    opts = params.get("initializationOptions") if isinstance(params, dict) else None
    token = opts.get("token") if isinstance(opts, dict) else None
    return token if isinstance(token, str) else None


class _Gate:
    """Authenticates connections and admits one client at a time."""

    def __init__(self, server, token: str):
        self.server = server
        self.token = token
        self.connected = False
        self.done = asyncio.Event()
        self.stop = threading.Event()

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        if self.connected:
            log.warning("superqode-ls: refused a connection from %s: a client is already "
                        "connected", peer)
            writer.close()
            return
        framer = Framer(lambda line: log.warning("tcp %s: %s", peer, line))
        try:
            body = await asyncio.wait_for(self._first(reader, framer), AUTH_TIMEOUT_S)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            body = None
        why = self._refusal(body)
        if why is None and self.connected:  # another one authenticated meanwhile
            why = "a client is already connected"
        if why is not None:
            log.warning("superqode-ls: refused a connection from %s: %s", peer, why)
            writer.close()
            return
        self.connected = True
        log.info("superqode-ls: client %s authenticated", peer)
        try:
            self.server.protocol.set_writer(writer)
            assert body is not None
            framer.buf[:0] = _frame(body)  # handled like every other message
            await pump(_chunks(reader), framer, self.server.protocol, self.stop,
                       self.server.report_server_error)
        finally:
            writer.close()
            self.done.set()

    async def _first(self, reader: asyncio.StreamReader, framer: Framer) -> bytes | None:
        while (body := framer.next()) is None:
            if len(framer.buf) > FIRST_MESSAGE_LIMIT:
                return None
            data = await reader.read(1 << 16)
            if not data:
                return None
            framer.feed(data)
        return body

    def _refusal(self, body: bytes | None) -> str | None:
        if not self.token:
            return "no token made"
        if body is None:
            return "no initialize message"
        try:
            token = _token_of(json.loads(body))
        except (ValueError, UnicodeDecodeError):
            return "the first message is not JSON"
        if token is None:
            return "no token in initialize's initializationOptions"
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            return "wrong token"
        return None


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def _chunks(reader: asyncio.StreamReader):
    while data := await reader.read(1 << 16):
        yield data


def serve_tcp(server, host: str, port: int) -> None:
    """Serve one authenticated client on ``host:port`` (loopback), then end."""
    host = check_loopback(host)

    async def main() -> None:
        # The token exists before the port opens: no connection is ever
        # judged against an empty one.
        gate = _Gate(server, secrets.token_urlsafe(32))
        srv = await asyncio.start_server(gate.connection, host, port)
        bound = srv.sockets[0].getsockname()[1]
        path = write_token(bound, gate.token)
        server._stop_event = gate.stop
        print(f"superqode-ls: listening on {host}:{bound}; clients send "
              f"initializationOptions.token from {path}", file=sys.stderr, flush=True)
        try:
            async with srv:
                await gate.done.wait()
        finally:
            try:
                path.unlink()
            except OSError:
                pass

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
