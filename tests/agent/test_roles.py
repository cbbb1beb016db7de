"""Agent roles in the registry, and what they say without a provider."""

from __future__ import annotations

import pytest

from superqode_ls.config import Config
from superqode_ls.qe.roles import REGISTRY, get_role

from .conftest import EventLog, agent_config, copy_sandbox, make_ctx

AGENTS = [
    "agent_security_tester",
    "agent_api_tester",
    "agent_unit_tester",
    "agent_e2e_tester",
    "agent_performance_tester",
]


@pytest.mark.parametrize("name", AGENTS)
def test_registered_deep_only_and_sandbox_modifying(name):
    assert name in REGISTRY
    role = get_role(name)
    assert role.name == name
    assert role.modes == frozenset({"deep"})
    assert role.executes_code and role.modifies_sandbox
    assert role.unavailable(Config()).startswith("no provider configured")


def test_missing_key_is_named_and_a_keyed_fallback_is_enough(monkeypatch):
    role = get_role("agent_api_tester")
    cfg = agent_config(
        [
            {
                "name": "hosted",
                "base_url": "https://api.example.com/v1",
                "model": "m",
                "api_key_env": "SQ_MISSING_KEY",
            }
        ],
    )
    assert (
        role.unavailable(cfg) == "provider hosted: environment variable SQ_MISSING_KEY is not set"
    )
    cfg = agent_config(
        [
            {
                "name": "hosted",
                "base_url": "https://api.example.com/v1",
                "model": "m",
                "api_key_env": "SQ_MISSING_KEY",
            },
            {"name": "local", "base_url": "http://127.0.0.1:11434/v1", "model": "m"},
        ],
        provider="hosted",
        fallback_provider="local",
    )
    assert role.unavailable(cfg) is None
    cfg = agent_config(
        [{"name": "local", "base_url": "http://x/v1", "model": "m"}], provider="other"
    )
    assert role.unavailable(cfg) == "agent provider 'other' is not in providers"


async def test_run_without_provider_is_skipped(make_repo, tmp_path):
    project = make_repo({"a.py": "x = 1\n"})
    ctx = make_ctx(project, copy_sandbox(project, tmp_path / "sb"), Config(), EventLog())
    out = await get_role("agent_e2e_tester").run(ctx)
    assert out.status == "skipped"
    assert out.reason.startswith("no provider configured")
    assert out.findings == []


def test_config_rejects_bad_permission_values():
    from superqode_ls.config import ConfigError, validate_layer

    with pytest.raises(ConfigError, match="agent.permissions.run_shell"):
        validate_layer({"agent": {"permissions": {"run_shell": "sometimes"}}}, "superqode.yaml")


async def test_terminal_asker_reads_one_answer_per_question():
    import io

    from superqode_ls.agent.permissions import Permissions, TerminalAsker

    out = io.StringIO()
    asker = TerminalAsker(stdin=io.StringIO("y\nnope\n"), stdout=out)
    perms = Permissions({"run_shell": "ask"}, asker)
    assert await perms.check("run_shell", "run in the sandbox: make test") == (
        True,
        "allowed by the user",
    )
    assert await perms.check("run_shell", "run in the sandbox: rm x") == (
        False,
        "denied by the user",
    )
    # End of input is a no, not a hang.
    assert await perms.check("run_shell", "run in the sandbox: ls") == (False, "denied by the user")
    assert out.getvalue().count("superqe: allow run_shell: run in the sandbox:") == 3


async def test_the_asker_comes_from_the_runtime_and_nobody_means_no():
    from superqode_ls.agent.permissions import AllowAsker, DenyAsker, Permissions
    from superqode_ls.runtime import Runtime

    nobody = Permissions({"run_shell": "ask"}, Runtime().asker)
    assert isinstance(nobody.asker, DenyAsker)
    assert await nobody.check("run_shell", "ls") == (False, "denied by the user")
    allow = AllowAsker()
    yes = Permissions({"run_shell": "ask"}, Runtime(asker=allow).asker)
    assert yes.asker is allow and await yes.check("run_shell", "ls") == (True, "allowed by the user")
    # One front end's asker is not another's: nothing process-wide was set.
    assert isinstance(Permissions({}, Runtime().asker).asker, DenyAsker)
