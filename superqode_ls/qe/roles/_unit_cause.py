"""Whose failure is a failing test: the code's, the environment's, or not known.

A failure is the code's only on evidence: the exception was raised in the
project's own code (its tests included) on its own values, or it is an
assertion (plain, unittest's, pytest's ``fail``/``raises``). It is the
environment's on evidence from the exception chain the recorder plugin
writes (``chain``: each exception's classes, errno, file name, and where it
was raised), whatever the project or its libraries call it:

- the network stack: no route, no name resolution (``socket.gaierror``),
  a connection refused or reset (a service that is not running, a server
  that did not start), an address that cannot be bound;
- the OS refusing a path or an operation (EROFS anywhere, EACCES/EPERM
  outside the sandbox, EPERM with no path: the sandbox's barrier);
- a program the tests run that is not there (``FileNotFoundError`` raised
  where the subprocess is started), or another system's program that exits
  with an error here (``CalledProcessError`` of ``gpg --quick-gen-key`` in
  a fixture: the program's own setup in the sandbox); not Python, and not a
  command the project itself installs (its console scripts), which is the
  code's;
- a timeout (the OS's, a client library's, pytest-timeout's);
- a locale or time zone the machine does not have;
- a client library's own connection or timeout error, raised in
  site-packages (redis, pymemcache, requests, httpx...).

Neither: an exception raised outside the project (the standard library, a
third-party package) with no such sign. That is said honestly: a finding
at medium severity and low confidence, below the code's, never a ``fail``.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Any

from ._common import read_head
from ._unit_env import SERVICES
from ._unit_records import project_rel

CODE, ENVIRONMENT, UNKNOWN = "code", "environment", "unknown"

_NO_ROUTE = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN}
_REFUSED = {errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED}
_BIND = {errno.EADDRNOTAVAIL, errno.EADDRINUSE}
_TIMEOUTS = {"builtins.TimeoutError", "socket.timeout", "subprocess.TimeoutExpired",
             "asyncio.exceptions.TimeoutError", "concurrent.futures._base.TimeoutError"}
# A client library's error for a service it could not reach (redis'
# ConnectionError, pymemcache's MemcacheUnexpectedCloseError, requests'
# ConnectTimeout, pymongo's ServerSelectionTimeoutError, kombu's
# OperationalError on a refused broker has its OSError in the chain).
_CLIENT = re.compile(r"Connect|Connection|Unreachable|Unavailable|ServerSelection|"
                     r"UnexpectedClose|NoBrokersAvailable|Timeout|TimedOut", re.IGNORECASE)
_ASSERTIONS = {"builtins.AssertionError", "_pytest.outcomes.Failed",
               "_pytest.outcomes.OutcomeException"}
_PYTEST_TIMEOUT = re.compile(r"^Failed: Timeout >", re.MULTILINE)
_SITE = re.compile(r"[/\\](?:site|dist)-packages[/\\]")
_MOCK = re.compile(r"[/\\]unittest[/\\]mock\.py$|[/\\](?:site|dist)-packages[/\\]mock[/\\]")
_SERVICE_PORT = re.compile(r"(?:port |:|', )(\d{2,5})\b")
# CalledProcessError's text: "Command '['gpg', '--batch', ...]' returned
# non-zero exit status 2." (or the command as one string)
_FAILED_COMMAND = re.compile(r"Command '\[?'?([^' ,\]]+)[^\n]*' returned non-zero exit status")
_PYTHON = re.compile(r"^(?:python[\d.]*|pypy[\d.]*|pytest|pip[\d.]*|coverage|tox|nox)$")


def judge(record: dict[str, Any], root: Path) -> tuple[str, str | None]:
    """(CODE, None), (ENVIRONMENT, the cause in a few words) or (UNKNOWN,
    where the exception was raised), for a failing test's ``record``."""
    chain = [c for c in record.get("chain") or [] if isinstance(c, dict)]
    text = "\n".join(str(record.get(k) or "") for k in ("message", "longrepr"))
    for exc in chain:
        if cause := _environment(exc, text, str(root)):
            return ENVIRONMENT, cause
    if _PYTEST_TIMEOUT.search(str(record.get("message") or "")):
        return ENVIRONMENT, "a timeout (pytest-timeout stopped the test)"
    first = chain[0] if chain else None
    mro = set(first["mro"]) if first and isinstance(first.get("mro"), list) else set()
    exc_type = str(record.get("exc_type") or "")
    if mro & _ASSERTIONS or exc_type in ("AssertionError", "Failed"):
        return CODE, None
    where = (first or {}).get("where") or next(
        (str(e.get("path") or "") for e in reversed(record.get("entries") or [])), "")
    if not where or not chain and not record.get("entries"):
        return CODE, None  # nothing to weigh (an old record, a collection error)
    if project_rel(root, str(where)) is not None:
        return CODE, None  # raised by the project's own code
    if _MOCK.search(str(where)) and record.get("entries"):
        return CODE, None  # a mock's side effect: the test's own value, raised for it
    return UNKNOWN, _short_where(str(where))


def _environment(exc: dict[str, Any], text: str, sandbox: str) -> str | None:
    mro = [str(m) for m in exc.get("mro") or []]
    names = set(mro)
    code = exc.get("errno")
    where = str(exc.get("where") or "")
    function = str(exc.get("function") or "")
    filename = str(exc.get("filename") or "")
    if "socket.gaierror" in names:
        return "the sandbox has no network (a host name cannot be resolved)"
    if code in _NO_ROUTE:
        return "the sandbox has no network (no route to the host)"
    if code in _REFUSED or names & {"builtins.ConnectionRefusedError",
                                    "builtins.ConnectionResetError"}:
        return _refused(text)
    if code in _BIND:
        return ("a server cannot bind its address in the sandbox (no interface but the "
                "loopback, or the port is taken)")
    if "builtins.OSError" in names and code is not None:
        started = function in ("_execute_child", "_spawn", "create_subprocess_exec") or \
            where.endswith(("subprocess.py", "asyncio/subprocess.py", "base_subprocess.py"))
        if started and code in (errno.ENOENT, errno.EACCES):
            program = os.path.basename(filename) or "a program"
            return f"a program the tests run is not installed here ({program[:60]})"
        if code == errno.EROFS:
            return "the sandbox is read-only outside its folders"
        outside = filename.startswith("/") and not (
            os.path.normpath(filename) + "/").startswith(os.path.normpath(sandbox) + "/")
        if code in (errno.EACCES, errno.EPERM) and outside:
            return "the sandbox refuses a path outside its folders"
        if code == errno.EPERM and not filename:
            return "an operation the sandbox does not permit (EPERM)"
    if "subprocess.CalledProcessError" in names and where.endswith("subprocess.py"):
        if program := _system_program(text, sandbox):
            return (f"a program the tests run fails here ({program[:40]}): its own setup "
                    "in the sandbox, not the project's code")
    if names & _TIMEOUTS:
        return "a timeout (a service or process did not answer in time)"
    if "locale.Error" in names:
        return "a locale this machine does not have (locale.Error)"
    if names & {"zoneinfo._common.ZoneInfoNotFoundError", "pytz.exceptions.UnknownTimeZoneError"}:
        return "time zone data this machine does not have"
    own = str(mro[0]) if mro else ""
    if _SITE.search(where) and not own.startswith("builtins.") and any(
            _CLIENT.search(m.rsplit(".", 1)[-1]) for m in mro if not m.startswith("builtins.")):
        return f"a client library could not reach its service ({own.rsplit('.', 1)[-1]})"
    return None


def _system_program(text: str, sandbox: str) -> str | None:
    """The failed command's program, where it is another system's: not
    Python or a test runner, not a path inside the sandbox, and not a
    console script the project declares (its own CLI failing is the code's)."""
    m = _FAILED_COMMAND.search(text)
    if m is None:
        return None
    program = m.group(1)
    name = os.path.basename(program)
    if not name or _PYTHON.match(name) or name.endswith(".py"):
        return None
    if "/" in program and (not program.startswith("/") or (os.path.normpath(program) + "/")
                           .startswith(os.path.normpath(sandbox) + "/")):
        return None
    declared = re.compile(rf"(?m)^\s*[\"']?{re.escape(name)}[\"']?\s*=")
    for config in ("pyproject.toml", "setup.cfg", "setup.py"):
        body = read_head(Path(sandbox) / config, 256_000) if sandbox else None
        if body and (declared.search(body) or f"'{name}=" in body or f'"{name}=' in body
                     or f"'{name} =" in body or f'"{name} =' in body):
            return None
    return name


def _refused(text: str) -> str:
    for m in _SERVICE_PORT.finditer(text):
        port = int(m.group(1))
        if port in SERVICES:
            return f"the tests need {SERVICES[port]} (port {port}), which is not running"
    return ("a service or server the tests connect to is not running here "
            "(connection refused)")


def _short_where(path: str) -> str:
    """``redis/connection.py`` for a file in site-packages, ``json/decoder.py``
    for the standard library's: who raised it, not where it is installed."""
    parts = re.split(r"[/\\]", path)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return "/".join(parts[parts.index(marker) + 1:])[-120:]
    cut = next((i for i, p in enumerate(parts) if re.fullmatch(r"python3\.\d+", p)), None)
    return "/".join(parts[cut + 1:])[-120:] if cut is not None else path[-120:]


_MASKS = (
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    (re.compile(r"(?:/[\w.@+-]+){2,}/?"), "<path>"),
    (re.compile(r"\b\d+(?:\.\d+){3}\b"), "<ip>"),
    (re.compile(r"\b\d+(?:\.\d+)?\b"), "<n>"),
)


def normalized(message: str) -> str:
    """A failure's message with its numbers, paths and addresses masked: the
    same exception in many tests reads the same."""
    head = "\n".join(message.strip().splitlines()[:2])
    for pattern, mask in _MASKS:
        head = pattern.sub(mask, head)
    return head
