"""Quick mode's fix verification of a role that ends while others still run
(qe/verify_early.py): it overlaps the roles, on a tree of the session's own
that no role reads, and its verdicts are the ones the step after the roles
reaches. Real ruff, a real repository, the real pipeline."""

from __future__ import annotations

import asyncio
import os

import pytest

from superqode_ls.models import Patch
from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.qe.roles import REGISTRY
from superqode_ls.qe.roles.base import Role, RoleContext, RoleOutput, tool_path
from superqode_ls.qe.verify_early import MAX_ENTRIES, build_tree

pytestmark = pytest.mark.skipif(not tool_path("ruff"), reason="needs ruff")

FILES = {
    "pyproject.toml": (
        '[project]\nname = "demo"\nversion = "0"\n\n[tool.ruff.lint]\n'
        'select = ["F401", "I001", "UP"]\n\n'
        '[tool.ruff.lint.per-file-ignores]\n"pkg/quiet.py" = ["F401"]\n'
    ),
    # First-party only because this module is there: the import-order fix
    # ruff offers for pkg/order.py is right only where ruff sees it.
    "helpers.py": "VALUE = 1\n",
    "pkg/__init__.py": "",
    # Several fixes in one file (the merged-copies route), one of them unsafe.
    "pkg/order.py": (
        "import sys\nimport requests\nimport helpers\nimport os\n\n\n"
        "def f(x):\n    return '{}'.format(x) + str(helpers.VALUE) + str(requests)\n"
    ),
    "pkg/many.py": (
        "import json\nimport re\nimport typing\nfrom typing import List\n\n\n"
        "def g(a: List[int]) -> typing.Optional[int]:\n    return '%s' % a\n"
    ),
    # Its F401 ignored by the configuration (per file): only its other fixes count.
    "pkg/quiet.py": "import os\nimport abc\n\n\ndef h(x):\n    return '{}'.format(x)\n",
}

SEEN: dict[str, object] = {}


class ToyWatch(Role):
    """A role still running when ruff's ends (as the security role is): it
    waits for the early verification, then reads the sandbox as a role would."""

    name = "toy_watch"
    tool = "watch"
    description = "reads the sandbox after the early verification"
    cost = 5

    async def run(self, ctx: RoleContext) -> RoleOutput:
        session = SEEN["session"]
        runs = session.role_runs
        for _ in range(6000):  # until ruff's role has ended and its fixes were judged
            early = runs.early_verify
            if runs.runs.get("lint_tester") and runs.runs["lint_tester"].reason != "not started" and (
                    early is None or early._offered):
                break
            await asyncio.sleep(0.01)
        early = runs.early_verify
        if early is not None and early._task is not None:
            SEEN["early_ran"] = (await asyncio.shield(early._task)) is not None
        SEEN["texts"] = {rel: (ctx.sandbox / rel).read_text() for rel in FILES}
        SEEN["names"] = sorted(str(p.relative_to(ctx.sandbox)) for p in ctx.sandbox.rglob("*.py"))
        return RoleOutput(status="ok")


def _run(repo, monkeypatch, trusted: bool, early: bool = True, overrides=None):
    # Its own context: undoing the fixture itself would undo the isolated
    # HOME and SUPERQODE_HOME too (a second run in the same test would use
    # the real ones).
    with monkeypatch.context() as m:
        m.setitem(REGISTRY, "toy_watch", f"{__name__}:ToyWatch")
        if not early:
            m.setattr(QESession, "_early_verify_wanted", lambda self, res: False)
        SEEN.clear()
        req = QERequest(repo, roles=["lint_tester", "toy_watch"], trusted=trusted,
                        config_overrides=overrides or {})
        session = QESession(req)
        SEEN["session"] = session
        events = []
        session.bus.subscribe(events.append)
        report = asyncio.run(session.run())
    return report, events, dict(SEEN)


def _verdicts(report) -> list[tuple]:
    return sorted((p.id, p.verified, p.verified_by, p.verification) for p in report.patches)


def _reruns_after_roles(events) -> int:
    """ruff runs after the verification step began (its re-runs there)."""
    began = next(i for i, e in enumerate(events)
                 if e.type == "progress" and str(e.data.get("message", "")).startswith("verifying "))
    return sum(1 for e in events[began:] if e.type == "tool_call" and e.data.get("tool") == "ruff")


@pytest.mark.parametrize("trusted", [False, True])
def test_fixes_are_judged_while_the_roles_run_with_the_same_verdicts(make_repo, monkeypatch, trusted):
    late_report, late_events, _ = _run(make_repo(FILES), monkeypatch, trusted, early=False)
    report, events, seen = _run(make_repo(FILES), monkeypatch, trusted)

    assert seen["early_ran"] is True
    # Nothing of it reached the sandbox the other role reads: no copy in a
    # file's place, no copy beside it.
    assert seen["texts"] == FILES
    assert seen["names"] == sorted(n for n in FILES if n.endswith(".py"))
    # The step after the roles re-ran nothing of ruff's; without the early
    # verification it did.
    assert _reruns_after_roles(events) == 0
    assert _reruns_after_roles(late_events) >= 1
    fixes = [p for p in report.patches if p.kind == "fix"]
    assert len(fixes) >= 6
    assert any(p.verified_by == "tool" for p in fixes)
    assert _verdicts(report) == _verdicts(late_report)
    # The import-order fix holds only where ruff sees helpers.py beside it.
    order = [p for p in fixes if p.files == ["pkg/order.py"] and "-i001-" in p.id]
    assert order and all(p.verified_by == "tool" for p in order), [p.verification for p in order]
    assert report.verification is not None and report.verification.verified


def test_a_cap_below_the_fixes_leaves_them_to_the_step_after_the_roles(make_repo, monkeypatch):
    report, events, seen = _run(make_repo(FILES), monkeypatch, trusted=False,
                                overrides={"qe": {"verify_max_fixes": 2}})
    # More fixes than the cap: nothing is started beside the roles (its
    # verdicts would never be taken), no tree, no filter run for it.
    assert "early_ran" not in seen
    early = seen["session"].role_runs.early_verify
    assert early._offered and early._task is None and early._tree is None
    assert _reruns_after_roles(events) >= 1
    over = [p for p in report.patches if (p.verification or "").startswith("not verified: over the verification cap")]
    assert over


def _tree(tmp_path):
    sandbox = tmp_path / "sandbox"
    (sandbox / "pkg" / "sub").mkdir(parents=True)
    (sandbox / "pyproject.toml").write_text("[tool.ruff]\n")
    (sandbox / "helpers.py").write_text("A = 1\n")
    (sandbox / "pkg" / "__init__.py").write_text("")
    (sandbox / "pkg" / "a.py").write_text("import os\n")
    (sandbox / "pkg" / "b.py").write_text("import sys\n")
    (sandbox / "pkg" / "sub" / "c.py").write_text("import re\n")
    os.chmod(sandbox / "pkg" / "a.py", 0o750)
    return sandbox


def test_the_tree_holds_copies_of_the_fixed_files_and_links_to_the_rest(tmp_path):
    sandbox = _tree(tmp_path)
    dest = tmp_path / "tree"
    dest.mkdir()
    assert build_tree(sandbox, ["pkg/a.py", "pkg/sub/c.py"], dest) == dest
    for rel in ("pkg/a.py", "pkg/sub/c.py"):
        assert not (dest / rel).is_symlink() and (dest / rel).read_text() == (sandbox / rel).read_text()
    assert (dest / "pkg" / "a.py").stat().st_mode & 0o777 == 0o750  # a rule may read the mode
    for rel in ("pyproject.toml", "helpers.py", "pkg/__init__.py", "pkg/b.py"):
        assert (dest / rel).is_symlink() and os.readlink(dest / rel) == str(sandbox / rel)
    assert not (dest / "pkg").is_symlink() and not (dest / "pkg" / "sub").is_symlink()
    # A write to a copy never reaches the sandbox's file.
    (dest / "pkg" / "a.py").write_text("changed\n")
    assert (sandbox / "pkg" / "a.py").read_text() == "import os\n"


def test_the_tree_is_refused_where_the_sandbox_has_links_on_the_way(tmp_path):
    sandbox = _tree(tmp_path)
    (sandbox / "linked").symlink_to(sandbox / "pkg")
    (sandbox / "pkg" / "alias.py").symlink_to(sandbox / "pkg" / "b.py")
    os.link(sandbox / "pkg" / "b.py", sandbox / "pkg" / "hard.py")
    for files in (["linked/a.py"], ["pkg/alias.py"], ["pkg/hard.py"], ["../x.py"], ["pkg/missing.py"]):
        dest = tmp_path / f"tree{len(os.listdir(tmp_path))}"
        dest.mkdir()
        assert build_tree(sandbox, files, dest) is None, files
        assert not any(dest.iterdir())


def test_the_tree_is_refused_past_its_size(tmp_path):
    sandbox = _tree(tmp_path)
    for i in range(MAX_ENTRIES):
        (sandbox / "pkg" / f"m{i}.py").write_text("")
    dest = tmp_path / "tree"
    dest.mkdir()
    assert build_tree(sandbox, ["pkg/a.py"], dest) is None


def test_take_refuses_other_fixes():
    """The step after the roles takes the early verdicts only for the very
    fixes it would verify for that role."""
    from superqode_ls.qe.fix_judge import VerifyResult
    from superqode_ls.qe.verify_early import Early, EarlyVerify

    early = EarlyVerify(session=None, root=None, deadline=0.0, cap=10, trusted=False)

    async def go(todo):
        loop = asyncio.get_running_loop()
        early._task = loop.create_future()
        early._task.set_result(Early("lint_tester", frozenset({"a", "b"}),
                                     [VerifyResult("a", False, "x"), VerifyResult("b", False, "y")],
                                     {"f.py": "why"}))

        class Tests:
            async def why_none(self, files):
                return "why"

        return await early.take(todo, Tests())

    def patch(pid, role="lint_tester"):
        return Patch(id=pid, description="", role=role, diff="", files=["f.py"])

    assert asyncio.run(go([patch("a"), patch("b"), patch("c", "security_tester")])) is not None
    assert asyncio.run(go([patch("a")])) is None  # one of them dropped by the filter
    assert asyncio.run(go([patch("a"), patch("b"), patch("c")])) is None  # one more
