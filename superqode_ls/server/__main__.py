"""``superqode-ls``: the language server over stdio (default) or ``--tcp``
(loopback only, token-authenticated, one client: see ``tcp.py``)."""

from __future__ import annotations

import argparse
import logging
import sys


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    try:
        n = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port: {port!r}") from None
    if not 0 <= n < 65536:  # 0: the system picks one (printed on stderr)
        raise argparse.ArgumentTypeError(f"port out of range: {n}")
    return host or "127.0.0.1", n


def _use_pidfd_child_watcher() -> None:
    """asyncio's default child watcher starts a thread per subprocess and waits
    for it on the event loop; a pidfd watcher needs no thread (Linux 5.3+)."""
    import asyncio
    import os
    import warnings

    if not hasattr(os, "pidfd_open") or not hasattr(asyncio, "PidfdChildWatcher"):
        return
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.get_event_loop_policy().set_child_watcher(asyncio.PidfdChildWatcher())


def _editor_cpus() -> int:
    """Sessions' tools stay off one CPU (SUPERQODE_EDITOR_CPUS, default 1; 0
    lets them use all): the editor and this server answer from it at once."""
    import os

    raw = os.environ.get("SUPERQODE_EDITOR_CPUS", "1")
    try:
        return max(0, int(raw))
    except ValueError:
        logging.getLogger(__name__).warning("SUPERQODE_EDITOR_CPUS=%r is not a number; using 1", raw)
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="superqode-ls", description="SuperQode language server (stdio by default)."
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (default)")
    group.add_argument("--tcp", metavar="[HOST:]PORT", type=_host_port,
                       help="listen on a TCP socket instead")
    parser.add_argument("--log-file", help="write the server log here")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    args = parser.parse_args(argv)
    if args.tcp:
        from .tcp import TcpRefused, check_loopback

        try:
            check_loopback(args.tcp[0])
        except TcpRefused as e:
            parser.exit(2, f"superqode-ls: {e}\n")

    handlers: list[logging.Handler] = []
    if args.log_file:
        handlers.append(logging.FileHandler(args.log_file, encoding="utf-8"))
    else:
        handlers.append(logging.StreamHandler(sys.stderr))  # stdout is the protocol
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
    )
    logging.getLogger(__name__).debug("superqode-ls main")  # the start's first stamp (-v)
    # Sessions do some Python work in threads (snapshots, scans): hand the GIL
    # back to the event loop every 0.5 ms, not every 5, so requests stay quick.
    sys.setswitchinterval(0.0005)
    _use_pidfd_child_watcher()
    from ..errors import SuperQodeError, user_line
    from ..runtime import Runtime

    try:
        # The server's one Runtime: tools below the editor and off its CPU.
        runtime = Runtime.background().sparing(_editor_cpus())
    except SuperQodeError as e:  # a bad SUPERQODE_NICE: the line superqe says too
        parser.exit(2, f"superqode-ls: {user_line(e)}\n")
    if not args.tcp:  # an editor's server: its client initializes at once
        from .lifecycle_early import begin_warm_bandit

        # Before the protocol's imports: bandit loads in its own process on
        # the other CPU meanwhile (lifecycle_early.py).
        runtime = begin_warm_bandit(runtime, now=True)
    from . import codecache

    # Before lsprotocol's import: its generated methods' code from the last
    # start (codecache.py), about 0.17 s of CPU before ``initialize``.
    codecache.begin()
    from .setup import create_server
    from .stdio import serve_stdio
    from .tcp import serve_tcp

    server = create_server()
    server.runtime = runtime
    try:
        if args.tcp:
            host, port = args.tcp
            serve_tcp(server, host, port)
        else:
            serve_stdio(server)
    finally:
        if server.runtime.analyzer is not None:
            server.runtime.analyzer.stop()
        codecache.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
