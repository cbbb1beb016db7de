"""Role registry: name -> "module:Class", imported on first use so that
``superqe roles`` and the server start without loading every analyzer."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ...config import ConfigError
from ...workspace.extras import EXTRAS, needs

if TYPE_CHECKING:
    from .base import Role

# The roles' base (the project's environment, the sandbox's records and
# locks) is not imported with the registry: a new ``superqe run`` reaches
# ``session_start`` -- which begins its warm bandit, a module of this
# package -- without it, and imports it beside the sandbox's making.
_FROM_BASE = ("Role", "RoleContext", "RoleOutput")


def __getattr__(name: str) -> Any:
    if name in _FROM_BASE:
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

REGISTRY: dict[str, str] = {
    "security_tester": "superqode_ls.qe.roles.security:SecurityTester",
    "lint_tester": "superqode_ls.qe.roles.lint:LintTester",
    "type_tester": "superqode_ls.qe.roles.types:TypeTester",
    "unit_tester": "superqode_ls.qe.roles.unit:UnitTester",
    "mutation_tester": "superqode_ls.qe.roles.mutation:MutationTester",
    "test_generator": "superqode_ls.qe.roles.testgen:TestGenerator",
    "agent_security_tester": "superqode_ls.qe.roles.agent:AgentSecurityTester",
    "agent_api_tester": "superqode_ls.qe.roles.agent:AgentApiTester",
    "agent_unit_tester": "superqode_ls.qe.roles.agent:AgentUnitTester",
    "agent_e2e_tester": "superqode_ls.qe.roles.agent:AgentE2eTester",
    "agent_performance_tester": "superqode_ls.qe.roles.agent:AgentPerformanceTester",
}


class UnknownRole(ConfigError, KeyError):
    """A role name SuperQode does not know: bad input (exit 2); still a
    KeyError for the lookups that treat it as a missing entry."""

    def __str__(self) -> str:
        return f"unknown role {self.args[0]!r} (known: {', '.join(sorted(REGISTRY))})"


def role_class(name: str) -> type[Role]:
    """The role's class; a stand-in that is unavailable with the one line
    naming the extra when its module needs a package of an extra that is
    not installed (the agent roles without ``[agents]``)."""
    target = REGISTRY.get(name)
    if target is None:
        raise UnknownRole(name)
    module, _, cls = target.partition(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except ModuleNotFoundError as e:
        top = (e.name or "").partition(".")[0]
        if top not in EXTRAS:
            raise
        return _lacking(name, needs(top))


def _lacking(name: str, why: str) -> type[Role]:
    from .base import Role, RoleContext, RoleOutput

    class Lacking(Role):
        tool = "-"
        description = ""

        def unavailable(self, config=None) -> str | None:
            return why

        async def run(self, ctx: RoleContext) -> RoleOutput:
            return RoleOutput(status="skipped", reason=why)

    Lacking.name = name
    return Lacking


def get_role(name: str) -> Role:
    return role_class(name)()


__all__ = ["REGISTRY", "Role", "RoleContext", "RoleOutput", "UnknownRole", "get_role", "role_class"]
