"""The protocol-level half of the server: client capabilities, folders, paths,
documents, messages and background tasks. It knows no feature; the state the
features share is typed on ``server.SuperQodeServer``, which builds on this."""

from __future__ import annotations

import asyncio
import logging
import os
import posixpath
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.exceptions import FeatureRequestError, JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__
from .errors import RequestFailed
from .patches import split_lines
from .settings import Settings
from .store import FindingStore

log = logging.getLogger(__name__)
DISK_RECHECK_S = 1.0
# Files whose lines are kept between reads: a workspace run can touch
# thousands; past this many the cache starts again rather than grow.
DISK_CACHE_MAX = 2000


def session_root(folder: str) -> Path:
    """Sessions are kept per repository: a folder inside a git repository
    shares its repository's sessions."""
    from ..engine.projects import repo_root

    try:
        return (repo_root(Path(folder)) or Path(folder)).resolve()
    except Exception:
        return Path(folder)


class ClientFeatures:
    """What the client supports, resolved once at initialize."""

    def __init__(self, caps: types.ClientCapabilities):
        def cap(path: str, default: Any = None) -> Any:
            return get_capability(caps, path, default)

        self.work_done_progress = bool(cap("window.work_done_progress", False))
        self.show_document = bool(cap("window.show_document.support", False))
        self.configuration = bool(cap("workspace.configuration", False))
        self.pull = cap("text_document.diagnostic", None) is not None
        self.refresh = bool(cap("workspace.diagnostics.refresh_support", False))
        self.document_changes = bool(cap("workspace.workspace_edit.document_changes", False))
        self.resource_ops = list(cap("workspace.workspace_edit.resource_operations", []) or [])
        self.apply_edit = bool(cap("workspace.apply_edit", False))
        self.related_information = bool(
            cap("text_document.publish_diagnostics.related_information", False)
        )
        self.version_support = bool(cap("text_document.publish_diagnostics.version_support", False))
        literal = cap("text_document.code_action.code_action_literal_support", None)
        self.code_action_literals = literal is not None
        formats = cap("text_document.hover.content_format", None) or []
        self.hover_markdown = any(str(getattr(f, "value", f)) == "markdown" for f in formats)
        self.did_change_configuration_dynamic = bool(
            cap("workspace.did_change_configuration.dynamic_registration", False)
        )

    @property
    def pull_mode(self) -> bool:
        # Pull only when the client can also be told to re-pull; otherwise a
        # finished run would stay invisible until the next keystroke.
        return self.pull and self.refresh


# Refusals written for the user (errors.fail, bad arguments).
_EXPECTED = (RequestFailed, JsonRpcInvalidParams)


class _Dropped:
    """A message already answered with an error; handle_message ignores it."""

    jsonrpc = "dropped"


class SuperQodeProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException:
            # pygls logs a request it cannot read and never answers it, which
            # leaves the client waiting forever: answer with InvalidParams.
            if isinstance(data, dict) and "id" in data and "method" in data:
                err = JsonRpcInvalidParams(f"{data.get('method')}: malformed params")
                self._send_response(data["id"], None, err.to_response_error())
                return _Dropped()
            raise

    def _handle_response(self, msg_id, result=None, error=None):
        # A request we gave up on (a run cancelled while the client was still
        # answering workDoneProgress/create, a prompt that timed out): its late
        # answer is expected, not a server error to show the user.
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            self._request_futures.pop(msg_id, None)
            log.debug("late response to %s ignored", msg_id)
            return
        super()._handle_response(msg_id, result, error)


    def _send_handler_result(self, future, *, msg_id):
        # A request the user asked for that cannot be done (an unknown
        # worktree, bad arguments) is an answer, not a server fault: one line
        # in the log, no traceback.
        if not future.cancelled() and isinstance(future.exception(), _EXPECTED):
            self._request_futures.pop(msg_id, None)
            exc = future.exception()
            log.info("request %s refused: %s", msg_id, exc)
            self._send_response(msg_id, error=exc.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)

    def _handle_cancel_notification(self, msg_id):
        # Editors cancel requests already answered (VS Code does at every
        # cursor move); pygls warns about each one.
        if msg_id not in self._request_futures:
            log.debug("cancel for %s: already answered", msg_id)
            return
        super()._handle_cancel_notification(msg_id)


class ServerBase(LanguageServer):
    def __init__(self) -> None:
        super().__init__("superqode-ls", __version__, protocol_cls=SuperQodeProtocol)
        self.store = FindingStore()
        self.client: ClientFeatures = ClientFeatures(types.ClientCapabilities())
        self.encoding: str = "utf-16"
        self.init_settings = Settings()
        self.folder_settings: dict[str, Settings] = {}
        self._disk_lines: dict[str, tuple[int, list[str], float]] = {}
        self._path_cache: dict[str, str | None] = {}
        # realpath is a syscall per path component, each a GIL hand-off while a
        # session's threads run: resolved once, forgotten when a run ends.
        self._real_cache: dict[str, str] = {}
        self._folders_key: tuple[Any, ...] | None = None
        self._folders: list[str] = []
        self._uri_cache: dict[tuple[str, str], str | None] = {}
        self._folder_as_given: dict[str, str] = {}
        self.shutting_down = False
        self._tasks: set[asyncio.Task] = set()
        self._settings_loaded: asyncio.Event | None = None
        # workspace/configuration requests sent and not yet answered, and
        # whether ``initialized`` has sent its first (lifecycle.py)
        self.config_pending = 0
        self.config_asked = False

    # ---- folders and paths -------------------------------------------------
    def realpath(self, path: str) -> str:
        real = self._real_cache.get(path)
        if real is None:
            real = os.path.realpath(path)
            if len(self._real_cache) > 100_000:
                self._real_cache.clear()
            self._real_cache[path] = real
        return real

    def folder_paths(self) -> list[str]:
        try:
            ws = self.workspace
        except RuntimeError:
            return []
        key = (tuple(ws.folders), ws.root_path)
        if key == self._folders_key:
            return self._folders
        folders = [to_fs_path(f.uri) for f in ws.folders.values()]
        if not folders and ws.root_path:
            folders = [ws.root_path]
        out = []
        for f in folders:
            if not f:
                continue
            real = self.realpath(f)
            # URIs go back to the client under the path it knows the folder by
            # (a symlinked folder would otherwise get diagnostics on other URIs).
            self._folder_as_given[real] = f.rstrip(os.sep) or f
            out.append(real)
        self._folders_key = key
        self._folders = out
        return out

    def folder_for_path(self, path: str) -> str | None:
        real = self.realpath(path)
        best = None
        for folder in self.folder_paths():
            inside = real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)
            if inside and (best is None or len(folder) > len(best)):
                best = folder
        return best

    def folder_for_uri(self, uri: str) -> str | None:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        return self.folder_for_path(path) if path else None

    def rel_path(self, folder: str, uri: str) -> str | None:
        path = to_fs_path(uri)
        if not path:
            return None
        real = self.realpath(path)
        try:
            return Path(real).relative_to(folder).as_posix()
        except ValueError:
            return None

    def uri_for(self, folder: str, rel: str) -> str | None:
        """URI of a project-relative path; None if it points outside ``folder``."""
        key = (folder, rel)
        cached = self._uri_cache.get(key)
        if cached is not None or key in self._uri_cache:
            return cached
        norm = posixpath.normpath(rel.replace("\\", "/"))
        if norm.startswith("/") or norm == ".." or norm.startswith("../"):
            uri = None
        else:
            uri = from_fs_path(os.path.join(self._folder_as_given.get(folder, folder), norm))
        if len(self._uri_cache) > 100_000:
            self._uri_cache.clear()
        self._uri_cache[key] = uri
        return uri

    @property
    def settings_loaded(self) -> asyncio.Event:
        if self._settings_loaded is None:
            self._settings_loaded = asyncio.Event()
        return self._settings_loaded

    async def settings_ready(self, timeout: float = 5.0) -> None:
        """Wait (briefly) for the first workspace/configuration answer."""
        try:
            await asyncio.wait_for(self.settings_loaded.wait(), timeout)
        except TimeoutError:
            pass

    def settings_for(self, folder: str | None) -> Settings:
        if folder and folder in self.folder_settings:
            return self.folder_settings[folder]
        return self.init_settings

    # ---- documents -----------------------------------------------------------
    def open_document(self, uri: str):
        try:
            docs = self.workspace.text_documents
        except RuntimeError:
            return None
        return docs.get(uri)

    def current_lines(self, uri: str) -> list[str]:
        """Lines the user sees: the open buffer, else the file on disk ([] if unreadable)."""
        doc = self.open_document(uri)
        if doc is not None:
            return split_lines(doc.source)
        return self.disk_lines(uri)

    def current_text(self, uri: str) -> str | None:
        doc = self.open_document(uri)
        if doc is not None:
            return doc.source
        path = to_fs_path(uri)
        if path is None:  # not a file: URI
            return None
        try:
            data = Path(path).read_bytes()
        except OSError:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def disk_lines(self, uri: str) -> list[str]:
        cached = self._disk_lines.get(uri)
        now = time.monotonic()
        # A burst of findings for one file reads and checks it once.
        if cached and now - cached[2] < DISK_RECHECK_S:
            return cached[1]
        path = self._uri_path(uri)
        if path is None:
            return []
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return []
        if cached and cached[0] == st.st_mtime_ns:
            self._disk_lines[uri] = (cached[0], cached[1], now)
            return cached[1]
        try:
            data = Path(path).read_bytes()
        except OSError:
            return []
        # Not UTF-8: columns may be approximate, but the finding still shows.
        lines = split_lines(data.decode("utf-8", "replace"))
        if len(self._disk_lines) >= DISK_CACHE_MAX:
            self._disk_lines.clear()
        self._disk_lines[uri] = (st.st_mtime_ns, lines, now)
        return lines

    def disk_mtime(self, uri: str) -> int | None:
        path = self._uri_path(uri)
        if path is None:
            return None
        try:
            return os.stat(path).st_mtime_ns
        except (OSError, ValueError):
            return None

    def disk_changed_since(self, uri: str, since_ns: int) -> bool:
        """Whether the file may have changed on disk after ``since_ns`` (True if unsure)."""
        self.disk_lines(uri)
        cached = self._disk_lines.get(uri)
        return cached is None or cached[0] >= since_ns

    def _uri_path(self, uri: str) -> str | None:
        path = self._path_cache.get(uri)
        if path is None:
            path = to_fs_path(uri)
            if len(self._path_cache) > 100_000:
                self._path_cache.clear()
            self._path_cache[uri] = path
        return path

    def forget_disk_lines(self, uri: str) -> None:
        """The file may have just changed on disk: read it again next time."""
        self._disk_lines.pop(uri, None)

    def forget_disk_cache(self) -> None:
        self._disk_lines.clear()
        self._real_cache.clear()
        self._folders_key = None

    def document_version(self, uri: str) -> int | None:
        doc = self.open_document(uri)
        return doc.version if doc is not None else None

    # ---- messages ----------------------------------------------------------------
    def log(self, message: str, level: types.MessageType = types.MessageType.Info) -> None:
        log.info("%s", message)
        try:
            self.window_log_message(types.LogMessageParams(type=level, message=message))
        except Exception:  # no transport (unit tests) or closing
            pass

    def notify_user(self, message: str, level: types.MessageType = types.MessageType.Info) -> None:
        try:
            self.window_show_message(types.ShowMessageParams(type=level, message=message))
        except Exception:
            log.info("%s", message)

    def report_server_error(self, error: Exception, source) -> None:
        """Errors outside a request (a malformed notification, a failed send) go
        to the log, not into a pop-up per occurrence."""
        if source is FeatureRequestError:
            return
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)
        try:
            self.window_log_message(
                types.LogMessageParams(type=types.MessageType.Error,
                                       message=f"SuperQode: {type(error).__name__}: {error}")
            )
        except Exception:
            pass

    def lines_for_points(self, uri: str) -> Sequence[str]:
        return self.current_lines(uri)

    # ---- background work -------------------------------------------------------
    def background(self, coro, name: str) -> asyncio.Task:
        """Run ``coro`` as a task that is kept alive and whose failure is logged."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)

        def done(t: asyncio.Task) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("%s failed", name, exc_info=t.exception())
                self.log(f"SuperQode: {name} failed: {t.exception()}", types.MessageType.Error)

        task.add_done_callback(done)
        return task

