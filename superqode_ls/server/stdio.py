"""LSP over stdio: stdin read on the event loop, framing that survives bad input.

pygls reads stdin in a thread pool, one ``readline``/``read`` per header line
and body, so each incoming message costs several thread hand-offs; while a
session's analyzers keep the CPUs busy every hand-off waits to be scheduled,
and request latency grows with them. Here stdin is an asyncio pipe: one epoll
wake-up per chunk, on the loop that answers it. Anything epoll cannot watch
(a regular file as stdin) is read in a thread.

pygls's framing also loses its place for good after one malformed frame (no
or a wrong ``Content-Length``, an LF-only header, an endless header line):
it waits for a body that never comes and answers nothing, ``shutdown``
included. ``Framer`` logs one line per bad frame and skips to the next
``Content-Length`` header, so the next valid message gets its answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import sys
import threading
from collections.abc import AsyncIterator, Callable
from typing import BinaryIO

from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter

log = logging.getLogger(__name__)
LINE_LIMIT = 1 << 20  # a header block longer than this is not LSP
BODY_LIMIT = 256 << 20
_SYNC = b"Content-Length:"
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*([^\r\n]*?)[ \t]*\r?$", re.I | re.M)


class Framer:
    """Splits a byte stream into LSP message bodies. Header lines may end in
    CRLF or LF; a frame that cannot be read is reported through ``on_error``
    (one line) and skipped up to the next ``Content-Length:``."""

    def __init__(self, on_error: Callable[[str], None]):
        self.buf = bytearray()
        self.on_error = on_error
        self._syncing = False

    def feed(self, data: bytes) -> None:
        self.buf += data

    def bad_body(self, body: bytes, why: str) -> None:
        """A body that did not parse: its Content-Length was wrong. When the
        next message's header is inside it, read on from there."""
        self.on_error(f"stdin: message skipped ({why})")
        at = body.find(_SYNC, 1)
        if at != -1:
            self.buf[:0] = body[at:]
        else:  # a cut body's rest is the same bad message: skip it quietly
            self._resync(0)

    def _resync(self, start: int) -> None:
        at = self.buf.find(_SYNC, start)
        if at == -1:
            keep = len(_SYNC) - 1  # the token may be split across reads
            del self.buf[:max(0, len(self.buf) - keep)]
            self._syncing = True
        else:
            del self.buf[:at]
            self._syncing = False

    def next(self) -> bytes | None:
        """The next whole body, or None until more bytes come."""
        while True:
            if self._syncing:
                self._resync(0)
                if self._syncing:
                    return None
            end = _HEADER_END.search(self.buf)
            if end is None:
                if len(self.buf) > LINE_LIMIT:
                    self.on_error(f"stdin: header longer than {LINE_LIMIT} bytes skipped")
                    self._resync(1)
                    continue
                return None
            m = _CONTENT_LENGTH.search(self.buf, 0, end.start())
            value = m.group(1) if m else None
            if value is None or not value.isdigit() or int(value) > BODY_LIMIT:
                what = ("no Content-Length" if value is None
                        else f"Content-Length {value[:20].decode('latin-1')!r}")
                self.on_error(f"stdin: message skipped ({what})")
                # From the next header on, wherever it starts: the rest of a
                # cut body may run into it without a line break.
                self._resync(1)
                continue
            start, n = end.end(), int(value)
            if len(self.buf) - start < n:
                if self._overlong(start):
                    continue
                return None
            body = bytes(self.buf[start:start + n])
            del self.buf[:start + n]
            return body

    def _overlong(self, start: int) -> bool:
        """A body still short of its Content-Length that already holds a
        whole JSON value and the next header: the length was too long, and
        waiting would swallow the next message (the client waits too)."""
        at = self.buf.find(_SYNC, start)
        if at == -1 or _HEADER_END.search(self.buf, at) is None:
            return False
        try:
            json.loads(bytes(self.buf[start:at]))
        except ValueError:
            return False
        self.on_error("stdin: message skipped (Content-Length longer than its body)")
        del self.buf[:at]
        return True


def pollable(stdin: BinaryIO) -> bool:
    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


async def _chunks(stdin: BinaryIO):
    loop = asyncio.get_running_loop()
    if pollable(stdin):
        stream = asyncio.StreamReader(loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), stdin)
        while data := await stream.read(1 << 16):
            yield data
        return
    fd = stdin.fileno()
    while data := await asyncio.to_thread(os.read, fd, 1 << 16):
        yield data


async def read_messages(stdin: BinaryIO, protocol, stop: threading.Event,
                        error_handler: Callable | None = None) -> None:
    await pump(_chunks(stdin), Framer(log.error), protocol, stop, error_handler)


async def pump(chunks: AsyncIterator[bytes], framer: Framer, protocol, stop: threading.Event,
               error_handler: Callable | None = None) -> None:
    """Hand every message of ``chunks`` to ``protocol`` (what ``framer``
    already holds first) until the stream ends or ``stop`` is set."""
    while True:
        while (body := framer.next()) is not None:
            try:
                message = json.loads(body, object_hook=protocol.structure_message)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                framer.bad_body(body, f"not JSON: {str(e)[:80]}")
                continue
            except Exception as exc:  # noqa: BLE001 - JSON, but not a message we know
                _report(exc, error_handler)
                continue
            _dispatch(protocol, message, error_handler)
            if stop.is_set():
                return
        data = await anext(chunks, None)
        if data is None:
            return
        framer.feed(data)


def _dispatch(protocol, message, error_handler) -> None:
    try:
        protocol.handle_message(message)
    except Exception as exc:  # noqa: BLE001 - one bad message must not end the server
        _report(exc, error_handler)


def _report(exc: Exception, error_handler) -> None:
    log.exception("Unable to handle message")
    if error_handler:
        error_handler(exc, JsonRpcException)


def serve_stdio(server, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """``server.start_io()``, with our stdin reading and framing."""
    stdin = stdin or sys.stdin.buffer
    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    try:
        asyncio.run(read_messages(stdin, server.protocol, server._stop_event,
                                  server.report_server_error))
    except BrokenPipeError:
        log.error("Connection to the client is lost! Shutting down the server.")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
