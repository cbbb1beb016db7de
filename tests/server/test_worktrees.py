"""server/worktrees.py: superqode.newWorktree / openWorktree / listWorktrees on a real git repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from ..conftest import run_git
from .conftest import start, wait_for


async def command(client: LanguageClient, name: str, args: dict | None = None):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=[args or {}])
    )


async def test_new_branch_is_checked_out_and_shown_in_a_new_window(lsp: LanguageClient, make_repo):
    repo = make_repo()
    await start(lsp, repo)
    res = await command(lsp, "superqode.newWorktree", {"branch": "feature/login"})
    path = Path(res["path"])
    assert res["branch"] == "feature/login" and res["name"] == "feature-login"
    assert (path / "README.md").read_text() == "hello\n"
    assert run_git(path, "branch", "--show-current").strip() == "feature/login"
    assert not path.is_relative_to(repo)  # outside the project
    assert res["opened"] is True
    (shown,) = lsp.shown_documents
    assert shown.uri == from_fs_path(str(path)) and shown.external is True
    # The user's checkout stays where it was.
    assert run_git(repo, "branch", "--show-current").strip() == "main"


async def test_task_slug_then_open_by_name_and_list(lsp: LanguageClient, make_repo):
    repo = make_repo({"app/models.py": "x = 1\n"})
    await start(lsp, repo, editor="neovim")
    made = await command(lsp, "superqode.newWorktree", {
        "uri": from_fs_path(str(repo / "app" / "models.py")),
        "task": "Refactor auth logic in app/models.py",
        "showDocument": False,
    })
    assert made["branch"] == "refactor-auth-logic-app-models-py"
    assert lsp.shown_documents == []  # the plugin opens the window itself

    opened = await command(lsp, "superqode.openWorktree", {"name": made["name"]})
    assert opened["path"] == made["path"]
    assert lsp.shown_documents[-1].uri == from_fs_path(made["path"])

    rows = await command(lsp, "superqode.listWorktrees")
    assert [(r["name"], r["branch"], r["state"]) for r in rows] == [
        (made["name"], made["branch"], "clean")
    ]


async def test_no_show_document_support_still_returns_the_path(lsp: LanguageClient, make_repo):
    repo = make_repo()
    await lsp.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(repo)), name=repo.name)],
    ))
    res = await command(lsp, "superqode.newWorktree")
    assert Path(res["path"]).is_dir() and res["branch"] is None  # detached exploration
    assert res["name"].startswith("exploration-")
    assert res["opened"] is False and lsp.shown_documents == []


@pytest.mark.parametrize(
    "name,args,message",
    [
        ("superqode.newWorktree", {"branch": "x"},
         "Error: worktrees can only be used within a Git repository."),
        ("superqode.openWorktree", {"name": "nope"},
         "Error: worktrees can only be used within a Git repository."),
        ("superqode.listWorktrees", {},
         "Error: worktrees can only be used within a Git repository."),
    ],
)
async def test_non_git_folder_is_a_one_line_error(lsp: LanguageClient, tmp_path, name, args, message):
    plain = tmp_path / "plain"
    plain.mkdir()
    await start(lsp, plain)
    with pytest.raises(JsonRpcException) as e:
        await command(lsp, name, args)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert lsp.shown_documents == []
    # The server is still there.
    assert await command(lsp, "superqode.listSessions") == {"sessions": []}


async def test_bad_requests_are_refused_and_leave_nothing(lsp: LanguageClient, make_repo):
    repo = make_repo()
    await start(lsp, repo)
    with pytest.raises(JsonRpcException, match="no worktree 'ghost'"):
        await command(lsp, "superqode.openWorktree", {"name": "ghost"})
    with pytest.raises(JsonRpcException, match="name"):
        await command(lsp, "superqode.openWorktree", {})
    with pytest.raises(JsonRpcException, match="not a file URI"):
        await command(lsp, "superqode.listWorktrees", {"uri": "untitled:Untitled-1"})
    with pytest.raises(JsonRpcException, match="main"):  # checked out in the main tree
        await command(lsp, "superqode.newWorktree", {"branch": "main"})
    assert await command(lsp, "superqode.listWorktrees") == []
    assert lsp.shown_documents == []


async def test_a_repository_outside_the_workspace_folders_is_refused(lsp: LanguageClient,
                                                                     make_repo):
    repo = make_repo()
    other = make_repo({"secret.py": "x = 1\n"})
    await start(lsp, repo)
    for name, args in (
        ("superqode.newWorktree", {"uri": from_fs_path(str(other / "secret.py")),
                                   "branch": "grab", "showDocument": False}),
        ("superqode.listWorktrees", {"uri": from_fs_path(str(other))}),
    ):
        with pytest.raises(JsonRpcException, match="outside the workspace folders") as e:
            await command(lsp, name, args)
        assert "\n" not in str(e.value)
    assert run_git(other, "branch", "--list", "grab") == ""
    assert run_git(other, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert lsp.shown_documents == []
    # Inside the workspace it still works.
    made = await command(lsp, "superqode.newWorktree", {
        "uri": from_fs_path(str(repo / "README.md")), "showDocument": False})
    assert Path(made["path"]).is_dir()


async def test_superqode_home_inside_the_project_is_one_error(lsp: LanguageClient, isolated_home):
    # The server's SUPERQODE_HOME is $HOME/.superqode: make $HOME the project.
    project = isolated_home
    (project / "app.py").write_text("x = 1\n")
    run_git(project, "init", "-q")
    run_git(project, "add", "app.py")
    run_git(project, "commit", "-qm", "init")
    await start(lsp, project)
    await command(lsp, "superqode.runQE", {"roles": ["toy_tester"]})
    await wait_for(lambda: [m for m in lsp.messages if m.type == types.MessageType.Error],
                   60, "error message")
    (err,) = [m.message for m in lsp.messages if m.type == types.MessageType.Error]
    assert "SUPERQODE_HOME" in err and "inside the project" in err and "\n" not in err
    assert not list((project / ".superqode").glob("working/*/qe/*"))
    assert run_git(project, "worktree", "list", "--porcelain").count("worktree ") == 1
