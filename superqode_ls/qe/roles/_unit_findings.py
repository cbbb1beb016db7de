"""The unit role's findings: what the recorder plugin wrote about each
failing test, collection error and setup error, made into findings at the
lines a developer fixes, the environment's failures named as such."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...models import Evidence, Finding, Severity
from ._common import SourceCache, fingerprint, is_test_path
from ._unit_cause import ENVIRONMENT, UNKNOWN, judge, normalized
from ._unit_env import dependency_api, environment_cause, environment_problem
from ._unit_records import collect_location, line_range, project_rel, short_message

_RULES = {
    "call": ("test-failure", "Test fails"),
    "setup": ("test-error", "Test setup fails"),
    "teardown": ("test-error", "Test teardown fails"),
    "collect": ("collection-error", "Tests cannot be collected"),
}


def failure_findings(role: str, root: Path, records: list[dict[str, Any]],
                     tool: str = "pytest", offline: bool = False) -> list[Finding]:
    """One finding per failing test, collection or setup error in
    ``records`` (the recorder's): at the failing line of the test file, with
    evidence at the deepest frame of the project's own code; a failure the
    environment caused (network, a service, a missing package) is marked
    noise and said as such, never a finding to act on."""
    src = SourceCache(root)
    out: list[Finding] = []
    places: list[tuple | None] = []  # where each failure was raised, for _same_failure_once
    seen: set[str] = set()
    collected: set[tuple[str, str]] = set()
    for r in records:
        when = r.get("when") or "call"
        if r.get("kind") == "collect":
            # One module, two collectors (its tests and, with
            # --doctest-modules, its doctests: yarl): one import error.
            said = (str(r.get("nodeid") or ""), str(r.get("message") or ""))
            if said in collected:
                continue
            collected.add(said)
        rule_id, label = _RULES.get(when, _RULES["call"])
        nodeid = str(r.get("nodeid") or "")
        frames = [
            (rel, int(e["lineno"]), e.get("name") or "")
            for e in r.get("entries") or []
            if (rel := project_rel(root, str(e.get("path") or ""))) is not None
        ]
        test_file = nodeid.split("::", 1)[0] or None
        if r.get("kind") == "collect":
            file, line = collect_location(root, r.get("message") or "", test_file)
            frames = []
        else:
            test_frames = [f for f in frames if is_test_path(f[0]) or f[0] == test_file]
            if test_frames:
                file, line = test_frames[-1][0], test_frames[-1][1]
            else:
                file, line = test_file, int(r.get("test_line") or 1)
        message = short_message(str(r.get("message") or ""))
        evidence = [
            Evidence(
                message=message,
                file=file,
                line=line,
                snippet=src.line(file, line) if file else None,
            )
        ]
        user_frames = [f for f in frames if not is_test_path(f[0]) and f[0] != test_file]
        if user_frames:
            ufile, uline, uname = user_frames[-1]
            exc = r.get("exc_type") or "the error"
            evidence.append(
                Evidence(
                    message=f"{exc} raised in project code: {uname}() at {ufile}:{uline}",
                    file=ufile,
                    line=uline,
                    snippet=src.line(ufile, uline),
                )
            )
        key = fingerprint(rule_id, "pytest", file or "", nodeid)
        if key in seen:  # e.g. a test failing in call and again in teardown
            key = fingerprint(rule_id, "pytest", file or "", nodeid, when)
        seen.add(key)
        title = f"{label}: {nodeid}" if nodeid else label
        cause = (environment_cause(r, offline=offline, sandbox=str(root)) if r.get("kind") != "collect" else None
                 ) or environment_problem(r, root) or _collection_warning(r)
        unknown = None
        if cause is None and r.get("kind") != "collect":
            kind, said = judge(r, root)
            cause = said if kind == ENVIRONMENT else None
            unknown = said if kind == UNKNOWN else None
        # A name an installed package lacks: the code's (or its unpinned
        # dependency's API change), said as such, never "not installed".
        api = dependency_api(r, root) if cause is None else None
        if api:
            message = f"{api}\n{message}"
        where = f" (raised at {user_frames[-1][0]}:{user_frames[-1][1]})" if user_frames else ""
        if unknown:
            where = (f" (raised in {unknown}, outside the project's code, with no sign of the "
                     "environment: the cause is not proven)")
        # The deepest frame of the project's (its tests included): a
        # library's frame (unittest's assertEqual) is shared by unrelated tests.
        at = frames[-1][:2] if frames else (file, line)
        if "[" in nodeid and r.get("kind") != "collect":
            # The variants of one parametrized test failing at one place are
            # one failure, whatever each raised (changedetection.io's apprise
            # test: RequestException, HTTPError, Exception).
            places.append((rule_id, nodeid.split("[", 1)[0], *at))
        else:
            places.append((rule_id, str(r.get("exc_type") or ""), normalized(message), *at))
        severity, reason = Severity.high, None
        if cause:
            severity, reason = Severity.info, f"info: the environment's, {cause}"
        elif unknown:
            severity, reason = Severity.medium, (
                f"medium: not shown to be the code's ({r.get('exc_type') or 'the error'} "
                f"raised in {unknown})")
        out.append(
            Finding(
                id=key,
                role=role,
                tool=tool,
                rule_id=rule_id,
                title=title,
                message=f"{message}{where}",
                severity=severity,
                severity_reason=reason,
                noise=(f"the environment, not the code: {cause}" if cause else None),
                confidence=0.7 if unknown else 0.95,  # shown, below the proven
                category="tests",
                file=file,
                range=line_range(src.line(file, line), line) if file else None,
                evidence=evidence,
                tags=[tool, when, *(["environment"] if cause else []),
                      *(["cause-unknown"] if unknown else []),
                      *(["dependency-api"] if api else [])],
                snippet=src.line(file, line) if file else None,
            )
        )
    return _unproven_summed(_same_failure_once(_shared_cause(out, places), places))


def _shared_cause(found: list[Finding], places: list[tuple | None]) -> list[Finding]:
    """Failures raised at one place the same way as one whose cause is
    proven the environment's share that cause: jira's first test logs the
    KeyError of its unset CI_JIRA_URL, the 154 after it fail the same check
    ("Test Manager setUp failed") on the manager that first one left
    uninitialised, with no such evidence of their own."""
    proven: dict[tuple, Finding] = {}
    for f, place in zip(found, places, strict=True):
        if place is not None and f.noise and "environment" in f.tags:
            proven.setdefault(place, f)
    if not proven:
        return found
    out = []
    for f, place in zip(found, places, strict=True):
        first = proven.get(place) if place is not None and f.noise is None else None
        if first is not None:
            f = f.model_copy(update={"noise": first.noise, "severity": Severity.info,
                                     "severity_reason": first.severity_reason,
                                     "tags": [*f.tags, "environment"]})
        out.append(f)
    return out


_SAME_SHOWN = 3  # tests named in the one finding
# More failures than this in one test folder, none proven the code's or the
# environment's: one finding says so (a suite that needs a service or a
# server not there fails everywhere at once: python-gitlab's 322 functional
# tests against a live GitLab).
_UNPROVEN_SHOWN = 5


def _unproven_summed(found: list[Finding]) -> list[Finding]:
    """Many failures of one test folder whose cause is not proven are one
    finding to look at (the first, naming how many and a few test ids);
    the rest stay in the report as noise pointing at it."""
    groups: dict[str, list[Finding]] = {}
    for f in found:
        if f.noise is None and "cause-unknown" in f.tags:
            folder = "/".join((f.file or "").split("/")[:2]) if "/" in (f.file or "") else ""
            groups.setdefault(folder, []).append(f)
    summed: dict[str, list[Finding]] = {}  # each failure's id -> its group, when summed
    for group in groups.values():
        if len(group) > _UNPROVEN_SHOWN:
            summed.update({g.id: group for g in group})
    out = []
    for f in found:
        group = summed.get(f.id)
        if group is None:
            out.append(f)
        elif f is group[0]:
            names = ", ".join(g.title.split(": ", 1)[-1] for g in group[:_SAME_SHOWN])
            where = "/".join((f.file or "").split("/")[:2]) if "/" in (f.file or "") else "."
            out.append(f.model_copy(update={"message": (
                f"{len(group)} tests under {where} fail and none is shown to be the code's "
                f"({names} and {len(group) - _SAME_SHOWN} more; often one missing service or "
                f"server): {f.message}")}))
        else:
            out.append(f.model_copy(update={
                "noise": f"one of {len(group)} failures whose cause is not proven, counted at "
                         f"{group[0].title.split(': ', 1)[-1]} ({group[0].file})",
                "severity": Severity.info,
                "severity_reason": "info: counted in one finding"}))
    return out


def _same_failure_once(found: list[Finding], places: list[tuple | None]) -> list[Finding]:
    """Tests failing with one exception raised at one place, its message
    the same once numbers, paths and addresses are masked (a shared
    fixture's error: jupyterhub's 158 setup errors where its proxy would not
    start; one parametrized assertion) are one failure to act on: the first
    is shown and names how many, the rest stay in the report as noise
    pointing at it."""
    keys = [p if f.noise is None and f.file and f.range else None
            for f, p in zip(found, places, strict=True)]
    groups: dict[tuple, list[Finding]] = {}
    for f, key in zip(found, keys):
        if key is not None:
            groups.setdefault(key, []).append(f)
    out = []
    for f, key in zip(found, keys):
        group = groups.get(key) if key is not None else None
        if group and len(group) > 1:
            first = group[0]
            if f is first:
                names = ", ".join(g.title.split(": ", 1)[-1] for g in group[:_SAME_SHOWN])
                more = f" and {len(group) - _SAME_SHOWN} more" if len(group) > _SAME_SHOWN else ""
                f = f.model_copy(update={"message": f"{len(group)} tests fail here the same "
                                                    f"way ({names}{more}): {f.message}"})
            else:
                f = f.model_copy(update={
                    "noise": f"the same failure as {first.title.split(': ', 1)[-1]} "
                             f"({first.file}:{first.range.start_line}), counted there",
                    "severity": Severity.info,
                    "severity_reason": "info: one failure, shown once"})
        out.append(f)
    return out


def _collection_warning(record: dict[str, Any]) -> str | None:
    """pytest's collection *warning* raised as an error (``-W error``): a
    class it will not collect (``TestSuite`` imported from unittest, a
    ``Test*`` class with an ``__init__``) is pytest's complaint about its own
    discovery, not a failure of the project's code, which its own runner
    (unittest) runs as written. An import or syntax error while collecting
    stays a finding."""
    if record.get("kind") != "collect":
        return None
    text = str(record.get("message") or "") + str(record.get("longrepr") or "")
    if "ImportPathMismatchError" in text or "import file mismatch" in text:
        # two test files of one name in folders that are no packages
        # (dynaconf's tests_functional/*/app_test.py, each run on its own):
        # pytest cannot import both in one session; each imports as written
        return ("pytest's import file mismatch (two test modules of the same name outside "
                "packages, collected in one session): the runner's layout, not the code")
    if "PytestCollectionWarning" not in text:
        return None
    return ("pytest's collection warning (a class it does not collect as tests), "
            "raised as an error: the test runner's discovery, not the code")

