"""``superqe COMMAND`` imports the module of that command only (cli/__init__.py)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from superqode_ls import cli


def _registered(module: str) -> set[str]:
    parser = cli._Parser(prog="x")
    sub = parser.add_subparsers(dest="command")
    importlib.import_module(f"superqode_ls.cli.{module}").register(sub)
    return set(sub.choices)


def test_the_map_names_every_command_and_its_module():
    mapped: dict[str, str] = {}
    for module in cli.COMMAND_MODULES:
        for command in _registered(module):
            mapped[command] = module
    assert mapped == cli.COMMAND_MODULE


def test_a_command_line_imports_its_module_alone():
    code = ("import sys; from superqode_ls import cli; cli.build_parser('run');"
            "print(sorted(m for m in sys.modules if m.startswith('superqode_ls.cli.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['superqode_ls.cli.run']"


def test_without_a_known_command_every_command_is_listed(capsys):
    parser = cli.build_parser("nonsense")
    assert {"run", "exec", "worktree", "status", "guard"} <= set(
        parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    with pytest.raises(SystemExit) as ended:
        cli.main(["nonsense"])
    assert ended.value.code == cli.EXIT_USAGE
    assert "invalid choice" in capsys.readouterr().err
