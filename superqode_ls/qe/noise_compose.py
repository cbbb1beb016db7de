"""A compose file's database password whose only client is the test run.

lemur's ``docker-compose.yml`` starts ``postgres`` with ``POSTGRES_PASSWORD:
lemur`` for one client, the ``test`` service whose command is ``make test``:
a throwaway database the test suite creates and drops, never a
deployment's. Proved by the file, all required: the flagged line is inside
one service; that service runs the tests itself (its command runs a test
runner), or at least one other service uses it (``links``, ``depends_on``,
or its name as a host in the other's settings) and every service that uses
it runs the tests, and no other service runs the project's code (``build``)
or reads an env file (where it might name the host unseen). A service
another non-test service uses (a web app), a
file that does not parse, or a line outside a service stays shown; so does
a provider's token.

Two more, each proved by the files: a GitHub Actions job's ``services`` or
``container`` (modoboa's ``POSTGRES_PASSWORD: postgres``), a container the
runner starts for the job and discards, never production (a step's ``env``
stays shown: a deploy step's literal password is a real one); and a local
development compose file (OpenOversight's ``docker-compose.yml``): its name
says nothing of production, a compose file beside it does
(``docker-compose.prod-img.yml``), and a service it builds mounts the
developer's checkout (``./OpenOversight/:/usr/src/app/...``). Without the
production file beside it, with one that only overrides this file's
services (no image or build of its own), or without the mounted checkout,
it stays shown.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

import yaml

from ..models import Finding, Severity
from .context import mark_noise
from .noise_paths import provider_token

Lines = Callable[[str], "list[str] | None"]

COMPOSE_RULES = frozenset({"secret-config-password", "secret-generic", "hardcoded-db-password"})
WHY_USED = ("a test database's password in {file}: service {service}'s only client is the test "
            "run ({clients}), a throwaway database, no deployment's")
WHY_SELF = ("the test run's own settings in {file}: service {service} runs the tests "
            "({command}), no deployment")
_COMPOSE = re.compile(r"(^|/)(docker-)?compose[\w.-]*\.ya?ml$")
_TEST_COMMAND = re.compile(r"\b(make\s+test\w*|pytest|py\.test|tox|nox|manage\.py\s+test|"
                           r"-m\s+unittest|npm\s+(run\s+)?test|go\s+test)\b")
_MAX_BYTES = 256_000
_APP_CODE = re.compile(r"(?m)^\s*(build|env_file)\s*:")


def compose_noise(findings: list[Finding], lines_of: Lines) -> list[Finding]:
    """The findings, a password for the test run's own database, a CI job's
    service container's and a local development compose file's marked noise."""
    files: dict[str, dict[str, tuple[int, int, str]] | None] = {}
    jobs: dict[str, list[tuple[int, int, str]] | None] = {}
    dev: dict[str, str | None] = {}
    out = []
    for f in findings:
        if (f.noise is None and f.file and f.range
                and {f.rule_id, *f.related_rules} & COMPOSE_RULES and not provider_token(f)):
            why = None
            if _COMPOSE.search(f.file):
                if f.file not in files:
                    files[f.file] = _services(lines_of(f.file))
                services = files[f.file]
                why = _why(f.file, services, f.range.start_line) if services else None
                if why is None and services:
                    if f.file not in dev:
                        dev[f.file] = _dev_compose(f.file, services, lines_of)
                    if dev[f.file] and any(a <= f.range.start_line <= b
                                           for a, b, _ in services.values()):
                        why = dev[f.file]
            elif _WORKFLOW.search(f.file):
                if f.file not in jobs:
                    jobs[f.file] = _job_services(lines_of(f.file))
                why = next((WHY_CI.format(file=f.file, where=where)
                            for a, b, where in jobs[f.file] or ()
                            if a <= f.range.start_line <= b), None)
            if why is not None:
                f = mark_noise(f, why, Severity.low)
        out.append(f)
    return out


# A GitHub Actions workflow: its jobs' ``services`` (and ``container``) are
# containers the runner starts for the job and throws away with it.
_WORKFLOW = re.compile(r"(^|/)\.github/workflows/[^/]+\.ya?ml$")
WHY_CI = ("a CI job's throwaway container ({where} in {file}): the runner starts it for the "
          "job and discards it after, no deployment's")


def _mapping(node: object, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key),
                None)


def _job_services(lines: list[str] | None) -> list[tuple[int, int, str]] | None:
    """(first line, last line, job/service) of each job's service and
    container blocks, 1-based, or None when the file does not parse."""
    root = _compose_root(lines)
    block = _mapping(root, "jobs")
    if not isinstance(block, yaml.MappingNode):
        return None
    out = []
    for k, job in block.value:
        for part in ("services", "container"):
            node = _mapping(job, part)
            if node is None:
                continue
            out.append((node.start_mark.line + 1, node.end_mark.line + 1,
                        f"job {getattr(k, 'value', '?')}'s {part}"))
    return out


# Files beside a compose file that say the deployment is elsewhere.
_PROD_COMPOSE = re.compile(r"(?i)^(docker-)?compose[\w.-]*(prod|production|deploy|release)"
                           r"[\w.-]*\.ya?ml$")
# A service that mounts the project's own tree (``./app/:/usr/src/app``):
# the developer's checkout runs in it, edited live.
_SOURCE_MOUNT = re.compile(r"(?m)^\s*-\s*[\"']?\.{1,2}/?[\w./-]*:/")
WHY_DEV = ("a local development compose file: the deployment has its own ({prod}), and this "
           "one mounts the developer's checkout into {service} (a throwaway database for "
           "the laptop)")


def _dev_compose(file: str, services: dict[str, tuple[int, int, str]],
                 lines_of: Lines) -> str | None:
    """Why ``file`` is a developer's compose file: its name says nothing of
    production, a compose file beside it does, and a service built from the
    tree mounts the checkout. None otherwise."""
    folder, _, name = file.rpartition("/")
    if _PROD_COMPOSE.match(name) or _DEPLOY_WORD.search(name):
        return None
    prods = []
    for sibling in _siblings(folder, lines_of):
        if _PROD_COMPOSE.match(sibling) and sibling != name:
            prods.append(sibling)
    if not prods:
        return None
    for prod in prods:
        # An override (``-f docker-compose.yml -f docker-compose.prod.yml``)
        # runs this file's services in production: each service of a
        # standalone production file names its own image or build.
        theirs = _services(lines_of(f"{folder}/{prod}" if folder else prod))
        if not theirs or not all(re.search(r"(?m)^\s*(image|build)\s*:", text)
                                 for _, _, text in theirs.values()):
            return None
    mounting = [svc for svc, (_, _, text) in services.items()
                if re.search(r"(?m)^\s*build\s*:", text) and _SOURCE_MOUNT.search(text)]
    if not mounting:
        return None
    return WHY_DEV.format(prod=", ".join(sorted(prods)), service=", ".join(mounting))


_DEPLOY_WORD = re.compile(r"(?i)prod|live|deploy|release|stag")


def _siblings(folder: str, lines_of: Lines) -> list[str]:
    """The names of the files in ``folder`` (the filter's root-relative
    reader knows the root)."""
    root = getattr(getattr(lines_of, "__self__", None), "root", None)
    if root is None:
        return []
    try:
        with os.scandir(os.path.join(root, folder) if folder else root) as it:
            return [e.name for e in it if e.is_file(follow_symlinks=False)]
    except OSError:
        return []


def _compose_root(lines: list[str] | None) -> yaml.Node | None:
    """The YAML file's node tree, or None (no file, too large, no parse)."""
    if lines is None:
        return None
    text = "\n".join(lines)
    if len(text) > _MAX_BYTES:
        return None
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None


def _services(lines: list[str] | None) -> dict[str, tuple[int, int, str]] | None:
    """Each service's (first line, last line, its text), 1-based, or None."""
    root = _compose_root(lines)
    if lines is None or not isinstance(root, yaml.MappingNode):
        return None
    block = next((v for k, v in root.value if isinstance(k, yaml.ScalarNode)
                  and k.value == "services"), None)
    if not isinstance(block, yaml.MappingNode):
        return None
    out = {}
    starts = [k.start_mark.line for k, _ in block.value] + [block.end_mark.line + 1]
    for i, (k, v) in enumerate(block.value):
        if not isinstance(k, yaml.ScalarNode):
            return None
        # a service runs to the line before the next one's name
        first, last = k.start_mark.line + 1, min(starts[i + 1], v.end_mark.line + 1)
        body = "\n".join(lines[first:last])
        out[str(k.value)] = (first, last, body)
    return out


def _command(body: str) -> str | None:
    m = re.search(r"(?m)^\s*(?:command|entrypoint)\s*:\s*(.+)$", body)
    return m.group(1).strip() if m else None


def _runs_tests(body: str) -> bool:
    command = _command(body)
    return command is not None and bool(_TEST_COMMAND.search(command))


def _why(file: str, services: dict[str, tuple[int, int, str]], line: int) -> str | None:
    here = next((name for name, (a, b, _) in services.items() if a <= line <= b), None)
    if here is None:
        return None
    body = services[here][2]
    if _runs_tests(body):
        return WHY_SELF.format(file=file, service=here, command=_command(body))
    uses = re.compile(rf"(?<![\w.-]){re.escape(here)}(?![\w-])")
    # (another service's image of the same name is no use of this one)
    clients = [name for name, (_, _, text) in services.items() if name != here
               and uses.search(re.sub(r"(?m)^\s*image\s*:.*$", "", text))]
    if not clients or not all(_runs_tests(services[c][2]) for c in clients):
        return None
    # The application's own code in another service (built here, or given an
    # env file that may name this host) may use it unseen: not proved.
    if any(name != here and not _runs_tests(text) and _APP_CODE.search(text)
           for name, (_, _, text) in services.items()):
        return None
    return WHY_USED.format(file=file, service=here, clients=", ".join(clients))
