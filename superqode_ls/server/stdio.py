"""LSP over stdio with stdin read on the event loop.

pygls reads stdin in a thread pool, one ``readline``/``read`` per header line
and body, so each incoming message costs several thread hand-offs; while a
session's analyzers keep the CPUs busy every hand-off waits to be scheduled,
and request latency grows with them. Here stdin is an asyncio pipe: one epoll
wake-up per message, on the loop that answers it. Anything epoll cannot watch
(a regular file as stdin) falls back to pygls's own reader.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from typing import BinaryIO

from pygls.io_ import StdoutWriter, run_async

log = logging.getLogger(__name__)
LINE_LIMIT = 1 << 20


class PipeReader:
    """pygls's async reader interface over an asyncio ``StreamReader``."""

    def __init__(self, stdin: BinaryIO):
        self.stdin = stdin
        self._stream: asyncio.StreamReader | None = None

    async def _reader(self) -> asyncio.StreamReader:
        if self._stream is None:
            loop = asyncio.get_running_loop()
            stream = asyncio.StreamReader(limit=LINE_LIMIT, loop=loop)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), self.stdin)
            self._stream = stream
        return self._stream

    async def readline(self) -> bytes:
        stream = await self._reader()
        try:
            return await stream.readline()
        except ValueError:  # a header line over the limit: not LSP, stop reading
            log.error("stdin: header line longer than %d bytes", LINE_LIMIT)
            return b""

    async def readexactly(self, n: int) -> bytes:
        stream = await self._reader()
        try:
            return await stream.readexactly(n)
        except asyncio.IncompleteReadError as e:
            return e.partial


def pollable(stdin: BinaryIO) -> bool:
    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def serve_stdio(server, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """``server.start_io()``, with stdin read on the event loop when it can be."""
    stdin = stdin or sys.stdin.buffer
    if not pollable(stdin):
        server.start_io(stdin, stdout)
        return
    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    try:
        asyncio.run(
            run_async(
                stop_event=server._stop_event,
                reader=PipeReader(stdin),
                protocol=server.protocol,
                logger=log,
                error_handler=server.report_server_error,
            )
        )
    except BrokenPipeError:
        log.error("Connection to the client is lost! Shutting down the server.")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
