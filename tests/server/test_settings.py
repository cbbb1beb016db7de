"""server/settings.py: the editor's superqode.* settings, checked and layered; through a real
server over stdio, a change applies without a restart and a bad value keeps the previous."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from superqode_ls.server import settings

from .conftest import (
    caught_up,
    plant,
    progress_ended,
    run_and_wait,
    run_qe,
    sessions,
    start,
    superqode_diags,
    wait_for,
)


def test_settings_accept_section_or_bare_and_reject_bad_values():
    s = settings.parse({"superqode": {"mode": "deep", "runOnSave": True}})
    assert s.mode == "deep" and s.runOnSave
    layered = settings.parse({"roles": ["lint_tester"]}, s)
    assert layered.mode == "deep" and layered.roles == ["lint_tester"]
    with pytest.raises(settings.SettingsError, match="superqode.mode"):
        settings.parse({"mode": "fast"})
    with pytest.raises(settings.SettingsError):
        settings.parse(["not", "an", "object"])


def test_settings_fast_path_decides_as_the_pydantic_model():
    """Payloads of exact types skip pydantic; every other payload gets the
    model's own answer (coerced, or the same one-line error)."""
    cases = [{}, {"mode": "deep", "roles": ["lint_tester"], "trustedFolders": ["/a"], "python": "/p",
                  "isolation": "snapshot", "lintOnType": False, "unknownKey": 3},
             {"runOnSave": "yes"}, {"lintOnOpen": 0}, {"roles": ("a", "b")}, {"mode": "fast"},
             {"roles": "lint_tester"}, {"trustedFolders": [1]}, {"isolation": "sideways"},
             {"provider": 5}, {"runOnSave": "maybe"}, {"mode": None}]
    for payload in cases:
        try:
            want = settings._validated().model_validate(
                {k: v for k, v in payload.items() if v is not None}).model_dump()
        except Exception:
            want = None
        try:
            got = dataclasses.asdict(settings.parse(payload))
        except settings.SettingsError as e:
            assert want is None, (payload, e)
            assert str(e).startswith("superqode.") and "\n" not in str(e)
            continue
        assert got == want, payload


def test_settings_parse_does_not_import_pydantic_for_exact_payloads():
    code = ("import sys; from superqode_ls.server import settings; "
            "s = settings.parse({'superqode': {'mode': 'deep', 'roles': ['lint_tester'], 'runOnSave': True}}); "
            "assert s.mode == 'deep'; print('pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_settings_change_without_restart(lsp: LanguageClient, shop):
    await start(lsp, shop, settings={"roles": ["lint_tester"]})
    plant(shop)
    sid = await run_and_wait(lsp)
    catalog = from_fs_path(str(shop / "shop" / "catalog.py"))
    planted = from_fs_path(str(shop / "shop" / "planted.py"))
    assert superqode_diags(lsp, catalog) and not superqode_diags(lsp, planted)
    lsp.set_configuration({"superqode": {"roles": ["toy_tester"], "mode": "deep"}})
    lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

    async def mode_of_next_run():
        sid2 = await run_and_wait(lsp)
        return sid2, next(s for s in await sessions(lsp) if s["sessionId"] == sid2)

    sid2, s = await mode_of_next_run()
    assert sid2 != sid and s["mode"] == "deep"
    await wait_for(lambda: superqode_diags(lsp, planted), 10, "toy finding")
    # A finished whole-folder run replaces the previous one's findings.
    await wait_for(lambda: not superqode_diags(lsp, catalog), 10, "lint findings replaced")


async def test_invalid_settings_are_reported_and_previous_kept(lsp: LanguageClient, shop):
    await start(lsp, shop, settings={"mode": "sideways"})
    await wait_for(lambda: any("superqode.mode" in m.message for m in lsp.log_messages), 10, "warning")
    sid = await run_qe(lsp, {"roles": ["lint_tester"]})
    (s,) = [s for s in await sessions(lsp) if s["sessionId"] == sid]
    assert s["mode"] == "quick"
    await wait_for(lambda: progress_ended(lsp, sid), 60, "end")


async def test_a_settings_change_sent_before_the_answer_to_the_servers_request_is_not_asked_again(
    lsp: LanguageClient, shop
):
    """VS Code sends workspace/didChangeConfiguration right after
    ``initialized``, before it answers the server's first
    workspace/configuration: that answer holds the change already, and asking
    again held the first file's run for a second round trip. A change sent
    after the answer is asked for."""
    asked: list[str | None] = []
    answer = lsp.get_configuration

    def counted(*args, **kwargs):
        asked.append(kwargs.get("section"))
        if len(asked) == 1:  # as VS Code at its start: the notification, then the answer
            lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        return answer(*args, **kwargs)

    lsp.get_configuration = counted  # type: ignore[method-assign]
    await start(lsp, shop, settings={"roles": ["lint_tester"]})
    await wait_for(lambda: asked, 10, "the first request")
    await caught_up(lsp)
    assert asked == ["superqode"]
    lsp.set_configuration({"superqode": {"roles": ["toy_tester"], "mode": "deep"}})
    lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_for(lambda: len(asked) == 2, 10, "the second request")
    sid = await run_and_wait(lsp)
    assert next(s for s in await sessions(lsp) if s["sessionId"] == sid)["mode"] == "deep"
