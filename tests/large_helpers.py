"""A generated large project: hundreds of modules, each with ruff-fixable
lines and bandit-flagged lines, committed to a fresh git repository.

Used by the large-project tests and by bench/qe.py; deterministic for a seed.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

_HEADER = '''"""Module {i}: generated."""
import os
import sys
import json
import hashlib
import subprocess
import random

import yaml

'''

_FUNC = '''

def handler_{i}_{j}(value, path):
    unused_{j} = 1
    if value == None:
        return f"none"
    token = hashlib.md5(path.encode()).hexdigest()
    data = yaml.load(open(path))
    subprocess.call("ls " + path, shell=True)
    return token, data, random.random()
'''


def make_large_project(root: Path, modules: int = 500, funcs: int = 2, seed: int = 0,
                       packages: int = 20, tests: bool = False) -> Path:
    """``root`` as a git repository of ``modules`` Python files spread over
    ``packages`` packages; returns ``root``."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for p in range(packages):
        pkg = root / "bigpkg" / f"sub{p}"
        pkg.mkdir(parents=True, exist_ok=True)
        (pkg / "__init__.py").write_text("")
    (root / "bigpkg" / "__init__.py").write_text("")
    for i in range(modules):
        pkg = root / "bigpkg" / f"sub{i % packages}"
        body = _HEADER.format(i=i) + "".join(
            _FUNC.format(i=i, j=j) for j in range(funcs + rng.randint(0, 1))
        )
        (pkg / f"mod{i}.py").write_text(body)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "bigpkg"\nversion = "0"\n\n[tool.ruff]\nline-length = 100\n\n'
        '[tool.ruff.lint]\nselect = ["E4", "E7", "E9", "F"]\n'
    )
    if tests:
        (root / "tests").mkdir(exist_ok=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@localhost"}
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                ["git", "commit", "-q", "-m", "generated"]):
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)
    return root
