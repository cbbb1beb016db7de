"""An agent that tries git push, rm -rf /, writing ../outside and reading
~/.ssh is refused every time, and the user's tree is unchanged."""

from __future__ import annotations

import os

from superqode_ls.qe.roles.agent import AgentSecurityTester
from superqode_ls.workspace.fingerprint import compare, take_fingerprint

from .conftest import agent_config, conversation, make_ctx, provider_entry, sandbox_env

SECRET = "-----BEGIN OPENSSH PRIVATE KEY-----\nsuperqode-test-marker-7f3a\n"


def _home_with_key(home):
    ssh = home / ".ssh"
    ssh.mkdir(exist_ok=True)
    (ssh / "id_rsa").write_text(SECRET)
    return ssh


def _repo_with_link(make_repo, ssh):
    from tests.conftest import run_git

    project = make_repo({"app.py": "print('hi')\n", "docs/index.md": "docs\n"})
    os.symlink(ssh, project / "docs" / "keys")  # a link out of the tree, committed
    run_git(project, "add", "-A")
    run_git(project, "commit", "-q", "-m", "link")
    return project


async def test_escapes_are_refused_in_an_isolated_session(
    make_repo, scripted, events, isolated_home
):
    from superqode_ls.workspace.session import IsolatedSession

    ssh = _home_with_key(isolated_home)
    home_before = take_fingerprint(isolated_home / ".ssh")
    project = _repo_with_link(make_repo, ssh)
    before = take_fingerprint(project)
    server = scripted(conversation("escapes"), vars={"home": str(isolated_home)})
    # run_shell allowed outright: every refusal below is the safety check, not a prompt.
    cfg = agent_config([provider_entry(server)], permissions={"run_shell": "allow"})
    async with await IsolatedSession.create(project, config=cfg, mode="deep") as s:
        ctx = make_ctx(
            project, s.sandbox, cfg, events, session=s, env=s.env(sandbox_env()), session_id=s.id
        )
        out = await AgentSecurityTester().run(ctx)
        # Nothing it tried ran: the run did nothing, and says so.
        assert out.status == "ineffective" and out.findings == [] and out.patches == []
        assert out.reason.startswith("every one of the model's 11 tool call(s) failed (last: refused")
        changes = await s.changes()
        assert changes.empty, changes.diff
        sandbox_parent = s.sandbox.parent
    calls = events.of("tool_call")
    assert len(calls) == 11
    for c in calls:
        assert c["outcome"] == "refused" and c["allowed"] is False, c
    reasons = [c["reason"] for c in calls]
    assert reasons[0].startswith("git guard: Pushing")
    assert "/: outside the sandbox" in reasons[1]
    assert "../outside.txt: outside the sandbox" in reasons[2]
    assert "home" in reasons[3] and "outside the sandbox" in reasons[4]
    assert "docs/keys/id_rsa: outside the sandbox" in reasons[5]
    assert "docs/keys/planted: outside the sandbox" in reasons[6]
    assert "home directory" in reasons[7] and "outside the sandbox" in reasons[8]
    # The model never saw the key; nothing was written outside.
    sent = "".join(str(r["body"]) for r in server.requests)
    assert "superqode-test-marker-7f3a" not in sent
    assert "refused:" in sent
    assert not (sandbox_parent / "outside.txt").exists()
    assert not (sandbox_parent / "outside2.txt").exists()
    assert not (ssh / "planted").exists()
    assert compare(home_before, take_fingerprint(isolated_home / ".ssh")) == []
    assert s.verification.verified, s.verification.line
    assert compare(before, take_fingerprint(project)) == []


async def test_ask_permission_without_a_user_denies(make_repo, scripted, events, tmp_path):
    """run_shell is "ask" by default; a non-interactive run says no and the
    command never runs."""
    from .conftest import copy_sandbox

    project = make_repo({"a.py": "x = 1\n"})
    server = scripted(
        [
            {"tool_calls": [{"name": "run_shell", "arguments": {"command": "touch ran.txt"}}]},
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "b.py", "content": "y = 2\n"}}
                ]
            },
            {"content": "done"},
        ]
    )
    cfg = agent_config([provider_entry(server)], permissions={"write_file": "deny"})
    sandbox = copy_sandbox(project, tmp_path / "sb")
    ctx = make_ctx(project, sandbox, cfg, events)
    out = await AgentSecurityTester().run(ctx)
    assert out.status == "ineffective" and "2 tool call(s) failed" in out.reason
    assert not (sandbox / "ran.txt").exists() and not (sandbox / "b.py").exists()
    shell, write = events.of("tool_call")
    assert shell["outcome"] == "denied" and shell["reason"] == "denied by the user"
    assert write["outcome"] == "denied" and "denied by agent.permissions" in write["reason"]
    assert "denied:" in server.requests[-1]["body"]["messages"][-1]["content"]


async def test_ask_goes_to_the_plugged_in_asker(make_repo, scripted, events, tmp_path):
    import dataclasses

    from superqode_ls.runtime import Runtime

    from .conftest import copy_sandbox

    asked = []

    class Recorder:
        async def ask(self, tool, summary):
            asked.append((tool, summary))
            return "yes" in summary

    project = make_repo({"a.py": "x = 1\n"})
    server = scripted(
        [
            {
                "tool_calls": [
                    {"name": "run_shell", "arguments": {"command": "echo yes > yes.txt"}},
                    {"name": "run_shell", "arguments": {"command": "echo no > no.txt"}},
                ]
            },
            {"content": "done"},
        ]
    )
    cfg = agent_config([provider_entry(server)])
    sandbox = copy_sandbox(project, tmp_path / "sb")
    ctx = dataclasses.replace(make_ctx(project, sandbox, cfg, events), runtime=Runtime(asker=Recorder()))
    out = await AgentSecurityTester().run(ctx)
    assert out.status == "ok"
    assert asked == [
        ("run_shell", "run in the sandbox: echo yes > yes.txt"),
        ("run_shell", "run in the sandbox: echo no > no.txt"),
    ]
    assert (sandbox / "yes.txt").read_text() == "yes\n"
    assert not (sandbox / "no.txt").exists()
    # Tool calls run one by one, in the order the model gave them.
    assert [c["outcome"] for c in events.of("tool_call")] == ["ok", "denied"]
