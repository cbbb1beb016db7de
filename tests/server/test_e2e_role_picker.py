"""The editors' role picker: ``superqode.listRoles`` says each role, whether it
can run now and why not, and the ACP agents under ``agents:``; a Run QE with
the roles picked runs those roles and no others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from .conftest import run_and_wait, start, superqode_diags, wait_for

AGENTS_YAML = """\
agents:
  claude:
    command: [claude-code-acp, --stdio]
  local:
    command: [python3, my_agent.py]
"""


async def command(lsp: LanguageClient, name: str, arg: dict | None = None):
    return await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=[arg or {}]))


async def test_list_roles_says_what_can_run_and_why_not(lsp: LanguageClient, shop: Path):
    (shop / "superqode.yaml").write_text(AGENTS_YAML, encoding="utf-8")
    await start(lsp, shop, settings={"roles": ["lint_tester", "toy_tester"]})
    res = await command(lsp, "superqode.listRoles")
    assert res["folder"] == str(shop) and res["trusted"] is False and res["mode"] == "quick"
    roles = {r["name"]: r for r in res["roles"]}
    assert {"lint_tester", "security_tester", "unit_tester", "agent_security_tester"} <= set(roles)
    lint = roles["lint_tester"]
    assert lint["canRun"] and lint["reason"] is None and lint["tool"] == "ruff"
    assert lint["description"].startswith("ruff lint") and not lint["executesCode"]
    # What a plain Run QE would run (the editor's superqode.roles) comes preselected.
    assert {n for n, r in roles.items() if r["default"]} == {"lint_tester", "toy_tester"}
    # Roles that run the project's code: not in an untrusted folder, said why.
    unit = roles["unit_tester"]
    assert unit["executesCode"] and not unit["canRun"] and "not trusted" in unit["reason"]
    # Agent roles: no provider (and no worker) configured, in the run's own words.
    agent = roles["agent_security_tester"]
    assert agent["agent"] and not agent["canRun"]
    assert agent["reason"].startswith("no provider configured"), agent
    # The ACP agents of superqode.yaml, none of them the agent roles' worker yet.
    claude, local = res["agents"]
    assert {k: claude[k] for k in ("name", "command", "worker")} == {
        "name": "claude", "command": ["claude-code-acp", "--stdio"], "worker": False}
    assert {k: local[k] for k in ("name", "command", "worker")} == {
        "name": "local", "command": ["python3", "my_agent.py"], "worker": False}
    assert local["reason"] is None  # python3 is there: it can be the worker
    assert res["worker"] is None
    # A file of the folder names the same folder; one outside it is one clear line.
    by_file = await command(lsp, "superqode.listRoles",
                            {"uri": from_fs_path(str(shop / "shop" / "catalog.py"))})
    assert by_file["folder"] == str(shop)
    with pytest.raises(JsonRpcException, match="outside the workspace folders"):
        await command(lsp, "superqode.listRoles", {"uri": "file:///nowhere/x.py"})


async def test_list_roles_follows_trust_the_worker_and_the_editors_provider(
    lsp: LanguageClient, shop: Path
):
    (shop / "superqode.yaml").write_text(
        AGENTS_YAML + "agent:\n  worker: local\n", encoding="utf-8")
    await start(lsp, shop, settings={"trustedFolders": [str(shop)], "provider": "mine"})
    res = await command(lsp, "superqode.listRoles")
    roles = {r["name"]: r for r in res["roles"]}
    assert res["trusted"] is True and roles["unit_tester"]["canRun"], roles["unit_tester"]
    assert res["worker"] == "local" and [a["name"] for a in res["agents"] if a["worker"]] == ["local"]
    # The worker is an ACP agent: whatever the provider setting, it decides.
    assert res["provider"] == "mine"
    # Defaults without superqode.roles: the mode's roles of superqode.yaml's defaults.
    assert roles["lint_tester"]["default"] and not roles["agent_security_tester"]["default"]


async def test_list_roles_with_a_broken_config_is_one_line(lsp: LanguageClient, shop: Path):
    (shop / "superqode.yaml").write_text("agents:\n  claude: {command: []}\n", encoding="utf-8")
    await start(lsp, shop)
    with pytest.raises(JsonRpcException) as failed:  # with the config's own message
        await command(lsp, "superqode.listRoles")
    text = str(failed.value)
    assert "superqode.yaml" in text and "agents.claude.command" in text, text
    assert "\n" not in text.strip()


async def test_a_run_with_the_picked_roles_runs_those_and_says_why_one_could_not(
    lsp: LanguageClient, shop: Path
):
    await start(lsp, shop, settings={"trustedFolders": [str(shop)]})
    listed = await command(lsp, "superqode.listRoles")
    picked = [r["name"] for r in listed["roles"] if r["name"] in ("lint_tester", "agent_unit_tester")]
    assert picked == ["agent_unit_tester", "lint_tester"]
    # As VS Code's picker runs them: the listed folder's URI, the ticked roles.
    sid = await run_and_wait(lsp, {"uri": from_fs_path(listed["folder"]), "roles": picked})
    catalog = from_fs_path(str(shop / "shop" / "catalog.py"))
    diags = await wait_for(lambda: superqode_diags(lsp, catalog), 30, "lint diagnostics")
    assert {d.code for d in diags} >= {"F401", "F841"}
    # Only the picked roles ran: no bandit finding anywhere, no security role in the report.
    assert not any(d.code.startswith("B") for ds in lsp.diagnostics.values() for d in ds
                   if d.source == "superqode")
    [qr] = (shop / ".superqode/qe-artifacts/qr").glob(f"qr-*-{sid}.json")
    ran = {r["role"]: r for r in json.loads(qr.read_text())["roles"]}
    assert set(ran) == set(picked), ran
    assert ran["lint_tester"]["status"] == "ok"
    # The agent role could not run and says why, as the picker said before the run.
    assert ran["agent_unit_tester"]["status"] == "skipped"
    why = {r["name"]: r["reason"] for r in listed["roles"]}["agent_unit_tester"]
    assert why.startswith("no provider configured")
    assert ran["agent_unit_tester"]["reason"] == why


async def test_a_run_with_a_picked_worker_gives_the_agent_roles_to_it(lsp: LanguageClient, shop: Path):
    """superqode.runQE {worker}: the agent roles' worker for this run only,
    an ACP agent under agents: or "builtin"; an unknown one is refused."""
    (shop / "superqode.yaml").write_text(
        "agents:\n  ghost:\n    command: [superqode-no-such-acp-agent]\n", encoding="utf-8")
    await start(lsp, shop, settings={"trustedFolders": [str(shop)]})
    listed = await command(lsp, "superqode.listRoles")
    (ghost,) = listed["agents"]
    assert ghost["reason"].startswith("ACP agent ghost: command 'superqode-no-such-acp-agent' not found")

    def reason(sid: str) -> str:
        said = [m.message for m in lsp.log_messages + lsp.messages]
        assert list((shop / ".superqode/qe-artifacts/qr").glob(f"qr-*-{sid}.json")), said
        [qr] = (shop / ".superqode/qe-artifacts/qr").glob(f"qr-*-{sid}.json")
        [role] = json.loads(qr.read_text())["roles"]
        assert role["role"] == "agent_unit_tester" and role["status"] == "skipped", role
        return role["reason"]

    sid = await run_and_wait(lsp, {"roles": ["agent_unit_tester"], "worker": "ghost"})
    assert reason(sid) == ghost["reason"]
    # "builtin": the built-in loop, whatever superqode.yaml names: here no provider.
    (shop / "superqode.yaml").write_text(
        "agents:\n  ghost:\n    command: [superqode-no-such-acp-agent]\nagent:\n  worker: ghost\n",
        encoding="utf-8")
    sid = await run_and_wait(lsp, {"roles": ["agent_unit_tester"], "worker": "builtin"})
    assert reason(sid).startswith("no provider configured")
    with pytest.raises(JsonRpcException, match=r"worker 'nope' is not an ACP agent .*known: builtin, ghost"):
        await command(lsp, "superqode.runQE", {"roles": ["agent_unit_tester"], "worker": "nope"})
