"""Where the warm helper lives on disk: its checked folder and socket under
$SUPERQODE_HOME/run/warm, its log, and the stamp of the code it was started
from (a change on disk ends it). warm_server runs the helper itself."""

from __future__ import annotations

import errno
import os
import socket
import time

from . import warm_client as wc


def code_stamp(root: str | None = None) -> tuple:
    """The package's modules on disk (path, size, mtime): a change ends the helper."""
    root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = []
    stack = [root]
    while stack:
        top = stack.pop()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if e.name != "__pycache__":
                    stack.append(e.path)
            elif e.name.endswith(".py"):
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                out.append((e.path, st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


def log(text: str) -> None:
    """One line in $SUPERQODE_HOME/logs/warm.log (refusals, start, end)."""
    try:
        path = os.path.join(wc.home(), "logs", "warm.log")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {text}\n")
    except OSError:
        pass  # a log that cannot be written stops nothing


def make_folder() -> int:
    """$SUPERQODE_HOME/run/warm, 0700, checked (warm_client.open_folder)."""
    run = os.path.join(wc.home(), "run")
    os.makedirs(run, mode=0o700, exist_ok=True)
    try:
        os.mkdir(wc.folder(), 0o700)
    except FileExistsError:
        pass
    return wc.open_folder()


def unlink_socket() -> None:
    try:
        fd = wc.open_folder()
    except OSError:
        return
    try:
        os.unlink(wc.SOCKET_NAME, dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


def listen() -> socket.socket:
    """The helper's socket, bound inside its checked folder. A socket left by
    a helper that died is replaced; a live one means another helper."""
    fd = make_folder()
    try:
        addr = wc.through(fd)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            old = os.umask(0o177)
            try:
                sock.bind(addr)
            except OSError as e:
                if e.errno != errno.EADDRINUSE:
                    raise
                if _alive(addr):
                    raise wc.WarmError("a warm helper is already up") from None
                os.unlink(wc.SOCKET_NAME, dir_fd=fd)
                sock.bind(addr)
            finally:
                os.umask(old)
            sock.listen(16)
        except BaseException:
            sock.close()
            raise
        sock.setblocking(False)
        return sock
    finally:
        os.close(fd)


def _alive(addr: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        probe.connect(addr)
        return True
    except OSError:
        return False
    finally:
        probe.close()
