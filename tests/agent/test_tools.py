"""The tools on their own: confinement, exact edits, search, shell limits,
finding validation and patches from a checkpoint."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

import pytest

from superqode_ls.agent.changes import ChangeTracker, filter_diff
from superqode_ls.agent.confine import Refused, resolve_inside, shell_refusal
from superqode_ls.agent.permissions import Permissions
from superqode_ls.agent.redact import Redactor
from superqode_ls.agent.tools import ToolBox
from superqode_ls.config import AgentConfig

from .conftest import sandbox_env


@pytest.fixture
def box(tmp_path):
    root = tmp_path / "sb"
    root.mkdir()
    (root / "pkg").mkdir()
    (root / "pkg" / "mod.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    (root / "README.md").write_text("hello\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.pyc").write_bytes(b"\0junk")
    events = []
    tracker = ChangeTracker(root)
    tracker.start()
    tb = ToolBox(
        root=root,
        role="agent_unit_tester",
        config=AgentConfig(shell_timeout_s=5, shell_output_cap=2000),
        env=sandbox_env(),
        permissions=Permissions({k: "allow" for k in AgentConfig().permissions}),
        redactor=Redactor(),
        tracker=tracker,
        emit=lambda t, **d: events.append((t, d)),
    )
    tb.events = events
    yield tb
    tracker.close()


async def call(tb, name, **args):
    return await tb.call(name, json.dumps(args))


async def test_edit_file_exact_and_unique(box):
    r = await call(
        box, "edit_file", path="pkg/mod.py", old_text="    return 1", new_text="    return 2"
    )
    assert r.outcome == "error" and "occurs 2 times in pkg/mod.py" in r.text
    r = await call(box, "edit_file", path="pkg/mod.py", old_text="return 3", new_text="x")
    assert r.outcome == "error" and "old_text not found in pkg/mod.py" in r.text
    r = await call(
        box,
        "edit_file",
        path="pkg/mod.py",
        old_text="def g():\n    return 1",
        new_text="def g():\n    return 2",
    )
    assert r.outcome == "ok"
    assert (box.root / "pkg/mod.py").read_text().endswith("def g():\n    return 2\n")
    r = await call(box, "edit_file", path="nope.py", old_text="a", new_text="b")
    assert r.text == "error: nope.py: no such file"


async def test_read_list_search(box):
    r = await call(box, "read_file", path="pkg/mod.py", start_line=5, end_line=6)
    assert r.text == "    5  def g():\n    6      return 1"
    r = await call(box, "list_files")
    assert r.text.splitlines() == ["README.md", "pkg/mod.py"]  # no __pycache__
    r = await call(box, "search", pattern=r"return \d")
    assert r.text.splitlines() == ["pkg/mod.py:2:     return 1", "pkg/mod.py:6:     return 1"]
    r = await call(box, "search", pattern="(unclosed")
    assert r.outcome == "error" and "invalid regular expression" in r.text
    r = await call(box, "read_file", path="__pycache__/x.pyc")
    assert r.outcome == "error" and "binary" in r.text


async def test_write_file_confined(box, tmp_path):
    r = await call(box, "write_file", path="tests/test_new.py", content="x = 1\n")
    assert r.outcome == "ok" and (box.root / "tests/test_new.py").read_text() == "x = 1\n"
    assert box.created == {"tests/test_new.py": "x = 1\n"}
    for bad in (
        "../evil.py",
        str(tmp_path / "evil.py"),
        "pkg/../../evil.py",
        ".git/hooks/pre-commit",
    ):
        r = await call(box, "write_file", path=bad, content="x")
        assert r.outcome == "refused", bad
    assert not (tmp_path / "evil.py").exists()
    # A link made inside the sandbox that points out is followed, then refused.
    os.symlink(tmp_path, box.root / "out")
    r = await call(box, "write_file", path="out/evil.py", content="x")
    assert r.outcome == "refused" and not (tmp_path / "evil.py").exists()
    # A link that stays inside is fine.
    os.symlink("pkg", box.root / "alias")
    r = await call(box, "read_file", path="alias/mod.py", start_line=1, end_line=1)
    assert r.text == "    1  def f():"


async def test_run_shell_timeout_and_output_cap(box):
    r = await call(box, "run_shell", command="sleep 20", timeout=0.3)
    assert r.text.startswith("exit code: -") and "timed out after 0.3s" in r.text
    r = await call(box, "run_shell", command="yes x | head -c 50000; echo done >&2")
    assert "[output capped at 2000 bytes]" in r.text
    assert len(r.text) < 2000 + 200
    r = await call(box, "run_shell", command="pwd")
    assert r.text == f"exit code: 0\nstdout:\n{box.root}\n"


async def test_report_finding_must_point_at_real_code(box):
    base = {"severity": "high", "confidence": 0.8, "title": "t", "evidence": "e"}
    r = await call(box, "report_finding", file="pkg/mod.py", start_line=40, **base)
    assert r.outcome == "error" and "has 6 lines" in r.text
    r = await call(box, "report_finding", file="ghost.py", start_line=1, **base)
    assert r.outcome == "error" and "no such file" in r.text
    r = await call(box, "report_finding", file="pkg/mod.py", start_line=2, **base)
    fid = json.loads(r.text)["finding_id"]
    [f] = box.findings
    assert f.id == fid and f.snippet == "    return 1" and f.tool == "superqode-agent"
    assert f.rule_id == "agent_unit_tester.finding" and f.role == "agent_unit_tester"
    again = await call(box, "report_finding", file="pkg/mod.py", start_line=2, **base)
    assert "already reported" in again.text and len(box.findings) == 1


async def test_propose_fix_from_checkpoint(box, tmp_path):
    r = await call(box, "propose_fix", description="nothing yet")
    assert r.outcome == "error" and "no edits to propose" in r.text
    r = await call(box, "propose_fix", description="x", finding_ids=["made-up"])
    assert "unknown finding ids" in r.text
    await call(
        box,
        "edit_file",
        path="pkg/mod.py",
        old_text="def f():\n    return 1",
        new_text="def f():\n    return 0",
    )
    await call(box, "write_file", path="tests/test_f.py", content="from pkg.mod import f\n")
    (box.root / "README.md").unlink()
    (box.root / "__pycache__" / "y.pyc").write_bytes(b"\0")
    r = await call(box, "propose_fix", description="only the code", files=["pkg/mod.py"])
    assert r.outcome == "ok"
    [p] = box.patches
    assert p.files == ["pkg/mod.py"] and "tests/test_f.py" not in p.diff
    r = await call(box, "propose_fix", description="all")
    everything = box.patches[-1]
    assert sorted(everything.files) == ["README.md", "pkg/mod.py", "tests/test_f.py"]
    assert "pyc" not in everything.diff
    # The patch applies to a pristine copy with git apply.
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "pkg").mkdir()
    (clean / "pkg" / "mod.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    (clean / "README.md").write_text("hello\n")
    res = await asyncio.to_thread(
        subprocess.run,
        ["git", "apply", "-"],
        input=everything.diff,
        text=True,
        cwd=clean,
        capture_output=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert not (clean / "README.md").exists()
    assert (clean / "tests/test_f.py").read_text() == "from pkg.mod import f\n"


async def test_every_call_is_an_event_with_capped_args(box):
    await call(box, "write_file", path="big.txt", content="y" * 5000)
    [(kind, data)] = box.events
    assert kind == "tool_call" and data["tool"] == "write_file" and data["allowed"]
    assert len(data["args"]["content"]) < 400 and data["args"]["path"] == "big.txt"


@pytest.mark.parametrize(
    ("cmd", "refused"),
    [
        ("python -m pytest -q tests/test_x.py::test_a", False),
        ("ls -la && cat pkg/mod.py | grep def", False),
        ("/usr/bin/env python -c 'print(1)'", False),
        ("rm -rf /", True),
        ("rm -rf ~", True),
        ("cat $HOME/.ssh/id_rsa", True),
        ("cp pkg/mod.py ../../stolen.py", True),
        ("echo x > /etc/passwd", True),
        ("python -c \"open('/root/.bashrc','a')\"", False),  # inside a quoted program: not caught
        ("sudo ls", True),
        ("curl http://example.com", True),
        ("pytest --basetemp=/var/tmp/x", True),
    ],
)
def test_shell_tripwire(tmp_path, cmd, refused):
    assert (shell_refusal(cmd, tmp_path) is not None) == refused, cmd


def test_resolve_inside(tmp_path):
    (tmp_path / "a").mkdir()
    assert resolve_inside(tmp_path, "a/../a") == (tmp_path / "a").resolve()
    assert resolve_inside(tmp_path, str(tmp_path / "a")) == (tmp_path / "a").resolve()
    for bad in ("..", "a/../../x", "/etc/passwd", "~/x", "$HOME/x", "", "a\x00b"):
        with pytest.raises(Refused):
            resolve_inside(tmp_path, bad)


def test_filter_diff_keeps_only_wanted_files():
    diff = (
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
        "diff --git a/.pytest_cache/v b/.pytest_cache/v\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/.pytest_cache/v\n@@ -0,0 +1 @@\n+z\n"
    )
    text, files = filter_diff(diff)
    assert files == ["x.py"] and ".pytest_cache" not in text
    assert filter_diff(diff, ["y.py"]) == ("", [])


async def test_links_to_outside_files_are_not_read_or_searched(box, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=outside-marker\n")
    os.symlink(secret, box.root / "linked.txt")
    r = await call(box, "read_file", path="linked.txt")
    assert r.outcome == "refused"
    r = await call(box, "search", pattern="outside-marker")
    assert r.text == "(no matches)"
    r = await call(box, "search", pattern="outside-marker", path="linked.txt")
    assert r.outcome == "refused"
