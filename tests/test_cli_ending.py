"""How a ``superqe`` process ends (cli/ending.py): once the command is done
it exits without the interpreter's teardown, in its own process and in the
warm helper's child, while what the exit owes the program still happens:
``atexit`` handlers run, the output is all there, the exit code is the
command's. Real processes; a ``sitecustomize`` on PYTHONPATH leaves a mark
for each ``atexit`` call and for each teardown (an object freed with its
module)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .warm_helpers import SUPERQE, TIMEOUT, Warm, state

MARKER = """\
import atexit, os

_DIR = {folder!r}


def _mark(what):
    with open(os.path.join(_DIR, f"{{what}}-{{os.getpid()}}"), "w") as fh:
        fh.write(what)


atexit.register(_mark, "atexit")


class _FreedAtTeardown:
    # What it calls is bound now: by the time the teardown frees it, the
    # module's globals and the builtins may be gone.
    def __del__(self, _open=os.open, _close=os.close, _pid=os.getpid, _dir=_DIR):
        _close(_open(f"{{_dir}}/teardown-{{_pid()}}", os.O_WRONLY | os.O_CREAT, 0o644))


_held = _FreedAtTeardown()
"""


@pytest.fixture
def marks(tmp_path, monkeypatch) -> Path:
    """A folder the marks land in; every Python process started from here on
    (superqe, its warm helper) loads the marking ``sitecustomize``."""
    site = tmp_path / "site"
    site.mkdir()
    folder = tmp_path / "marks"
    folder.mkdir()
    (site / "sitecustomize.py").write_text(MARKER.format(folder=str(folder)))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return folder


def _kinds(folder: Path, before: frozenset[str] = frozenset()) -> dict[str, set[str]]:
    """{"atexit"|"teardown": the pids that left that mark} (marks not in ``before``)."""
    out: dict[str, set[str]] = {}
    for p in folder.iterdir():
        if p.name in before:
            continue
        what, pid = p.name.split("-")
        out.setdefault(what, set()).add(pid)
    return out


def test_a_command_ends_without_the_teardown_its_atexit_and_output_kept(marks, make_repo):
    proc = subprocess.run([*SUPERQE, "roles"], capture_output=True, text=True, timeout=TIMEOUT,
                          check=False, env={**os.environ, "SUPERQODE_WARM": "off"})
    assert proc.returncode == 0, proc.stderr
    # The whole listing, ending with its last line (the streams were flushed).
    assert "security_tester" in proc.stdout and proc.stdout.endswith("\n")
    kinds = _kinds(marks)
    assert len(kinds.get("atexit", ())) == 1, kinds  # logging's flush and the like still run
    assert "teardown" not in kinds, kinds  # the old ending freed every module's objects
    # A command's own exit code comes through (2: a usage error).
    bad = subprocess.run([*SUPERQE, "run", str(make_repo({"a.py": "x = 1\n"})), "--mode", "nope"],
                         capture_output=True, text=True, timeout=TIMEOUT, check=False,
                         env={**os.environ, "SUPERQODE_WARM": "off"})
    assert bad.returncode == 2 and bad.stderr.strip(), bad.stderr


def test_the_in_process_call_returns_its_code():
    from superqode_ls.cli import main

    assert main(["roles"]) == 0  # with argv: a caller's function, never the process's end


def test_the_warm_helpers_child_ends_without_the_teardown(marks, make_repo):
    repo = make_repo({"app.py": "import subprocess\n\n\ndef f(x):\n"
                                "    return subprocess.call(x, shell=True)\n"})
    helper = Warm().start()
    try:
        before = frozenset(p.name for p in marks.iterdir())  # `superqe warm start`'s own
        res = subprocess.run([*SUPERQE, "run", str(repo), "-r", "security_tester", "--jsonl",
                              "--fail-on", "never"], capture_output=True, text=True,
                             timeout=TIMEOUT, check=False)
        assert state()["runs"] == 1  # handed to the helper, run in its forked child
        assert res.returncode == 0, res.stderr
        events = [json.loads(line) for line in res.stdout.splitlines()]
        assert events[-1]["type"] == "session_complete"
        assert Path(events[-1]["data"]["report"]).is_file()
        kinds = _kinds(marks, before)
        # The client and the child each ran their atexit handlers (the helper is still up) ...
        assert helper.pid is not None and str(helper.pid) not in kinds.get("atexit", ())
        assert len(kinds.get("atexit", ())) == 2, kinds
        # ... and neither paid for the teardown.
        assert "teardown" not in kinds, kinds
    finally:
        helper.stop()
