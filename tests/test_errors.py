"""The one error model: every user-facing error carries a one-line message and
an exit code, the CLI maps them in one place, and roles report a failed tool
through ``ToolFailed`` rather than a string."""

from __future__ import annotations

import ast
import asyncio
import importlib
import pkgutil
import stat
from pathlib import Path

import pytest

import superqode_ls
from superqode_ls import cli
from superqode_ls.config import ConfigError
from superqode_ls.errors import EXIT_FAILED, EXIT_USAGE, SuperQodeError, UsageError
from superqode_ls.qe.pipeline import SessionFailed
from superqode_ls.qe.roles import security
from superqode_ls.qe.roles.base import ToolFailed
from superqode_ls.qe.roles.security import SecurityTester
from superqode_ls.workspace.branches import NOT_A_REPO, NotARepository
from superqode_ls.workspace.errors import WorkspaceError
from superqode_ls.workspace.git import GitError, git
from tests.role_helpers import make_ctx, run_role

CLI = Path(cli.__file__).parent


def _all_subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub, *_all_subclasses(sub)}
    return out


def test_every_error_has_an_exit_code_from_the_cli_docs():
    for mod in pkgutil.walk_packages(superqode_ls.__path__, "superqode_ls."):
        if ".server" not in mod.name and not mod.name.endswith("__main__"):
            importlib.import_module(mod.name)
    errors = _all_subclasses(SuperQodeError)
    assert {ConfigError, WorkspaceError, GitError, SessionFailed, UsageError} <= errors
    assert {e.__name__: e.exit_code for e in errors if e.exit_code not in (1, 2, 3)} == {}


def test_the_cli_prints_one_line_and_the_errors_own_code(capsys):
    assert cli.error_exit(WorkspaceError("no sandbox here\nTraceback: noise")) == EXIT_USAGE
    assert capsys.readouterr().err == "superqe: no sandbox here\n"
    assert cli.error_exit(NotARepository()) == EXIT_USAGE
    assert capsys.readouterr().err == NOT_A_REPO + "\n"  # bare: editors match the line


def test_a_real_git_failure_exits_3_and_2_in_the_worktree_group(tmp_path, capsys):
    with pytest.raises(GitError) as info:
        git(["rev-parse", "--verify", "no-such-ref"], tmp_path)
    assert cli.error_exit(info.value) == EXIT_FAILED
    assert capsys.readouterr().err.startswith("superqe: git rev-parse")
    assert cli.error_exit(info.value, EXIT_USAGE) == EXIT_USAGE
    args = cli.build_parser().parse_args(["worktree", "list"])
    assert args.errors_exit == EXIT_USAGE
    assert cli.build_parser().parse_args(["status"]).errors_exit is None


def test_a_handlers_error_reaches_main_untranslated(capsys):
    code = cli.main(["recover", "qe-20200101-000000-abcdef"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and err.count("\n") == 1 and err.startswith("superqe: ")


def test_no_cli_module_translates_errors_by_hand():
    """`raise UsageError(str(e))` inside an except clause was the old way:
    main maps every SuperQodeError in one place."""
    found = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler):
                for inner in ast.walk(node):
                    if (
                        isinstance(inner, ast.Raise)
                        and isinstance(inner.exc, ast.Call)
                        and getattr(inner.exc.func, "id", "") == "UsageError"
                    ):
                        found.append(f"{path.name}:{inner.lineno}")
    assert found == []


def _fake_bandit(tmp_path: Path, body: str) -> str:
    tool = tmp_path / "bin" / "bandit"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n" + body + "\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return str(tool)


def test_a_failing_bandit_fails_the_role_with_its_message(make_repo, tmp_path, monkeypatch):
    repo = make_repo({"app.py": "import os\n"})
    fake = _fake_bandit(tmp_path, "echo 'bandit: cannot read its profile' >&2; exit 2")
    monkeypatch.setattr(security, "tool_path", lambda name: fake if name == "bandit" else None)
    out = run_role(SecurityTester(), make_ctx(repo))
    assert (out.status, out.tool) == ("failed", "bandit")
    assert out.reason == "bandit failed: bandit: cannot read its profile"


def test_a_bandit_out_of_time_is_a_timeout_not_a_string(make_repo, tmp_path, monkeypatch):
    repo = make_repo({"app.py": "import os\n"})
    fake = _fake_bandit(tmp_path, "exec sleep 60")
    monkeypatch.setattr(security, "tool_path", lambda name: fake if name == "bandit" else None)
    out = run_role(SecurityTester(), make_ctx(repo, deadline_in=1.0))
    assert (out.status, out.reason, out.tool) == ("timeout", "bandit ran out of time", "bandit")


def test_tool_failed_is_an_error_of_the_model():
    e = ToolFailed("mypy", "mypy crashed\nwith a long traceback", status="failed")
    assert isinstance(e, SuperQodeError) and e.output().reason == "mypy crashed"


def test_a_ghostwriter_that_writes_nothing_fails_the_role_with_why(make_repo, monkeypatch):
    from superqode_ls.qe.roles import testgen
    from tests.deep_helpers import make_ctx as deep_ctx

    repo = make_repo({"calc.py": "def double(x: int) -> int:\n    return 2 * x\n"})
    monkeypatch.setattr(testgen, "GHOSTWRITE_TIMEOUT_S", 0.01)  # stopped before it writes
    out = asyncio.run(testgen.TestGenerator().run(deep_ctx(repo)))
    assert (out.status, out.reason, out.tool) == (
        "failed",
        "could not write tests: timed out",
        testgen.TOOL,
    )


# Exceptions of the engine that never reach a user, each with why.
INTERNAL = {
    "superqode_ls.agent.confine.Refused": "its line goes back to the model as the tool's answer",
    "superqode_ls.agent.stream.StreamError": "provider.py wraps it in a ProviderError",
    "superqode_ls.cli.warm_client.WarmError": "the CLI falls back to its own run; the reason goes to SUPERQODE_WARM=verbose only",
    "superqode_ls.cli.warm_peer.Refused": "the warm helper answers a refused peer with its reason and drops it",
    "superqode_ls.server.errors.RequestFailed": "the JSON-RPC error a request answers with; it carries a user_line",
}


def test_every_error_derives_from_the_model():
    """What the user can act on is a SuperQodeError, so both front ends map
    it by the one base class (a full disk, a usage error, a failed tool are
    not "a bug" in the editor). Private exceptions (``_X``) stay inside."""
    found = set()
    for mod in pkgutil.walk_packages(superqode_ls.__path__, "superqode_ls."):
        # __main__ runs; the Django runner is imported by the project's own
        # interpreter under its settings (manage.py test), never by SuperQode.
        if mod.name.endswith(("__main__", "._django_runner")):
            continue
        module = importlib.import_module(mod.name)
        for name, obj in vars(module).items():
            if (isinstance(obj, type) and issubclass(obj, BaseException)
                    and obj.__module__ == module.__name__ and not name.startswith("_")
                    and not issubclass(obj, SuperQodeError)):
                found.add(f"{module.__name__}.{name}")
    assert found == set(INTERNAL)


def _kinds() -> list[SuperQodeError]:
    from superqode_ls.agent.provider import ProviderError
    from superqode_ls.qe.roles import UnknownRole

    return [
        SessionFailed("cannot write the artifacts: [Errno 28] No space left on device\nmore"),
        UsageError("--sarif out: is a directory"),
        ToolFailed("ruff", "ruff failed: cannot parse pyproject.toml"),
        ConfigError("superqode.yaml: qe.fail_on: bad value"),
        WorkspaceError("no such project folder: /nowhere"),
        GitError(["rev-parse", "HEAD"], 128, "fatal: bad revision"),
        ProviderError("provider local: environment variable KEY is not set"),
        UnknownRole("no_such_role"),
    ]


@pytest.mark.parametrize("error", _kinds(), ids=lambda e: type(e).__name__)
def test_the_editor_and_the_cli_say_the_same_line(error, capsys):
    from superqode_ls.errors import user_line
    from superqode_ls.server.errors import is_user_error, request_error, user_message

    line = user_line(error)
    assert line and "\n" not in line and not line.startswith(type(error).__name__ + ":")
    assert user_message(error) == request_error(error).message == line
    assert is_user_error(error)  # logged as the user's problem, not with a traceback
    cli.error_exit(error)
    assert capsys.readouterr().err == f"superqe: {line}\n"


def test_anything_else_is_a_bug_and_says_its_type():
    from superqode_ls.errors import user_line
    from superqode_ls.server.errors import is_user_error, user_message

    e = KeyError("x")
    assert user_line(e) == user_message(e) == "KeyError: 'x'" and not is_user_error(e)
    assert user_line(RuntimeError("\nboom\ntrace")) == "RuntimeError: boom"
    assert user_line(RuntimeError()) == "RuntimeError"


def test_no_role_builds_a_failed_output_by_hand():
    """Roles report a failed tool one way: ``raise ToolFailed`` where the
    result is read, ``reported`` (or ``e.output()``) at the entry. A
    ``RoleOutput(status="failed"|"timeout", ...)`` written by hand would be
    a second way."""
    roles = Path(security.__file__).parent
    found = []
    for path in sorted(roles.glob("*.py")):
        if path.name == "base.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "RoleOutput":
                for kw in node.keywords:
                    if (kw.arg == "status" and isinstance(kw.value, ast.Constant)
                            and kw.value.value in ("failed", "timeout")):
                        found.append(f"{path.name}:{node.lineno}")
    assert found == []


def test_a_failing_ruff_fails_the_role_through_tool_failed(make_repo, tmp_path, monkeypatch):
    from superqode_ls.qe.roles import lint
    from superqode_ls.qe.roles.lint import LintTester

    repo = make_repo({"app.py": "import os\n"})
    tool = tmp_path / "bin" / "ruff"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho 'ruff: bad configuration' >&2\nexit 2\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(lint, "tool_path", lambda name: str(tool) if name == "ruff" else None)
    ctx = make_ctx(repo)
    out = run_role(LintTester(), ctx)
    assert (out.status, out.reason, out.tool) == ("failed", "ruff failed: ruff: bad configuration",
                                                  "ruff")
    # The verifier's recheck gets no findings from a failed check, not an exception.
    assert asyncio.run(LintTester().recheck(ctx, ["app.py"])) == []
