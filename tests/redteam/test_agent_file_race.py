"""The agent's file tools never follow a link swapped in while they work.

The tools run in SuperQode's own process, outside the barrier, on the
sandbox the session's processes keep writing (a test the agent started with
``run_shell &``, a daemon of the project's). Checking a path and then
opening it by name left a window: a file or a folder swapped for a link to
the user's files in between was followed, so the model read
``~/.ssh/id_rsa`` or wrote into HOME. Here a separate process swaps a file
and a folder of the sandbox for links out of it, as fast as it can, while
the tools read, search, list, write and edit those very paths. Nothing of
the outside ever comes back or changes. No barrier is involved (SuperQode's
own process has none): this holds at every protection level.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.agent.changes import ChangeTracker
from superqode_ls.agent.permissions import Permissions
from superqode_ls.agent.redact import Redactor
from superqode_ls.agent.tools import ToolBox
from superqode_ls.config import AgentConfig

from ..safety_helpers import content_fingerprint

SWAPPER = r"""
import os, sys
root, outside, stop = sys.argv[1:4]
f = os.path.join(root, "pkg", "mod.py")
d = os.path.join(root, "data")


def step(fn, *args):
    try:  # a tool may have made or replaced a name meanwhile: go on
        fn(*args)
    except OSError:
        pass


def write(path):
    with open(path, "w") as fh:
        fh.write("VALUE = 'inside'\n")


n = 0
while not os.path.exists(stop):
    # the file: a link to the secret, then a plain file again (each by rename)
    step(os.symlink, os.path.join(outside, "secret.py"), f + ".l")
    step(os.replace, f + ".l", f)
    step(write, f + ".t")
    step(os.replace, f + ".t", f)
    # the folder: a link to the outside folder, then the folder again
    step(os.rename, d, d + ".real")
    step(os.symlink, outside, d)
    step(os.unlink, d)
    step(os.rename, d + ".real", d)
    n += 1
    if n == 1:
        open(stop + ".started", "w").close()
"""

ROUNDS = 400


@pytest.fixture
def sandbox(tmp_path):
    root = tmp_path / "sb"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("VALUE = 'inside'\n")
    (root / "data").mkdir()
    (root / "data" / "leak.py").write_text("VALUE = 'inside'\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("KEY = 'SECRET-outside'\n")
    (outside / "leak.py").write_text("KEY = 'SECRET-outside'\n")
    return root, outside


def _box(root: Path) -> ToolBox:
    return ToolBox(root=root, role="agent_unit_tester", config=AgentConfig(), env={},
                   permissions=Permissions({k: "allow" for k in AgentConfig().permissions}),
                   redactor=Redactor(), tracker=ChangeTracker(root))


async def test_a_link_swapped_in_while_the_tools_work_is_never_followed(sandbox, tmp_path):
    root, outside = sandbox
    before = content_fingerprint(outside)
    stop = tmp_path / "stop"
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root), str(outside), str(stop)])
    box = _box(root)
    seen: list[str] = []
    try:
        started = Path(f"{stop}.started")
        while not started.exists():
            assert swapper.poll() is None, "the swapping process died"
            await box.call("list_files", "{}")  # (awaits the swapper's first round)
        for i in range(ROUNDS):
            for name, args in (
                ("read_file", {"path": "pkg/mod.py"}),
                ("read_file", {"path": "data/leak.py"}),
                ("search", {"pattern": "SECRET|inside"}),
                ("list_files", {"path": "data"}),
                ("write_file", {"path": "data/new.py", "content": f"x = {i}\n"}),
                ("edit_file", {"path": "data/leak.py", "old_text": "VALUE", "new_text": "VALUE"}),
            ):
                r = await box.call(name, json.dumps(args))
                seen.append(r.text)
    finally:
        stop.touch()
        swapper.wait(timeout=60)
    assert swapper.returncode == 0
    leaked = [t for t in seen if "SECRET" in t or "secret.py" in t]
    assert not leaked, f"{len(leaked)} tool results leaked the outside: {leaked[:3]}"
    assert content_fingerprint(outside) == before, "a tool wrote through a swapped-in link"
    assert not (outside / "new.py").exists()
    assert sum("VALUE = 'inside'" in t for t in seen) > 0  # the tools did work meanwhile


# The same swap made at the worst moment, every time: an audit hook (the
# "open" event comes just before the kernel's open) swaps the link in as the
# tool opens the name, after every check the tool made.
_ARMED: dict[str, object] = {}


def _on_audit(event: str, args: tuple) -> None:
    if event != "open" or not _ARMED or not isinstance(args[0], str):
        return
    if Path(args[0]).name in _ARMED["names"]:  # type: ignore[operator]
        swap = _ARMED.pop("swap")
        _ARMED.clear()
        swap()  # type: ignore[operator]


_HOOKED: list[bool] = []


def _arm(names: tuple[str, ...], swap) -> None:
    if not _HOOKED:
        sys.addaudithook(_on_audit)  # (cannot be removed: disarmed when unused)
        _HOOKED.append(True)
    _ARMED.update(names=names, swap=swap)


async def test_a_file_swapped_for_a_link_as_it_is_opened_is_not_read(sandbox):
    root, outside = sandbox
    target = root / "pkg" / "mod.py"

    def swap() -> None:
        target.unlink()
        target.symlink_to(outside / "secret.py")

    _arm(("mod.py",), swap)
    try:
        r = await _box(root).call("read_file", json.dumps({"path": "pkg/mod.py"}))
    finally:
        _ARMED.clear()
    assert target.is_symlink(), "the swap did not happen"
    assert "SECRET" not in r.text and r.outcome == "refused", r.text


async def test_a_folder_swapped_for_a_link_as_it_is_entered_is_not_written(sandbox):
    root, outside = sandbox
    before = content_fingerprint(outside)
    folder = root / "data"

    def swap() -> None:
        folder.rename(root / "data.real")
        folder.symlink_to(outside)

    for name, args in (("write_file", {"path": "data/new.py", "content": "pwned\n"}),
                       ("edit_file", {"path": "data/leak.py", "old_text": "VALUE",
                                      "new_text": "PWNED"})):
        if folder.is_symlink():
            folder.unlink()
            (root / "data.real").rename(folder)
        # armed on whichever the tool opens first: the folder or the file in it
        _arm(("data", "new.py") if name == "write_file" else ("data",), swap)
        try:
            r = await _box(root).call(name, json.dumps(args))
        finally:
            _ARMED.clear()
        assert folder.is_symlink(), f"{name}: the swap did not happen"
        assert content_fingerprint(outside) == before, f"{name} wrote outside: {r.text}"
