"""Data models shared by the engine, the CLI and the language server.

Positions: lines are 1-based; columns are 1-based and counted in Unicode code
points (Python string indices + 1); end positions are exclusive. The language
server converts to the client's position encoding.
Paths inside models are repository-relative POSIX paths.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer


def utcnow() -> datetime:
    return datetime.now(UTC)


class Severity(str, Enum):
    critical = "critical"
    high = "high"
    medium = "medium"
    low = "low"
    info = "info"

    @property
    def rank(self) -> int:
        return _SEVERITY_RANK[self]

    def at_least(self, other: Severity) -> bool:
        return self.rank >= other.rank

    def lower(self) -> Severity:
        """One level down (info stays info)."""
        return _BY_RANK[max(0, self.rank - 1)]


_SEVERITY_RANK = {
    Severity.info: 0,
    Severity.low: 1,
    Severity.medium: 2,
    Severity.high: 3,
    Severity.critical: 4,
}
_BY_RANK = {rank: sev for sev, rank in _SEVERITY_RANK.items()}


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    def quick_copy(self, update: dict[str, Any]):  # -> the same type
        """``model_copy(update=update)`` without its generic steps (the same
        fields, the same fields set, nothing validated): a large run labels
        or tags thousands of findings and fixes at once."""
        copy = _NEW(type(self))
        fields = self.__dict__.copy()
        fields.update(update)
        _SET_ATTR(copy, "__dict__", fields)
        _SET_FIELDS(copy, self.__pydantic_fields_set__ | update.keys())
        _SET_EXTRA(copy, self.__pydantic_extra__)
        _SET_PRIVATE(copy, self.__pydantic_private__)
        return copy


_NEW = object.__new__
_SET_ATTR = object.__setattr__
_SET_FIELDS = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__


class Range(Model):
    start_line: int = Field(ge=1)
    start_col: int = Field(default=1, ge=1)
    end_line: int | None = None
    end_col: int | None = None


class Evidence(Model):
    message: str
    file: str | None = None
    line: int | None = None
    snippet: str | None = None


class Finding(Model):
    id: str = ""
    role: str
    tool: str
    rule_id: str
    title: str
    message: str
    severity: Severity
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    category: str = "quality"
    file: str | None = None
    range: Range | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    fix_patch_id: str | None = None
    verified: bool = False
    tags: list[str] = Field(default_factory=list)
    help_uri: str | None = None
    # Other tools' rule ids for this same problem (bandit B105 and the secrets
    # scan on one line): the finding was reported under each of them.
    related_rules: list[str] = Field(default_factory=list)
    # Why the severity is not the tool's own (a secret raised to high, a test
    # file's finding shown one level lower); None when it is the tool's.
    severity_reason: str | None = None
    # Why the finding is noise (true or not, not worth acting on: in test
    # code, a value that is no secret, low confidence...); None when it is
    # worth a look. Noise never fails a run and is listed after the rest.
    noise: str | None = None
    # Text of the flagged line(s) when found; anchors the id and lets the
    # editor tell whether the finding still points at the same code.
    snippet: str | None = None

    def with_stable_id(self) -> Finding:
        """Fill ``id`` from what identifies the problem, not from where it is.

        The line number is left out on purpose: a problem keeps its id when code
        above it moves. The flagged text anchors it instead.
        """
        if self.id:
            return self
        return self.model_copy(update={"id": self.stable_id()})

    def stable_id(self) -> str:
        """The id ``with_stable_id`` gives (for a role that sets it in place)."""
        basis = "\x1f".join(
            [
                self.tool,
                self.rule_id,
                self.file or "",
                " ".join((self.snippet or "").split()),
                self.title if not self.snippet else "",
            ]
        )
        digest = hashlib.sha256(basis.encode("utf-8", "surrogateescape")).hexdigest()
        return f"{self.rule_id.lower()}-{digest[:12]}"


PatchKind = Literal["fix", "suppression"]
VerifiedBy = Literal["tests", "tool"]


class Patch(Model):
    id: str
    description: str
    diff: str
    files: list[str] = Field(default_factory=list)
    finding_ids: list[str] = Field(default_factory=list)
    role: str | None = None
    tool: str | None = None
    # True only when the tool no longer reports the finding, nothing new
    # appears AND the tests covering the changed files still pass.
    verified: bool = False
    verification: str | None = None
    # "suppression": silences the finding without fixing it (``# nosec``,
    # ``usedforsecurity=False``...): shown as such, never as a fix.
    kind: PatchKind = "fix"
    # How far verification got: "tests" (== verified) or "tool" (the tool
    # went quiet but no covering tests ran: "tool-verified only").
    verified_by: VerifiedBy | None = None

    @property
    def label(self) -> str:
        if self.kind == "suppression":
            return "suppression"
        if self.verified:
            return "verified"
        if self.verified_by == "tool":
            return "tool-verified only"
        return "not verified"

    @field_serializer("diff")
    def _diff_text(self, value: Any) -> str:
        # A lazy diff (see ``_Diff``) goes out as its text: the serialised
        # form is the same whichever way the patch holds it.
        return value if type(value) is str else str(value.text())


class _Diff:
    """``Patch.diff``: the text, or made on first read where the patch holds
    a maker (an object with ``text()``) instead. A large tree's lint role
    offers some 15,000 fixes, and writing each one's diff up front was a
    fifth of the role's time; most are never read in an editor's session.
    Set on the class after pydantic built the field: validation, copies and
    assignment keep working on ``__dict__`` as for any field."""

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__["diff"]
        return value if type(value) is str else value.text()

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__["diff"] = value


Patch.diff = _Diff()  # type: ignore[assignment,method-assign]


ChangeKind = Literal["created", "modified", "deleted", "renamed", "type_changed"]


class Change(Model):
    path: str
    kind: ChangeKind
    old_path: str | None = None
    old_hash: str | None = None
    new_hash: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None
    additions: int = 0
    deletions: int = 0
    binary: bool = False


class ChangeSet(Model):
    changes: list[Change] = Field(default_factory=list)
    diff: str = ""

    @property
    def empty(self) -> bool:
        return not self.changes


# "ineffective": the role ran but could not do its job (an agent whose model
# called no tool, read no file, or repeated one call): its silence is no
# evidence, so it never counts as a pass. "incomplete": it worked but stopped at
# a cap (turns, tokens) before it finished: what it found stands, its silence
# on the rest does not.
RoleStatus = Literal["ok", "failed", "skipped", "timeout", "cancelled", "error", "ineffective",
                     "incomplete"]


class RoleRun(Model):
    role: str
    status: RoleStatus
    reason: str | None = None
    # Named by the user (``-r``, the editor's role picker): skipping it is a
    # failure to do what was asked, not the mode's choice.
    requested: bool = False
    # An exception escaped the role (status "error"): a bug or a broken
    # environment, never a verdict on the code; the CLI exits 3.
    crashed: bool = False
    tool: str | None = None
    started_at: datetime | None = None
    duration_s: float = 0.0
    findings: int = 0
    patches: int = 0


class Verification(Model):
    """``differences``: what makes the session NOT verified (a breach, or
    objects gone from the store). ``outside_changes``: differences the
    kernel barrier proves were made outside the session (the user, their
    editor, their git); kept, and no failure. ``barrier_abi``: the Landlock
    ABI the session ran under, None without a kernel barrier."""

    verified: bool
    differences: list[str] = Field(default_factory=list)
    outside_changes: list[str] = Field(default_factory=list)
    barrier_abi: int | None = None

    @property
    def line(self) -> str:
        outside = ""
        if self.outside_changes:
            outside = f"changed outside the session (kept): {_listed(_subjects(self.outside_changes))}"
        if self.verified:
            if outside:
                return (f"Verified: nothing of the session wrote the project (kernel barrier, "
                        f"Landlock ABI {self.barrier_abi}); {outside}")
            return "Verified: the project is exactly as before the session."
        said = f"NOT verified: {len(self.differences)} difference(s): {_listed(self.differences, '; ')}"
        return f"{said}; {outside}" if outside else said


def _subjects(descriptions: list[str]) -> list[str]:
    """``modified: a.py`` -> ``a.py``; ``moved: ref refs/heads/x (a -> b)`` ->
    ``ref refs/heads/x``: what changed, each once."""
    out: list[str] = []
    for d in descriptions:
        what = d.split(": ", 1)[-1]
        if what.endswith(")") and " (" in what:
            what = what[: what.rindex(" (")]
        if what not in out:
            out.append(what)
    return out


def _listed(items: list[str], sep: str = ", ", limit: int = 10) -> str:
    more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
    return sep.join(items[:limit]) + more


Verdict = Literal["pass", "conditional", "fail", "cancelled"]


class Usage(Model):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    requests: int = 0


class Interpreter(Model):
    """The Python the project's code ran with (code-running roles)."""

    python: str
    version: str = ""
    source: str  # config | editor | VIRTUAL_ENV | .venv | venv | poetry | hatch | pdm | conda | built | superqode
    label: str  # e.g. "tests: .venv/bin/python 3.12"
    note: str | None = None  # why discovery ended there (candidates passed over, a failed build)


class SinceBase(Model):
    """``--since REF``: the report lists only findings not in the merge-base."""

    ref: str
    merge_base: str
    files: int = 0  # files the change touched (both runs looked at these only)
    base_session: str | None = None
    base_report: str | None = None
    base_complete: bool = False  # False: the base ran out of time; more may look new
    introduced: int | None = None


class QualityReport(Model):
    schema_version: str = "1.0"
    session_id: str
    project: str
    mode: str
    isolation: str
    base_commit: str | None = None
    started_at: datetime
    finished_at: datetime | None = None
    duration_s: float = 0.0
    roles: list[RoleRun] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    patches: list[Patch] = Field(default_factory=list)
    summary: dict[str, int] = Field(default_factory=dict)
    suppressed: int = 0
    baseline_filtered: int = 0
    verdict: Verdict = "pass"
    stale: bool = False
    cancelled: bool = False
    timed_out: bool = False
    verification: Verification | None = None
    # What kept the session's processes off the user's files: "kernel barrier:
    # Landlock ABI N", or "guard only" where the kernel has no Landlock.
    protection: str | None = None
    artifacts: dict[str, str] = Field(default_factory=dict)
    usage: Usage | None = None
    interpreter: Interpreter | None = None
    since: SinceBase | None = None
    shard: str | None = None  # "K/N": this report is one share of the work (superqe merge)
    merged_from: list[str] = Field(default_factory=list)  # session ids superqe merge combined
    # Where the session's time went (seconds per step), ``--timings``.
    timings: dict[str, float] = Field(default_factory=dict)
    # Set when this file lists only the most severe findings: how many there
    # were (``summary`` counts them all; SARIF and --jsonl carry the full list).
    findings_total: int | None = None


class Event(Model):
    """One line of the JSONL stream and of the server's progress feed."""

    type: str
    session_id: str | None = None
    ts: datetime = Field(default_factory=utcnow)
    data: dict[str, Any] = Field(default_factory=dict)

    def to_json(self) -> str:
        return self.model_dump_json(exclude_none=True)


def summarize(findings: list[Finding]) -> dict[str, int]:
    """Findings worth a look by severity; ``noise``: how many are noise
    (listed in the report too, counted apart)."""
    counts = {s.value: 0 for s in Severity}
    noise = 0
    for f in findings:
        if f.noise is not None:
            noise += 1
        else:
            counts[f.severity.value] += 1
    if noise:
        counts["noise"] = noise
    return counts
