"""bandit's JSON results as findings: severities it cannot be trusted on
(hard-coded passwords, weak hashes, ``assert``), masked secrets, ids from a
digest of the secret rather than its text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...models import Evidence, Finding, Range, Severity
from . import _secrets
from ._common import SourceCache, byte_col_to_char, fingerprint, is_test_path, rel_to

_SEVERITY = {"HIGH": Severity.high, "MEDIUM": Severity.medium, "LOW": Severity.low}
_CONFIDENCE = {"HIGH": 0.9, "MEDIUM": 0.7, "LOW": 0.4, "UNDEFINED": 0.5}
# "Consider possible security implications of importing X": context, not a problem.
_IMPORT_NOTES = {f"B4{n:02d}" for n in range(1, 16)}
PASSWORD_RULES = ("B105", "B106", "B107")


def never_shown(root: Path, r: dict[str, Any]) -> bool:
    """A result no finding is made of: ``assert`` in a test (how tests
    check things). Dropped as bandit's output is read, so they are neither
    kept in the results cache nor read back from it: sqlalchemy's tests hold
    tens of thousands, most of the cache's bytes."""
    return (isinstance(r, dict) and r.get("test_id") == "B101"
            and is_test_path(rel_to(root, str(r.get("filename", "")))))


def bandit_findings(
    role: str, root: Path, src: SourceCache, results: list[dict[str, Any]]
) -> list[Finding]:
    out = []
    for r in results:
        rel = rel_to(root, r.get("filename", ""))
        test_id = r.get("test_id") or "B000"
        if test_id == "B101" and is_test_path(rel):
            continue  # never_shown
        line = int(r.get("line_number") or 1)
        line_range = r.get("line_range") or [line]
        end_line = max(int(line_range[-1]), line)
        text = src.line(rel, line)
        start_col = byte_col_to_char(text, int(r.get("col_offset") or 0)) + 1
        end_col = None
        if r.get("end_col_offset") is not None:
            end_col = byte_col_to_char(src.line(rel, end_line), int(r["end_col_offset"])) + 1
        severity = _SEVERITY.get(r.get("issue_severity", ""), Severity.medium)
        if test_id in _IMPORT_NOTES:
            severity = Severity.info
        # The test id is the code, its name a tag: the text says it once.
        message = r.get("issue_text") or test_id
        title = r.get("issue_text", test_id).split(". ")[0].rstrip(".")
        fid = ""
        evidence: list[Evidence] = []
        snippet = text
        severity_reason = None
        noise = None
        if test_id in PASSWORD_RULES:
            # bandit quotes the password: mask the value only, never the
            # words around it, and keep it out of the snippet and the id.
            m = re.search(r": '(.*)'$", r.get("issue_text", ""))
            if m and not m.group(1).strip():
                noise = "not a secret: the value is empty"  # reset_token = ''
                severity_reason = f"bandit rates it {severity.value}; the value is empty"
                severity = Severity.info
            elif m:
                secret = m.group(1)
                # A title cut inside the value (at ". ") holds part of
                # it unquoted: then only the words before the value.
                message, title = (
                    _secrets.mask_quoted(x, secret) or x.split(": '", 1)[0]
                    for x in (message, title)
                )
                snippet = None
                fid = fingerprint(test_id, "bandit", rel, _secrets.digest(secret))
                masked = _secrets.mask_quoted(text, secret) if text else None
                if masked is not None:
                    evidence.append(
                        Evidence(
                            message="flagged line (secret masked)",
                            file=rel,
                            line=line,
                            snippet=masked,
                        )
                    )
                # B107 names the function's first line; the default is on a
                # later line of a signature written over several.
                said = next((t for n in range(line, end_line + 1)
                             if (t := src.line(rel, n)) and (f"'{secret}'" in t
                                                             or f'"{secret}"' in t)), text)
                why = _secrets.not_a_secret(secret, said)
                credential = _secrets.built_in_credential(secret, text)
                if credential is not None:
                    if severity.rank < Severity.high.rank:
                        severity_reason = f"bandit rates it {severity.value}; {credential}"
                        severity = Severity.high
                elif why is not None:
                    noise = f"not a secret: the value is {why}"
                elif _secrets.plausible(secret, text) and severity.rank < Severity.high.rank:
                    severity_reason = (
                        f"bandit rates it {severity.value}; a hard-coded secret in the "
                        "code is at least high"
                    )
                    severity = Severity.high
                elif (assigned := _secrets.assigned_password(secret, text)) is not None \
                        and severity.rank < Severity.medium.rank:
                    # a weak seeded password (``password = "admin"``): test
                    # code's are lowered again as noise by the path classes
                    severity_reason = f"bandit rates it {severity.value}; {assigned}"
                    severity = Severity.medium
        elif test_id == "B324" and severity.rank > Severity.medium.rank:
            # A weak hash is a risk only where it protects something; a
            # cache key or an ETag is not. A secret in the code always is,
            # so MD5 must not rank above one (secrets are at least high).
            severity_reason = (
                f"bandit rates it {severity.value}; a weak hash matters where it "
                "protects something"
            )
            severity = Severity.medium
        elif test_id == "B101":
            # An assert outside tests: worth a look, never a failed run
            # (qe.never_fail); whatever bandit's version calls it.
            severity = Severity.low
        cwe = (r.get("issue_cwe") or {}).get("id")
        tags = ["bandit", r.get("test_name") or test_id]
        if cwe:
            tags.append(f"CWE-{cwe}")
        out.append(
            Finding(
                role=role,
                tool="bandit",
                rule_id=test_id,
                title=title,
                message=message,
                severity=severity,
                confidence=_CONFIDENCE.get(r.get("issue_confidence", ""), 0.5),
                category="security",
                file=rel,
                range=Range(
                    start_line=line,
                    start_col=max(1, start_col),
                    end_line=end_line,
                    end_col=end_col,
                ),
                tags=tags,
                help_uri=r.get("more_info"),
                snippet=snippet,
                id=fid,
                evidence=evidence,
                severity_reason=severity_reason,
                noise=noise,
            )
        )
    return out
