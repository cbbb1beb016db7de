"""The noise filter's path classes (noise.py, step 5): a static tool's
finding in tests, fixtures, docs or examples -- a behave harness, an attack
script or a recorded exchange with the application too -- is shown one level
lower and is noise, except a provider's token (a real key leaks wherever it
is committed); a private key there is key material made for the tests."""

from __future__ import annotations

import fnmatch
import os
import re

from ..models import Finding
from .noise_testcode import TestCode


def join_reasons(a: str | None, b: str) -> str:
    return f"{a}; {b}" if a else b


def is_secret_scan(rule_id: str) -> bool:
    """A rule of SuperQode's secrets scan (``secret-*``)."""
    return rule_id.lower().startswith("secret-")


def path_class(path: str | None, classes: dict[str, list[str]]) -> tuple[str, str] | None:
    """(class, pattern) of the first path class ``path`` falls in, or None.

    A pattern ending in ``/`` names a folder anywhere in the path; one
    without ``/`` a file name; any other is matched against the whole path.
    """
    if not path:
        return None
    parts = path.split("/")
    name = parts[-1]
    for cls, patterns in classes.items():
        for pat in patterns:
            if pat.endswith("/"):
                folder = pat.rstrip("/")
                if "/" in folder:
                    hit = fnmatch.fnmatchcase(path, f"{folder}/*") or fnmatch.fnmatchcase(
                        path, f"*/{folder}/*"
                    )
                else:
                    hit = any(fnmatch.fnmatchcase(p, folder) for p in parts[:-1])
            elif "/" in pat:
                hit = fnmatch.fnmatchcase(path, pat)
            else:
                hit = fnmatch.fnmatchcase(name, pat)
            if hit:
                return cls, pat
    return None


# What a static tool says about the code of the file it points at. A failing
# test (category "tests") points into tests/ but is about the product code,
# and is not lowered; neither are generated-test crashes or mutants.
PATH_CLASS_CATEGORIES = frozenset({"security", "secrets", "lint", "syntax", "types"})


def classify_paths(findings: list[Finding], classes: dict[str, list[str]],
                   root: str | os.PathLike[str] | None = None) -> list[Finding]:
    """Static findings in a path class shown one level lower, the reason
    recorded on each (and a ``path:CLASS`` tag); nothing is dropped. With
    the project's ``root``, test and example code its files prove so
    (``noise_testcode``) is classed too."""
    out = []
    # A path's class depends on the path alone: matched once per file, not
    # per finding (sqlalchemy's 17,600 findings in 700 files took 3 s).
    known: dict[str | None, tuple[str, str] | None] = {}
    proved = TestCode(root, lambda rel: _path_hit(rel, classes) is not None) \
        if root is not None and classes else None
    for f in findings:
        static = f.category in PATH_CLASS_CATEGORIES
        if not static:
            out.append(f)
            continue
        if f.file in known:
            hit = known[f.file]
        else:
            hit = known[f.file] = _path_hit(f.file, classes)
            if hit is None and proved is not None:
                got = proved.hit(f.file)
                hit = known[f.file] = (got[0], f"#{got[1]}") if got else None
        if hit is None:
            out.append(f)
            continue
        cls, pat = hit
        # a class the files prove says why; a pattern is quoted
        where = pat[1:] if pat.startswith("#") else repr(pat)
        lowered = f.severity.lower()
        reason = f"in {cls} ({where}): shown one level lower than {f.severity.value}"
        if lowered is f.severity:
            reason = f"in {cls} ({where})"
        tags = list(f.tags) + ([f"path:{cls}"] if f"path:{cls}" not in f.tags else [])
        update = {"severity": lowered, "severity_reason": join_reasons(f.severity_reason, reason),
                  "tags": tags}
        if key_material(f) and cls in _TEST_DATA:
            why = f"key material in {cls} data (a key made for them, not a credential)"
            update["noise"] = join_reasons(f.noise, why) if f.noise else why
        elif cls in _TEST_DATA and _expired_token(f):
            why = f"a token that expires within hours, in {cls} data (recorded, long expired)"
            update["noise"] = join_reasons(f.noise, why) if f.noise else why
        elif not provider_token(f):
            why = f"in {cls} code" + (f": {where}" if pat.startswith("#") else "")
            update["noise"] = join_reasons(f.noise, why) if f.noise else why
        out.append(f.model_copy(update=update))
    return out


def _path_hit(path: str | None, classes: dict[str, list[str]]) -> tuple[str, str] | None:
    """The class (and why) of a static finding at ``path`` (classify_paths)."""
    hit = path_class(path, classes) if classes else None
    if hit is None and "tests" in classes and _behave(path):
        hit = ("tests", "features/steps/")
    if hit is None and "tests" in classes and _attack_script(path):
        hit = ("tests", "exploits/")
    if hit is None and "tests" in classes and _traffic_capture(path):
        hit = ("tests", "recorded traffic")
    return hit


def _behave(path: str | None) -> bool:
    """A behave harness (``features/steps/*.py``, ``features/environment.py``):
    test code, wherever the project keeps it."""
    parts = (path or "").split("/")
    return "features" in parts[:-1] and (
        "steps" in parts[parts.index("features") + 1:-1] or parts[-1] == "environment.py")


# An attack script of a deliberately vulnerable application (its exploits,
# proofs of concept): a test of the application, its payloads are no
# configuration.
_ATTACK_DIRS = frozenset({"exploit", "exploits", "poc", "pocs"})
# A traffic generator or load script drives the application like a test
# (its generated users' passwords are no configuration).
_ATTACK_FILE = re.compile(r"^(?:exploit|poc)(?:_\w+)?\.py$|_exploit\.py$"
                          r"|^(?:traffic|load)_?gen(?:erator)?\w*\.py$|^locustfile\.py$")


def _attack_script(path: str | None) -> bool:
    parts = (path or "").split("/")
    return bool(_ATTACK_DIRS & set(parts[:-1])) or bool(_ATTACK_FILE.search(parts[-1]))


# A recorded or scripted exchange with the application (HAR captures,
# Postman collections, traffic flows, VCR cassettes): the demo users'
# passwords and tokens in it are test data. A provider token stays shown
# (classify_paths keeps those out of the noise).
_TRAFFIC_DIRS = frozenset({"flows", "captures", "recordings", "har", "postman", "cassettes",
                           "traffic"})
_TRAFFIC_FILE = re.compile(
    r"(?i)\.har$|\.flow\.json$|\.postman_(?:collection|environment)\.json$")


def _traffic_capture(path: str | None) -> bool:
    parts = (path or "").split("/")
    if _TRAFFIC_FILE.search(parts[-1]):
        return True
    return parts[-1].lower().endswith((".json", ".har", ".yaml", ".yml")) and bool(
        _TRAFFIC_DIRS & {p.lower() for p in parts[:-1]})


# Where a private key is a fixture: a TLS test server's key, an example's.
_TEST_DATA = frozenset({"tests", "fixtures", "examples", "docs"})


def key_material(f: Finding) -> bool:
    """A private key (PEM block) as the lead, with no provider token merged in."""
    rules = {r.lower() for r in (f.rule_id, *f.related_rules)}
    return "secret-private-key" in rules and not any(
        is_secret_scan(r) and r not in ("secret-private-key", "secret-generic",
                                         "secret-config-password") for r in rules)


# Tokens that expire by design within hours of being issued.
_SHORT_LIVED = frozenset({"secret-github-app-token"})


def _expired_token(f: Finding) -> bool:
    rules = {r.lower() for r in (f.rule_id, *f.related_rules)}
    return bool(rules & _SHORT_LIVED) and not any(
        is_secret_scan(r) and r not in _SHORT_LIVED and r != "secret-generic" for r in rules)


def provider_token(f: Finding) -> bool:
    """A recognised token (AWS, GitHub...), as lead or merged in."""
    rules = (f.rule_id, *f.related_rules)
    return any(is_secret_scan(r) and r.lower() not in ("secret-generic", "secret-config-password",
                                                       "secret-signing-key-default")
               for r in rules)
