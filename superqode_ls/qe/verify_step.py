"""The pipeline's fix-verification step: which patches are tried (at most
``qe.verify_max_fixes``, the most severe findings first), which tests judge
them, and progress that stays readable with thousands of fixes."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..models import Finding, Patch
from ..workspace.pyast import parse as parse_python
from . import verify_kept
from .covering import CoveringTests, SuiteProbe
from .doctests import drops_doctest_import, runs_doctests
from .patching import patch_files
from .roles import role_class
from .roles._target import declared_python, ruff_sets_target
from .roles.base import Role, RoleContext, SandboxSession
from .type_gate import in_projects, mypy_projects, type_gate
from .verifier import Verifier
from .verify_early import EarlyVerify, SandboxReads
from .verify_exports import drops_export

TEST_ROLE = "unit_tester"
OVER_CAP = "not verified: over the verification cap"
# Fixes the tool itself says may change what the code does (ruff's "unsafe"
# and "display-only" fixes: dropping an ``X as X`` re-export, ...): no re-run
# can show the meaning kept, so they are offered for review, never verified.
UNSAFE_TAGS = {"fix:unsafe": "unsafe", "fix:display-only": "display-only"}


# A pyupgrade rewrite (ruff's UP rules: ``Optional[int]`` -> ``int | None``)
# is made for a target Python. Where the project declares none, ruff assumes
# its own default (3.10 and later), and the rewrite may not run on the Python
# the project is used with (dvpwa's NamedTuple fields on its Dockerfile's
# 3.7): the tests here run on whatever Python was found, so they cannot show
# it keeps meaning.
ASSUMED_TARGET = "pyupgrade"
REEXPORT = "re-export"  # facade(), below
DOCTEST = "doctest"  # doctest_note(), below

# How a fix the tool calls unsafe is labelled (unsafe_note).
UNSAFE_PREFIXES = (*(f"{kind} (" for kind in UNSAFE_TAGS.values()), f"{ASSUMED_TARGET} (",
                   f"{REEXPORT} (", f"{DOCTEST} (")


def assumes_target(f: Finding, root: Path, seen: dict[Path, bool] | None = None) -> bool:
    """Whether ``f``'s fix rewrites code for a Python version the project
    does not declare: a ruff UP rule where neither the file's project nor
    the repository names one (requires-python, python_requires,
    .python-version, ruff's target-version). ``seen``: folders already read
    (whether each declares one), for the many fixes of one run."""
    if f.tool != "ruff" or not (f.rule_id or "").startswith("UP") or not f.file:
        return False
    seen = {} if seen is None else seen
    top = root.resolve()
    folder = (top / f.file).parent
    while folder.is_relative_to(top):
        if folder not in seen:
            seen[folder] = bool(declared_python(folder) or ruff_sets_target(folder))
        if seen[folder]:
            return False
        if folder == top:
            break
        folder = folder.parent
    return True


# A module whose body is nothing but imports is there to re-export them (the
# API's facade: sqlalchemy/events.py, documented as sqlalchemy.events.PoolEvents):
# every import looks unused and dropping one removes a public name, as ruff
# says of an ``__init__.py`` (where it calls that fix unsafe). No test of the
# module's own code can show the name is still needed.
_FACADE_OK = (ast.Import, ast.ImportFrom)


def facade(root: Path, rel: str, seen: dict[str, bool] | None = None) -> bool:
    """Whether the module at ``rel`` holds only imports (a docstring and
    dunder assignments such as ``__all__`` aside)."""
    if seen is not None and rel in seen:
        return seen[rel]
    try:
        tree = parse_python((root / rel).read_bytes())
    except (OSError, SyntaxError, ValueError):
        tree = None
    body = tree.body if tree is not None else []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    only = bool(body) and all(
        isinstance(n, _FACADE_OK) or (isinstance(n, (ast.Assign, ast.AnnAssign)) and all(
            isinstance(t, ast.Name) and t.id.startswith("__") and t.id.endswith("__")
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])))
        for n in body)
    if seen is not None:
        seen[rel] = only
    return only


def reexport_note(f: Finding) -> str:
    return (f"{REEXPORT} ({f.tool}): not verified -- {f.file} holds only imports, so it is there "
            f"to re-export them; this {f.rule_id} fix removes a public name (as in an "
            "__init__.py); review it before applying")


def export_note(p: Patch, why: str) -> str:
    return f"{REEXPORT} ({p.tool or 'tool'}): not verified -- {why}; review it before applying"


def doctest_note(p: Patch, why: str) -> str:
    return f"{DOCTEST} ({p.tool or 'tool'}): not verified -- {why}; review it before applying"


def assumed_target_note(f: Finding) -> str:
    return (f"{ASSUMED_TARGET} ({f.tool}): not verified -- the project declares no Python version "
            f"(requires-python, .python-version or ruff's target-version), so this {f.rule_id} "
            "rewrite assumes ruff's default and may not run on the Python the project uses; "
            "review it before applying")


def unsafe_kind(findings: list[Finding]) -> str | None:
    """"unsafe"/"display-only" when a finding's tool marks its fix so."""
    for f in findings:
        for tag in f.tags:
            if tag in UNSAFE_TAGS:
                return UNSAFE_TAGS[tag]
    return None


def unsafe_note(kind: str, tool: str | None) -> str:
    return (f"{kind} ({tool or 'tool'}): not verified -- it may change what the code does; "
            "review it before applying")
# At most one "verifying fixes" progress event per this many seconds.
_PROGRESS_EVERY_S = 0.5


def never_verifiable(patches: dict[str, Patch], findings: list[Finding],
                     root: Path | None, reads: SandboxReads | None = None) -> dict[str, str]:
    """Fix id -> its label, for fixes no re-run can judge though their tool
    calls them safe: the Python they were made for is not declared
    (assumes_target), or they drop a facade module's public name (facade).
    Nothing without ``root`` (the sandbox, where the files are read);
    ``reads``: the run's reads of it so far."""
    if root is None:
        return {}
    if reads is None or reads.root not in (None, root):
        reads = SandboxReads(root)  # its module names are relative to another tree
    reads.root = root
    out = {f.fix_patch_id: assumed_target_note(f) for f in findings
           if f.fix_patch_id in patches and assumes_target(f, root, reads.declares)}
    out.update({f.fix_patch_id: reexport_note(f) for f in findings
                if f.fix_patch_id in patches and f.fix_patch_id not in out
                and f.tool == "ruff" and f.rule_id == "F401" and f.file
                and f.file.endswith(".py") and facade(root, f.file, reads.facades)})
    # A fix that removes a name other code reads from its module (a stub's
    # or a package's re-export, a name another module imports from there,
    # one a string type alias names): no re-run of the tool nor the tests
    # importing the module can show that nothing reads it (verify_exports.py).
    for pid, p in patches.items():
        if pid in out or p.kind != "fix":
            continue
        if pid not in reads.exports.verdicts:
            files = p.files or patch_files(p.diff)
            reads.exports.verdicts[pid] = next(
                (why for rel in files if (why := drops_export(root, rel, p.diff, reads.exports))), None)
        if (why := reads.exports.verdicts[pid]) is not None:
            out[pid] = export_note(p, why)
    # A fix that removes an import the module's docstring examples read,
    # where the project runs them: the covering tests are not its doctests,
    # so no re-run here can show the fix keeps them passing (glom's
    # ``pprint``; ruff's F401 fix of one name of ``from .core import Path, T,
    # ...`` drops every unused name of the line, ``T`` with it).
    if where := runs_doctests(root):
        for pid, p in patches.items():
            if pid not in out and p.kind == "fix" and (why := drops_doctest_import(root, p.diff, where)):
                out[pid] = doctest_note(p, why)
    return out


def choose(patches: dict[str, Patch], findings: list[Finding], cap: int,
           root: Path | None = None, reads: SandboxReads | None = None,
           never: dict[str, str] | None = None,
           ) -> tuple[list[Patch], list[Patch]]:
    """(patches to verify, patches over the cap): suppressions, fixes their
    tool calls unsafe and those ``never_verifiable`` in ``root`` are never
    verified; the rest go worth acting on before noise, then most severe
    finding first (the cap is spent where the user will look).

    ``never_verifiable`` is read only for the fixes the cap reaches, in that
    order, a cap's worth at a time: it parses each fixed module with the fix
    applied, and read for every fix of a large project (sqlalchemy: 14,060
    fixes for a cap of 200) it was 130-160 s of a 60 s quick run on a loaded
    2-core machine, spent on fixes past the cap that are never tried. The
    labels of those it read go in ``never``; those past the cap are not read
    (they are over the cap, never verified either way)."""
    rank: dict[str, int] = {}
    worth: set[str] = set()
    unsafe: set[str] = set()
    by_patch: dict[str, list[Finding]] = {}
    for f in findings:
        if f.fix_patch_id:
            rank[f.fix_patch_id] = max(rank.get(f.fix_patch_id, -1), f.severity.rank)
            by_patch.setdefault(f.fix_patch_id, []).append(f)
            if f.noise is None:
                worth.add(f.fix_patch_id)
            if unsafe_kind([f]):
                unsafe.add(f.fix_patch_id)
    ranked = [p for p in patches.values() if p.id in rank and p.kind == "fix" and p.id not in unsafe]
    ranked.sort(key=lambda p: (p.id not in worth, -rank[p.id], p.files[0] if p.files else "", p.id))
    if root is None:
        return ranked[:cap], ranked[cap:]
    if reads is None:
        reads = SandboxReads(root)
    todo: list[Patch] = []
    at = 0
    while len(todo) < cap and at < len(ranked):
        chunk = ranked[at:at + cap - len(todo)]
        at += len(chunk)
        labels = never_verifiable({p.id: p for p in chunk},
                                  [f for p in chunk for f in by_patch[p.id]], root, reads)
        if never is not None:
            never.update(labels)
        todo += [p for p in chunk if p.id not in labels]
    return todo, ranked[at:]


def over_the_cap(patches: Iterable[Patch], findings: Iterable[Finding], cap: int) -> bool:
    """Whether a role offers more fixes this step may verify (not
    suppressions, not those their tool calls unsafe) than ``cap``. Early
    verdicts (verify_early.py) are taken only where none is over the cap,
    and unless the filter drops that many findings (inline suppressions)
    some are: nothing is started for them then (on sqlalchemy, 14,000 fixes
    for a cap of 200: the noise filter over the role's findings, a tree of
    600 files and the tests' import index, 13 s beside the roles, never
    taken). Skipping them costs time only: this step verifies as before."""
    unsafe = {f.fix_patch_id for f in findings if f.fix_patch_id and unsafe_kind([f])}
    n = 0
    for p in patches:
        if p.kind == "fix" and p.id not in unsafe:
            n += 1
            if n > cap:
                return True
    return False


def covering_tests(
    roles: dict[str, Role], contexts: dict[str, RoleContext], trusted: bool, root: Path,
    python: Any = None,
) -> tuple[CoveringTests | None, str]:
    """The unit role set up to run a few test files, or None and why not."""
    if not trusted:
        return None, "tests not run: the folder is not trusted"
    role = roles.get(TEST_ROLE)
    ctx = contexts.get(TEST_ROLE)
    if ctx is None:
        if not contexts:
            return None, "tests not run"
        # The session's interpreter when it found one; else the unit role
        # finds it itself (once, kept in this context).
        ctx = dataclasses.replace(next(iter(contexts.values())), trusted=True, python=python)
    if role is None:
        try:
            role = role_class(TEST_ROLE)()
        except (ImportError, AttributeError, KeyError) as e:
            return None, f"tests not run: no unit role ({e})"
        why = role.unavailable(ctx.config)
        if why:
            return None, f"tests not run: {why}"
    return CoveringTests(root, role, ctx), "tests not run"


TYPE_ROLE = "type_tester"


async def _type_check(
    patches: dict[str, Patch], todo: list[Patch], roles: dict[str, Role],
    contexts: dict[str, RoleContext], root: Path, deadline: float, python: Any,
    emit: Callable[..., Any],
) -> None:
    """The project's declared mypy configuration on the accepted fixes
    (type_gate.py), per project: the fixes of the projects that declare
    one; nothing where none does."""
    if not contexts or not todo:
        return  # no fix to check: no walk of the repository for its projects
    declared = await asyncio.to_thread(mypy_projects, root)
    todo = [p for p in todo if declared and all(in_projects(f, declared)
                                                for f in (p.files or patch_files(p.diff)))]
    if not todo:
        return
    role = roles.get(TYPE_ROLE)
    ctx = contexts.get(TYPE_ROLE)
    if role is None:
        try:
            role = role_class(TYPE_ROLE)()
        except (ImportError, AttributeError, KeyError):
            return
    check = getattr(role, "check_files", None)
    if check is None or role.unavailable():
        return
    if ctx is None:
        ctx = dataclasses.replace(next(iter(contexts.values())), python=python)
    emit("progress", message="type-checking the accepted fixes with the project's mypy configuration")
    await type_gate(patches, [p.id for p in todo], root, role, ctx, deadline, check)


NO_TIME = "not verified: no time left in the session budget"


async def _verify_all(verifier, todo, on_result, patches, roles, contexts, root, deadline, python, emit,
                      type_gate=True, early: EarlyVerify | None = None):
    rest = todo
    await verifier.fix_tests.settle()  # before any fix is written into the sandbox
    taken = await early.take(todo, verifier.fix_tests) if early is not None else None
    if taken is not None:  # one role's fixes judged while the others ran (verify_early.py)
        name, results = taken
        for r in results:
            verifier.results.append(r)
            on_result(r)
        rest = [p for p in todo if p.role != name]
    await verifier.verify_many(rest, on_result)
    if type_gate:
        await _type_check(patches, todo, roles, contexts, root, deadline, python, emit)


def start_probe(ctx: RoleContext, config: Any) -> SuiteProbe | None:
    """Learn, beside the roles, whether the project's tests can start at all
    (quick mode's fix verification runs the tests importing a fixed file);
    None where no tests would run (the caller checks trust and mode)."""
    try:
        role = role_class(TEST_ROLE)()
    except (ImportError, AttributeError, KeyError):
        return None
    if role.unavailable(config):
        return None
    return SuiteProbe(role, ctx)


async def verify(
    *, patches: dict[str, Patch], findings: list[Finding], roles: dict[str, Role],
    contexts: dict[str, RoleContext], found: dict[str, list[Finding]], session: SandboxSession, root: Path,
    deadline: float, cap: int, full_suite: bool, trusted: bool,
    emit: Callable[..., Any], python: Any = None, probe: SuiteProbe | None = None,
    type_gate: bool = True, early: EarlyVerify | None = None,
) -> None:
    """Verify the chosen patches by ``deadline`` (the event loop's clock);
    ``patches`` is updated in place; ``type_gate`` False: without the
    project's mypy (QERequest.type_gate); ``early``: a role's fixes judged
    while the others ran, taken where they are what this step would reach."""
    # Offered, never verified (never_verifiable, read for the fixes the cap
    # reaches): labelled below.
    assumed: dict[str, str] = {}
    todo, over = choose(patches, findings, cap, root, early.reads if early is not None else None,
                        assumed)
    over_cap = {"verified": False, "verified_by": None,
                "verification": f"{OVER_CAP} (qe.verify_max_fixes = {cap}); review it before applying"}
    for p in over:
        patches[p.id] = p.quick_copy(over_cap)  # thousands on a large project
    by_patch: dict[str, list[Finding]] = {}
    for f in findings:
        if f.fix_patch_id:
            by_patch.setdefault(f.fix_patch_id, []).append(f)
    for p in patches.values():
        kind = unsafe_kind(by_patch.get(p.id, []))
        if kind and p.kind == "fix":
            patches[p.id] = p.model_copy(update={
                "verified": False, "verified_by": None, "verification": unsafe_note(kind, p.tool)})
        elif p.id in assumed and p.kind == "fix":
            patches[p.id] = p.model_copy(update={
                "verified": False, "verified_by": None,
                "verification": assumed[p.id]})
        if p.kind == "suppression" and not p.verification:
            patches[p.id] = p.model_copy(update={"verification": "suppression: silences the finding, "
                                                                 "does not fix it"})
    if not todo:
        return
    loop = asyncio.get_running_loop()
    if loop.time() >= deadline:  # nothing can be verified: no tests looked for, no verifier made
        no_time = {"verified": False, "verified_by": None, "verification": NO_TIME}
        for p in todo:
            if patches[p.id].verification is None:
                patches[p.id] = patches[p.id].quick_copy(no_time)
        emit("progress", message=f"fixes verified: 0 of {len(todo)}", done=len(todo),
             total=len(todo))
        return
    if probe is not None and python is None and full_suite is False:
        python = probe.ctx.python  # found (or built) by the probe, if it got that far
    # An unchanged project's fixes keep the verdicts an earlier run reached
    # (verify_kept.py): only the others are tried.
    chosen = todo
    kept_key, kept_keys, todo = await verify_kept.take(
        getattr(session, "project", None), root, todo, patches, roles, contexts, found, python,
        {"full_suite": full_suite, "trusted": trusted, "type_gate": type_gate,
         "isolation": getattr(session, "isolation", None)})
    n_kept = len(chosen) - len(todo)
    if not todo:
        _said(emit, patches, chosen, n_kept)
        return
    if session.isolation == "sparse":  # the project's tests are not in it: say so, run none
        covering, why = None, "tests not run: the sandbox holds the selected files only"
    else:
        covering, why = covering_tests(roles, contexts, trusted, root, python)
    # Verification is bounded by the budget but never what makes a session
    # time out: it stops at ``deadline``, which the pipeline sets before the
    # session's own (pipeline.end_reserve: the revert and the report come
    # after it); a round under way is cancelled, its files put back, and the
    # fixes it did not reach say so.
    stop_at = deadline
    if covering is not None:
        # The tests end themselves before the stop (their fixes then keep
        # the tool's verdict, said so), rather than being cut off with it.
        covering = dataclasses.replace(
            covering, ctx=dataclasses.replace(covering.ctx, deadline=stop_at - 1.0))
    verifier = Verifier(
        sandbox=root, roles=roles, contexts=contexts, findings_by_role=found,
        tests=TEST_ROLE if full_suite else None, session=session, deadline=stop_at, project=session.project,
        covering=covering, no_tests_reason=why or "no tests were run",
        probe=probe if covering is not None and not full_suite else None,
    )
    if probe is not None and verifier.fix_tests.probe is None:
        # Not the tests' judge here, but still reading the sandbox's conftests
        # (and keeping what it saw): stopped before the fixes are written.
        await probe.close()
    total = len(todo)
    # Every suggested fix is accounted for: the count a user read above adds up.
    never = len(patches) - len(chosen) - len(over)
    parts = [f"{len(over)} over qe.verify_max_fixes"] if over else []
    if n_kept:
        parts.append(f"{n_kept} kept from an earlier run of the same tree")
    if never:
        parts.append(f"{never} never verified: unsafe by their tool, suppressions, or tied "
                     "to no finding")
    note = f" ({'; '.join(parts)})" if parts else ""
    emit("progress", message=f"verifying {total} of {len(patches)} fix(es){note}", done=0,
         total=total)
    state = {"done": 0, "last": loop.time()}

    def on_result(result) -> None:
        state["done"] += 1
        p = patches[result.patch_id]
        patches[p.id] = p.model_copy(update={
            "verified": result.verified, "verification": result.message, "verified_by": result.level,
        })
        now = loop.time()
        if now - state["last"] >= _PROGRESS_EVERY_S or state["done"] == total:
            state["last"] = now
            emit("progress", message=f"verifying fixes: {state['done']} of {total}",
                 done=state["done"], total=total)

    try:
        await asyncio.wait_for(_verify_all(verifier, todo, on_result, patches, roles, contexts, root,
                                           stop_at, python, emit, type_gate, early),
                               max(0.0, stop_at - loop.time()))
    except TimeoutError:
        pass
    for p in todo:
        if patches[p.id].verification is None:
            patches[p.id] = patches[p.id].model_copy(update={
                "verified": False, "verified_by": None, "verification": NO_TIME})
    await verify_kept.store(kept_key, kept_keys, patches)
    _said(emit, patches, chosen, n_kept)


def _said(emit: Callable[..., Any], patches: dict[str, Patch], chosen: list[Patch], kept: int) -> None:
    total = len(chosen)
    ok = sum(1 for p in chosen if patches[p.id].verified)
    tool = sum(1 for p in chosen if patches[p.id].verified_by == "tool")
    emit("progress", message=f"fixes verified: {ok} of {total}" + (f", {tool} tool-verified only" if tool else "")
         + (f" ({kept} kept from an earlier run of the same tree)" if kept else ""),
         done=total, total=total)
