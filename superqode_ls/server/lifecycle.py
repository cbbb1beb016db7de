"""initialize / initialized / configuration / workspace folders / shutdown."""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types
from pygls.uris import from_fs_path

from . import settings as settings_mod
from .base import ClientFeatures
from .lifecycle_warm import warm_of
from .live import LIVE_ROLES, live_of
from .server import SuperQodeServer
from .watch import stop_watcher, stop_watchers

log = logging.getLogger(__name__)


def register(ls: SuperQodeServer) -> None:
    @ls.feature(types.INITIALIZE)
    def initialize(ls: SuperQodeServer, params: types.InitializeParams) -> None:
        # First of all: bandit's warm process loads, and what the first file
        # run imports is imported, while the client starts up and opens its
        # first file (lifecycle_warm.py).
        warm_of(ls).start_bandit()
        warm_of(ls).import_first(LIVE_ROLES)
        ls.client = ClientFeatures(params.capabilities)
        enc = ls.workspace.position_encoding
        ls.encoding = str(getattr(enc, "value", enc) or "utf-16")
        try:
            ls.init_settings = settings_mod.parse(params.initialization_options)
        except settings_mod.SettingsError as e:
            ls.init_settings = settings_mod.Settings()
            ls.log(f"SuperQode: ignoring initializationOptions: {e}", types.MessageType.Warning)
        if not ls.client.pull_mode:
            # Advertise pull diagnostics only to clients that also accept refresh
            # requests; the others get every update pushed.
            for method in (types.TEXT_DOCUMENT_DIAGNOSTIC, types.WORKSPACE_DIAGNOSTIC):
                ls.protocol.fm.features.pop(method, None)
                ls.protocol.fm.feature_options.pop(method, None)

    @ls.feature(types.INITIALIZED)
    async def initialized(ls: SuperQodeServer, params: types.InitializedParams) -> None:
        ls.config_asked = True
        try:
            await refresh_settings(ls)
        finally:
            ls.settings_loaded.set()
        # What other features do once the client is up (recovery prompt, the
        # agent's permission asker): registered on the server, not called by name.
        for hook in ls.on_initialized:
            try:
                await hook()
            except Exception:
                log.exception("initialized hook %s failed", getattr(hook, "__qualname__", hook))
        warm_of(ls).start_imports(live_of(ls).settled)

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: SuperQodeServer, params: types.DidChangeConfigurationParams) -> None:
        # Not a coroutine: decided as the message is read, before an answer
        # read after it (in the same chunk) counts its request off.
        if ls.client.configuration:
            if ls.config_pending or not ls.config_asked:
                # A request of ours is unanswered, or ``initialized``'s is still
                # to be sent: the client sent this before that answer (one
                # ordered stream), so the answer, made when it is sent, holds
                # the change already. VS Code sends one right after
                # ``initialized``: asking again held the first file's run for a
                # second round trip to a client still busy starting.
                log.debug("settings: a request is under way; not asked again")
                return
            # Runs asked for meanwhile wait for the new settings (settings_ready).
            ls.settings_loaded.clear()
            ls.background(_refresh_changed(ls), "settings")
            return
        try:
            new = settings_mod.parse(params.settings, ls.init_settings)
        except settings_mod.SettingsError as e:
            ls.log(f"SuperQode: settings not applied: {e}", types.MessageType.Warning)
            return
        ls.init_settings = new
        ls.folder_settings.clear()

    @ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(
        ls: SuperQodeServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        for removed in params.event.removed or []:
            for run in ls.runs.active():
                if from_fs_path(run.folder) == removed.uri:
                    run.cancel()
            for folder in list(ls.watchers):
                if from_fs_path(folder) == removed.uri:
                    await stop_watcher(ls, folder)
        await refresh_settings(ls)

    @ls.feature(types.SHUTDOWN)
    async def shutdown(ls: SuperQodeServer, params: None) -> None:
        ls.shutting_down = True
        pending = ls.runs.active()
        for run in pending:
            run.cancel()
        # Sessions revert their sandboxes on cancel; give them a moment to do so.
        if pending:
            await asyncio.wait([r.task for r in pending if r.task], timeout=20)
        await stop_watchers(ls)


async def _refresh_changed(ls: SuperQodeServer) -> None:
    try:
        await refresh_settings(ls)
    finally:
        ls.settings_loaded.set()


async def refresh_settings(ls: SuperQodeServer) -> None:
    """Fetch ``superqode`` settings for every folder via workspace/configuration."""
    folders = ls.folder_paths()
    if not ls.client.configuration or not folders:
        return
    items = [
        types.ConfigurationItem(scope_uri=from_fs_path(f), section=settings_mod.SECTION)
        for f in folders
    ]
    answered = False

    def done(_fut) -> None:
        # Counted off as the answer is read, before anything read after it
        # (a didChangeConfiguration) is handled: that one then asks again.
        nonlocal answered
        if not answered:
            answered = True
            ls.config_pending -= 1

    ls.config_pending += 1
    request = ls.protocol.send_request(types.WORKSPACE_CONFIGURATION, types.ConfigurationParams(items=items))
    request.add_done_callback(done)
    try:
        result = await asyncio.wait_for(asyncio.wrap_future(request), 10)
    except Exception as e:  # the client may not answer; keep what we have
        ls.log(f"SuperQode: could not read settings: {e}", types.MessageType.Warning)
        return
    finally:
        done(None)
    for folder, raw in zip(folders, result or []):
        try:
            ls.folder_settings[folder] = settings_mod.parse(raw or {}, ls.init_settings)
        except settings_mod.SettingsError as e:
            ls.log(f"SuperQode: settings for {folder} not applied: {e}", types.MessageType.Warning)
