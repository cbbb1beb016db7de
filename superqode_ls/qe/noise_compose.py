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
"""

from __future__ import annotations

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
    """The findings, a password for the test run's own database marked noise."""
    files: dict[str, dict[str, tuple[int, int, str]] | None] = {}
    out = []
    for f in findings:
        if (f.noise is None and f.file and f.range and _COMPOSE.search(f.file)
                and {f.rule_id, *f.related_rules} & COMPOSE_RULES and not provider_token(f)):
            if f.file not in files:
                files[f.file] = _services(lines_of(f.file))
            services = files[f.file]
            why = _why(f.file, services, f.range.start_line) if services else None
            if why is not None:
                f = mark_noise(f, why, Severity.low)
        out.append(f)
    return out


def _services(lines: list[str] | None) -> dict[str, tuple[int, int, str]] | None:
    """Each service's (first line, last line, its text), 1-based, or None."""
    if lines is None:
        return None
    text = "\n".join(lines)
    if len(text) > _MAX_BYTES:
        return None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    if not isinstance(root, yaml.MappingNode):
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
