"""Test errors whose cause is the environment the suite ran in, not the code.

Every project, whatever its runner: a test module or a test that fails
because the environment lacks something the project needs is a setup
problem, counted and named in the role's line, never a finding to act on:

- Django not configured (``ImproperlyConfigured``, "Apps aren't loaded
  yet"): the settings the project documents are not there;
- ``No module named 'x'`` where ``x`` is not the project's own code: a
  package the environment lacks (the project may declare it or not);
- an installed package importing what the standard library no longer has
  (Django 1.8's ``from collections import Iterator`` on Python 3.11);
- a database or cache service the tests connect to is not running
  (connection refused on its well-known port, or its driver's own words);
- a cloud account the tests' clients need and the checkout does not carry:
  Google's application default credentials, an AWS region or credentials,
  Azure's (luigi's Dataproc, BigQuery and AWS Batch tests build their
  clients at import: ``DefaultCredentialsError``, ``NoRegionError``);
- a path the tests need that git ignores and the checkout lacks: a build
  step's output (a built frontend, compiled assets).
- the project's own compiled extension that is not built (yarl's
  ``yarl._quoting_c``: its ``.pyx`` source is there, no built module): the
  sandbox holds the sources only, and compiling them is a build step;
- a git submodule the tests read that is not checked out (tomlkit's
  ``tests/toml-test``): a clone made without ``--recurse-submodules``; an
  initialised one is carried into the sandbox (workspace/carry.py).

What stays a finding: an ImportError of the project's own module (a module
that is not there, a name it does not define), a connection refused on
any other port (a local server the suite itself failed to start), and a
name missing from an installed third-party package (``cannot import name
'TextField' from 'wtforms'``: wtforms 3 dropped it). That package is there;
the project's code uses an API its dependency no longer (or not yet) has,
in the version its declarations let in: ``dependency_api`` says so, with
the installed version and what the project declares.

A failing test whose cause is where it ran (``environment_cause``): no
network in the sandbox (no route, no name, no interface but the loopback), a
path outside the sandbox it may not write (``/tmp/foo`` where no private
/tmp could be given, the home), SuperQode's guard, running as root.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pathspec
from packaging.utils import canonicalize_name

from ...workspace.pyenv import requirement_name
from ...workspace.pyenv_declared import declared_requirements, declared_where
from ._unit_django import test_settings
from ._unit_records import clipped

_DJANGO = re.compile(
    r"(?:django\.core\.exceptions\.)?(ImproperlyConfigured|AppRegistryNotReady): ?([^\n]*)")
# A name the standard library no longer has (collections.Iterator, gone in
# 3.10): the pinned packages are older than the interpreter.
_GONE = re.compile(r"cannot import name '(\w+)' from '([\w.]+)' \(([^)]+)\)")
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
# pytest's own answer to an async test with no plugin to run it: the plugin
# is the environment's (the project declares it where its tests run: tox,
# a requirements file), never the test's fault.
_NO_ASYNC_PLUGIN = re.compile(r"async def functions are not natively supported")

# A failure the sandbox explains, not the code: its network is off (no
# route, no name resolution), so a test that reaches out fails there and
# passes in the developer's CI. Connection refused is not among them: a
# local server that did not start is the suite's own problem.
_NO_NETWORK = re.compile(
    r"\[Errno (?:101|-2|-3|-5)\]|Network is unreachable|Temporary failure in name resolution|"
    r"Name or service not known|No address associated with hostname|"
    r"nodename nor servname provided|getaddrinfo failed")
# As root, a file made unreadable or unwritable stays readable: a test that
# expects the permission error fails (its CI runs as a user).
_AS_ROOT = re.compile(r"DID NOT RAISE <class '(?:PermissionError|OSError)'>")


# SuperQode's own guard refused what the test does (writing git's
# configuration, even of a repository the test made): the sandbox's policy.
_GUARD = re.compile(r"superqode guard: blocked: ([^\n(]+)")


# The sandbox's read-only root or its write barrier refused a path outside
# the sandbox (a test writing a fixed ``/tmp/foo``, its HOME): where no
# private /tmp could be given, the test passes on the developer's machine.
_DENIED = re.compile(r"\[Errno (30|13)\] (?:Read-only file system|Permission denied): '(/[^'\n]*)'")
# A test reading the machine's network interfaces finds none but the
# loopback (glances' ``test_glances_api_plugin_network``: ``assert 0 > 0``
# on its list of interfaces): what it reads, and how it comes up empty.
_INTERFACES = re.compile(r"net_if_(?:addrs|stats)|net_io_counters|netifaces\.|if_nameindex|"
                         r"\bnetwork\b[^\n]*\.keys\(\)|\binterfaces\(\)")
# pytest's short traceback shows the failing line only (``assert len(keys)
# > 0``): the test's name says what it reads.
_INTERFACE_TEST = re.compile(r"network|interface|netif|net_if|ifaddr|nic\b", re.IGNORECASE)
_EMPTY = re.compile(r"where 0 = len\(|assert (?:0|\[\]|\{\}|\(\)) |"
                    r"IndexError: list index out of range")


def sandbox_denied(text: str, sandbox: str | None) -> str | None:
    """The path outside ``sandbox`` that the sandbox kept a test from
    writing, or None. Read-only anywhere outside it; permission denied only
    under /tmp or the home (elsewhere the developer's machine refuses too)."""
    m = _DENIED.search(text)
    if m is None:
        return None
    path = os.path.normpath(m.group(2))
    if sandbox and (path + "/").startswith(os.path.normpath(sandbox) + "/"):
        return None
    if m.group(1) == "13":
        home = os.path.expanduser("~")
        if not any((path + "/").startswith(d.rstrip("/") + "/") for d in ("/tmp", home)
                   if d and d != "/"):
            return None
    return path


# Markers projects put on the tests that need the network (pip-tools,
# pytest-socket's users, astropy's ``remote_data``...).
_NETWORK_MARKERS = {"network", "online", "internet", "needs_network", "requires_network",
                    "remote_data", "webtest", "requires_internet"}


def environment_cause(record: dict[str, Any], root: bool | None = None,
                      offline: bool = False, sandbox: str | None = None) -> str | None:
    """Why a failing test failed because of where it ran, or None.
    ``offline``: the sandbox had no network; ``sandbox``: where the test ran."""
    text = "\n".join(str(record.get(k) or "") for k in ("message", "longrepr"))
    if _NO_NETWORK.search(text):
        return "the sandbox has no network (the test reaches out)"
    name = str(record.get("nodeid") or "").rsplit("::", 1)[-1]
    if offline and _EMPTY.search(text) and (_INTERFACES.search(text)
                                            or _INTERFACE_TEST.search(name)):
        return "the sandbox has no network (no interface but the loopback)"
    if denied := sandbox_denied(text, sandbox):
        # One cause for a suite's many fixed paths (/tmp/foo, /tmp/log...).
        home = os.path.expanduser("~").rstrip("/")
        where = ("under /tmp" if (denied + "/").startswith("/tmp/") else
                 "in the home" if home and (denied + "/").startswith(home + "/") else denied[:120])
        return f"the sandbox is read-only outside its folders (the test writes {where})"
    marked = _NETWORK_MARKERS.intersection(record.get("markers") or ())
    if offline and marked:
        return f"the sandbox has no network (the project marks the test `{min(marked)}`)"
    if m := _GUARD.search(text):
        return f"SuperQode's guard refused it ({m.group(1).strip()[:120]})"
    as_root = (os.geteuid() == 0 if hasattr(os, "geteuid") else False) if root is None else root
    if as_root and _AS_ROOT.search(text):
        return "it runs as root, for whom file permissions do not apply"
    return None


# A test's own precondition, asserted with a message that names what it
# needs: "Needs PLAYWRIGHT_DRIVER_URL set for this test", "Must have the OSINT
# plugin installed at test time" (changedetection.io): the machine's, not
# the code's.
_SAYS_IT_NEEDS = re.compile(
    r"AssertionError: ((?:needs?|requires?|must have)\b[^\n|]{0,160}?\b(?:set|installed|running|"
    r"available|configured|reachable)\b[^\n|]{0,80})", re.IGNORECASE)

SERVICES = {5432: "PostgreSQL", 3306: "MySQL", 6379: "Redis", 27017: "MongoDB",
            11211: "memcached", 5672: "RabbitMQ", 9200: "Elasticsearch"}
_REFUSED = re.compile(r"Connection refused|Errno 111|ECONNREFUSED|actively refused", re.IGNORECASE)
# ":5432", "port 5432", asyncio's "Connect call failed ('127.0.0.1', 5432)"
_PORT = re.compile(r"(?:port |:|', )(\d{4,5})\b")
# Drivers that do not name the port when the server is not there.
_DRIVERS = (
    (re.compile(r"Is the server running on (?:host|that host)|could not connect to server|"
                r"psycopg2?\.OperationalError: connection"), "PostgreSQL"),
    (re.compile(r"Can't connect to (?:local )?MySQL server"), "MySQL"),
    (re.compile(r"Error \d+ connecting to [\w.]+:6379|redis\.exceptions\.ConnectionError"),
     "Redis"),
    # pika's words (dramatiq's RabbitMQ broker), which name no port
    (re.compile(r"AMQPConnect(?:ion|or)\w*Error|AMQPConnectionWorkflowFailed"), "RabbitMQ"),
    # docker-py's (testcontainers' containers for the suite's Redis, its
    # PostgreSQL): no daemon, or its socket not there (the CI's has one)
    (re.compile(r"docker\.errors\.DockerException|Cannot connect to the Docker daemon|"
                r"DockerException: Error while fetching server API version"), "a Docker daemon"),
)


# ``os.environ["CI_JIRA_URL"]`` raising, as a logged traceback shows it or
# as pytest's short one does (``<frozen os>:679: in __getitem__``).
_UNSET = re.compile(r"(?:File \"(?:<frozen os>|[^\"\n]*[/\\]os\.py)\", line \d+, in __getitem__|"
                    r"(?:<frozen os>|[/\\]os\.py):\d+: in __getitem__)\n(?:[^\n]*\n){0,4}?"
                    r"(?:E\s+)?KeyError: '([A-Za-z_]\w{0,80})'")


def unset_variable(text: str) -> str | None:
    """"the tests need the environment variable CI_JIRA_URL ..." when a
    traceback in ``text`` shows ``os.environ[...]`` raising KeyError: the
    address or account of a live service the developers' CI sets."""
    if m := _UNSET.search(text):
        return (f"the tests need the environment variable {m.group(1)}, which is not set here "
                "(the developers' CI sets it, most often for a live service: set it to run them)")
    return None


# Django's GIS without its C libraries (umap: GDAL), said in its own words.
_NO_LIBRARY = re.compile(r"Could not find the (GDAL|GEOS) library")


def environment_problem(record: dict[str, Any], root: Path) -> str | None:
    """Why a failing test (or test module) failed for want of something in
    its environment, or None when the code is to blame."""
    text = "\n".join(str(record.get(k) or "") for k in ("message", "longrepr"))
    # A test's setup that logged the KeyError and failed on its own check
    # (jira's "Test Manager setUp failed"): the log is the evidence.
    if unset := unset_variable(text + "\n" + str(record.get("logged") or "")):
        return unset
    if m := _DJANGO.search(text):
        if lib := _NO_LIBRARY.search(m.group(2)):
            return (f"the {lib.group(1)} system library is not installed here (Django's GIS "
                    "needs it): install it with the system's package manager")
        what = clipped(m.group(2).strip().split(". ")[0], 160)
        if "settings are not configured" in what or m.group(1) == "AppRegistryNotReady":
            settings = test_settings(root)
            return ("Django's settings are not loaded (the tests need "
                    + (f"DJANGO_SETTINGS_MODULE={settings})" if settings else
                       "DJANGO_SETTINGS_MODULE)"))
        return f"Django is not configured here ({m.group(1)}: {what})"
    if _NO_ASYNC_PLUGIN.search(text):
        return ("no async test plugin is installed in the test environment (pytest-asyncio, "
                "anyio's or trio's): pytest cannot run the project's async tests")
    if service := missing_service(text):
        return service
    if account := missing_cloud_account(text):
        return account
    if built := ignored_output(text, root):
        return built
    if sub := missing_submodule(text, root):
        return sub
    if m := _SAYS_IT_NEEDS.search(text):
        return f"the test's own check says what it needs here: {m.group(1).strip()[:200]}"
    if m := _GONE.search(text):
        if "site-packages" not in m.group(3) and "/lib/python" in m.group(3):
            return (f"an installed package needs an older Python (it imports {m.group(1)!r} "
                    f"from the standard library's {m.group(2)}, which this Python no longer has)")
    for m in _NO_MODULE.finditer(text):
        name = m.group(1)
        if own_module(root, name):
            if unbuilt := unbuilt_extension(root, name):
                return unbuilt
            continue  # the project's own module: its import is broken
        top = name.split(".")[0]
        if "." in name and (site := _site_with(text, top)):
            # The package is there, its submodule is not: a version other
            # than the importing code needs (anyio's plugin, pytest 6).
            version = _installed_version(f"{site}/{top}", top)
            return (f"No module named {name!r}: the installed {top}"
                    f"{' ' + version if version else ''} ({site}) has no such module; the "
                    "environment holds a version other than the one the importing code needs")
        if where := declared_where(root, top):
            # Declared, and still not there: a part of the declarations the
            # environment was made without (an extra, a file that could not
            # be installed), said as such rather than "declared, not installed".
            return (f"package {top!r} is not in the test environment, which was made without "
                    f"it though the project declares it ({where}): set roles.python to an "
                    "environment that has it")
        return (f"package {top!r} is not installed in the test environment (the project does "
                "not declare it under that name)")
    return None


def ignored_output(text: str, root: Path) -> str | None:
    """"the tests need app/frontend, which the repository ignores ..." when
    ``text`` names a path in ``root`` that is not there and that git
    ignores: a build step's output (fastapi's template serves its built
    frontend from ``backend/app/frontend``) that a fresh checkout lacks.
    The ignore files are read, never git run (the sandbox's git dir is the
    session's)."""
    for m in re.finditer(re.escape(str(root)) + r"/([^\s'\"():,]+)", text):
        rel = m.group(1).rstrip(".")
        path = root / rel
        if not path.exists() and _git_ignored(path):
            return (f"the tests need {rel}, which the repository ignores: the output of a build "
                    "step of the project's that has not run here")
    return None


_SUBMODULE_PATH = re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.MULTILINE)


def missing_submodule(text: str, root: Path) -> str | None:
    """"the tests need tests/toml-test, a git submodule that is not checked
    out ..." when ``text`` names a path in a submodule (``.gitmodules`` of
    the checkout ``root`` is in) whose folder is empty or missing. The file
    is read as data, never git run (the sandbox's git dir is the session's)."""
    top = next((d for d in (root, *root.parents) if (d / ".git").exists()), None)
    if top is None:
        return None
    modules = top / ".gitmodules"
    if modules.is_symlink() or not modules.is_file():
        return None  # (a FIFO a session planted would block the read)
    try:
        declared = modules.read_text(encoding="utf-8", errors="replace")[:100_000]
    except OSError:
        return None
    for rel in dict.fromkeys(_SUBMODULE_PATH.findall(declared)):
        rel = rel.strip().strip('"').rstrip("/")
        folder = top / rel
        if not rel or ".." in Path(rel).parts or not folder.resolve().is_relative_to(top.resolve()):
            continue
        if folder.is_dir() and (folder / ".git").exists():
            continue  # checked out (and carried)
        try:
            if folder.is_dir() and any(folder.iterdir()):
                continue  # not a bare placeholder: its files are there
        except OSError:
            continue
        named = re.compile(r"(?:^|[\s'\"(/])" + re.escape(rel) + r"(?=[/\s'\"):,]|$)",
                           re.MULTILINE)
        if str(folder) in text or named.search(text):
            return (f"the tests need {rel}, a git submodule that is not checked out (run "
                    f"`git submodule update --init {rel}` in the project)")
    return None


def _git_ignored(path: Path) -> bool:
    """Whether a ``.gitignore`` between the checkout's top (the nearest
    folder with a ``.git``) and ``path`` ignores it (as a file or a folder)."""
    top = next((d for d in path.parents if (d / ".git").exists()), None)
    if top is None:
        return False
    folders = [top, *reversed([d for d in path.parents if top in d.parents])]
    for folder in folders:
        ignore = folder / ".gitignore"
        if ignore.is_symlink() or not ignore.is_file():
            continue  # (a FIFO a session planted would block the read)
        try:
            lines = ignore.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        spec = pathspec.GitIgnoreSpec.from_lines(lines.splitlines())
        rel = path.relative_to(folder).as_posix()
        if spec.match_file(rel) or spec.match_file(rel + "/"):
            return True
    return False


def dependency_api(record: dict[str, Any], root: Path) -> str | None:
    """"wtforms 3.1.2 is installed and has no 'TextField' ..." for an import
    of a name a third-party package does not define, or None."""
    text = "\n".join(str(record.get(k) or "") for k in ("message", "longrepr"))
    for m in _GONE.finditer(text):
        name, module, where = m.groups()
        if not re.search(r"[/\\](?:site|dist)-packages[/\\]", where) or own_module(root, module):
            continue
        top = module.split(".")[0]
        version = _installed_version(where, top)
        said = next((r for r in declared_requirements(root)
                     if requirement_name(r) == canonicalize_name(top)), None)
        if said is None:
            declared = "the project does not declare it"
        elif re.search(r"[<>=~!]", said):
            declared = f"the project declares {said!r}, which lets this version in"
        else:
            declared = f"the project declares {said!r} unpinned, which lets this version in"
        return (f"{top}{' ' + version if version else ''} is installed and has no {name!r} "
                f"(imported from {module}): the project's code uses a name its dependency no "
                f"longer (or not yet) has; {declared}: pin the version the code was written for, "
                "or update the code to its API")
    return None


_SITE = re.compile(r"(/[^\s'\"():]*?/(?:site|dist)-packages)/")


def _site_with(text: str, top: str) -> str | None:
    """The site-packages named in ``text`` (a traceback's frames) that holds
    the package ``top``, or None."""
    for site in dict.fromkeys(m.group(1) for m in _SITE.finditer(text)):
        try:
            if (Path(site) / top).is_dir() or (Path(site) / f"{top}.py").is_file():
                return site
        except OSError:
            continue
    return None


def _installed_version(where: str, top: str) -> str | None:
    """The version of the distribution named ``top`` installed in the
    site-packages holding ``where`` (a module's file), or None."""
    parts = Path(where).parts
    cut = max(i for i, p in enumerate(parts) if p in ("site-packages", "dist-packages"))
    site = Path(*parts[:cut + 1])
    want = canonicalize_name(top)
    try:
        infos = list(site.glob("*.dist-info"))
    except OSError:
        return None
    for info in infos:
        dist, _, version = info.name[:-len(".dist-info")].partition("-")
        if canonicalize_name(dist) == want and version:
            return version
    return None


# The cloud SDKs' own words when the account they would use is not
# configured: the developer's machine or CI has it, a checkout never does.
_CLOUD = (
    (re.compile(r"google\.auth\.exceptions\.DefaultCredentialsError|"
                r"Could not automatically determine credentials"),
     "Google Cloud credentials (application default credentials)"),
    (re.compile(r"botocore\.exceptions\.NoRegionError|NoRegionError: You must specify a region"),
     "an AWS region (AWS_DEFAULT_REGION or a configured profile)"),
    (re.compile(r"botocore\.exceptions\.NoCredentialsError|NoCredentialsError: Unable to locate "
                r"credentials"), "AWS credentials"),
    (re.compile(r"azure\.identity\.\w*CredentialUnavailableError|"
                r"DefaultAzureCredential failed to retrieve a token"), "Azure credentials"),
)


def missing_cloud_account(text: str) -> str | None:
    """"the tests need Google Cloud credentials ..." when a cloud SDK says
    the account it would use is not configured, or None."""
    for pattern, what in _CLOUD:
        if pattern.search(text):
            return (f"the tests need {what}, which this environment does not have (a cloud "
                    "account the developer's machine or CI configures)")
    return None


# A fixture that starts the suite's services with ``docker compose``
# (pytest-docker: python-gitlab's functional tests) where the docker CLI
# has no compose (its "unknown shorthand flag") or the command failed.
_COMPOSE = re.compile(r"Command docker[ -]compose [^\n]*? returned \d+|"
                      r"docker: '?compose'? is not a docker command|"
                      r"unknown shorthand flag: 'f' in -f")


def missing_service(text: str) -> str | None:
    """"the tests need PostgreSQL (localhost:5432), which is not running", or None."""
    if _COMPOSE.search(text):
        return ("the tests start their services with `docker compose`, which cannot run here "
                "(no docker compose, or no Docker daemon)")
    if _REFUSED.search(text):
        for m in _PORT.finditer(text):
            port = int(m.group(1))
            if port in SERVICES:
                return f"the tests need {SERVICES[port]} (port {port}), which is not running"
    for pattern, name in _DRIVERS:
        if pattern.search(text):
            return f"the tests need {name}, which is not running"
    return None


_EXTENSION_SOURCES = (".pyx", ".c", ".cpp")


def unbuilt_extension(root: Path, dotted: str) -> str | None:
    """"the project's compiled extension ... is not built here" when the
    module ``dotted`` of the project has an extension's source beside where
    it would be (``_quoting_c.pyx``) and neither a built module nor Python
    source; None otherwise (a module that is simply not there stays the
    code's)."""
    parts = dotted.split(".")
    for base in (root, root / "src"):
        path = base.joinpath(*parts)
        try:
            if path.with_suffix(".py").is_file() or path.is_dir():
                return None
            source = next((path.with_suffix(s) for s in _EXTENSION_SOURCES
                           if path.with_suffix(s).is_file()), None)
            if source is None:
                continue
            if any(path.parent.glob(f"{parts[-1]}.*.so")) or any(
                    path.parent.glob(f"{parts[-1]}*.pyd")):
                return None
        except (OSError, ValueError):
            return None
        rel = source.relative_to(root).as_posix()
        return (f"the project's compiled extension {dotted} is not built here (its source "
                f"{rel} is): compiling it is a build step of the project's that has not run "
                "in the sandbox")
    return None


def own_module(root: Path, dotted: str) -> bool:
    """Whether ``dotted``'s top-level package is the project's own code."""
    top = dotted.split(".")[0]
    for base in (root, root / "src"):
        if (base / top).is_dir() or (base / f"{top}.py").is_file():
            return True
    return False


def only_environment(records: list[dict[str, Any]], root: Path) -> bool:
    """Whether pytest stopped at collection (exit 2, no test run) and only
    for modules the environment cannot import."""
    summary = next((r for r in reversed(records) if r.get("kind") == "summary"), None)
    if summary is None or summary.get("exitstatus") != 2:
        return False
    kinds = [r.get("kind") for r in records if r.get("kind") != "summary"]
    collect = [r for r in records if r.get("kind") == "collect"]
    return (bool(collect) and kinds.count("collect") == len(kinds)
            and all(environment_problem(r, root) for r in collect))
