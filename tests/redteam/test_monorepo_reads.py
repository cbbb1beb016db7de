"""What SuperQode reads of a sandbox to find its Python projects and to
name an environment's cause: a session's processes may write the sandbox
while other roles run (an agent, the project's own tests), and a FIFO
where a ``pyproject.toml`` or a ``.gitignore`` is expected would block the
read, and the run with it, forever. Regular files only are read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CHECK = """
import sys
from pathlib import Path
from superqode_ls.workspace.pyprojects import python_projects
from superqode_ls.qe.roles._unit_env import ignored_output
root = Path(sys.argv[1])
print(python_projects(root))
print(ignored_output(f"Frontend directory '{root}/backend/app/frontend' does not exist", root / "backend"))
"""


def test_a_fifo_planted_as_a_declaration_or_an_ignore_file_is_not_read(tmp_path):
    root = tmp_path / "sandbox"
    (root / "backend" / "tests").mkdir(parents=True)
    (root / ".git").write_text("gitdir: /elsewhere\n")
    (root / "backend" / "setup.py").write_text("")
    (root / "backend" / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    os.mkfifo(root / "pyproject.toml")
    os.mkfifo(root / ".gitignore")
    os.mkfifo(root / "backend" / "pyproject.toml")
    res = subprocess.run([sys.executable, "-c", CHECK, str(root)], capture_output=True,
                         text=True, timeout=120, check=False,
                         cwd=Path(__file__).resolve().parents[2])
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["['backend']", "None"], res.stdout
