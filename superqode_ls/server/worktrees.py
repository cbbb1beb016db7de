"""workspace/executeCommand: branch worktrees from the editor.

``superqode.newWorktree``, ``superqode.openWorktree`` and ``superqode.listWorktrees``
wrap ``engine.worktrees``. The git work runs in a thread so the server keeps
answering while ``git worktree add`` checks files out. New and opened worktrees
are offered to the editor with ``window/showDocument`` (``external``: a folder is
a new window, not a buffer), and the path is always returned so an editor
plugin can open the window itself; such a plugin passes ``showDocument: false``
so the folder is not also handed to the system's file opener.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import from_fs_path, to_fs_path

from .args import Args, parse
from .errors import fail, request_error
from .server import SuperQodeServer

if TYPE_CHECKING:
    from ..engine.worktrees import WorktreeInfo

SHOW_TIMEOUT_S = 30


class RepoArgs(Args):
    uri: str | None = None


class NewArgs(RepoArgs):
    branch: str | None = None
    task: str | None = None
    newBranch: bool = False
    showDocument: bool = True


class OpenArgs(Args):
    name: str  # first: a bare string argument is the name
    uri: str | None = None
    showDocument: bool = True


def _repo(ls: SuperQodeServer, uri: str | None, command: str) -> Path:
    if uri:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if not path:
            raise JsonRpcInvalidParams(f"{command}: not a file URI: {uri}")
        # As runQE: only repositories the user opened, never any path a client names.
        if ls.folder_for_uri(uri) is None:
            raise fail(f"{uri} is outside the workspace folders")
        return Path(path)
    folders = ls.folder_paths()
    if not folders:
        raise fail("no workspace folder is open")
    return Path(folders[0])


async def _engine(name: str, *args, **kwargs):
    """Run ``engine.worktrees.<name>`` off the event loop; its errors become
    one-line responses. The branches code (it loads the sandbox engine) is
    imported on first use, in the thread, so the server starts without it."""

    def call():
        from ..engine import worktrees

        return getattr(worktrees, name)(*args, **kwargs)

    try:
        return await asyncio.to_thread(call)
    except Exception as e:
        raise request_error(e) from None


async def show_folder(ls: SuperQodeServer, folder: Path) -> bool:
    """Ask the editor to open ``folder`` in a window; False when it cannot or did not."""
    if not ls.client.show_document:
        return False
    params = types.ShowDocumentParams(uri=from_fs_path(str(folder)), external=True)
    try:
        res = await asyncio.wait_for(ls.window_show_document_async(params), SHOW_TIMEOUT_S)
    except Exception as e:  # noqa: BLE001 - a refusal or no answer: the path is still returned
        ls.log(f"SuperQode: the editor did not open {folder}: {e}")
        return False
    return bool(res and res.success)


def describe(info: WorktreeInfo) -> dict[str, Any]:
    if info.orphan:
        state = "orphan"
    elif not info.exists:
        state = "missing"
    elif info.dirty is None:
        state = "unknown"
    else:
        state = f"dirty ({info.dirty})" if info.dirty else "clean"
    return {
        "name": info.name,
        "branch": info.branch,
        "detached": info.branch is None,
        "path": info.record.sandbox,
        "state": state,
        "locked": info.locked,
        "lastActivity": info.last_activity,
    }


def register(ls: SuperQodeServer) -> None:
    @ls.command("superqode.newWorktree")
    async def new_worktree(ls: SuperQodeServer, *args):
        a = parse(NewArgs, args, "superqode.newWorktree")
        repo = _repo(ls, a.uri, "superqode.newWorktree")
        rec = await _engine(
            "new_worktree", repo, a.branch or None, task=a.task or None,
            new_branch=a.newBranch,
        )
        opened = await show_folder(ls, rec.path) if a.showDocument else False
        return {"path": rec.sandbox, "branch": rec.branch, "name": rec.name, "opened": opened}

    @ls.command("superqode.openWorktree")
    async def open_worktree(ls: SuperQodeServer, *args):
        a = parse(OpenArgs, args, "superqode.openWorktree")
        repo = _repo(ls, a.uri, "superqode.openWorktree")
        path = await _engine("open_worktree", repo, a.name)
        opened = await show_folder(ls, path) if a.showDocument else False
        return {"path": str(path), "opened": opened}

    @ls.command("superqode.listWorktrees")
    async def list_worktrees(ls: SuperQodeServer, *args):
        a = parse(RepoArgs, args, "superqode.listWorktrees")
        repo = _repo(ls, a.uri, "superqode.listWorktrees")
        infos = await _engine("list_worktrees", repo)
        return [describe(i) for i in infos]
