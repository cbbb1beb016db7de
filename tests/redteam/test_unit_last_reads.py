"""What the unit role and the environment builder read of a tree a session
wrote, in SuperQode's own process, follows no link and waits on no FIFO.

``_unit_last.code_key`` hashes the sandbox after the project's tests ran
there (is the code what the last run tested?), and the environment
builder reads the project's requirement files to name a forced package
index. A file swapped for a link to the user's key after the walk had its
target read (its hash then depended on the key); one swapped for a FIFO
hung the run."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from superqode_ls.qe.roles import _unit_last
from superqode_ls.workspace import pyenv_failed


def _within(fn, seconds: float = 10.0):
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert out, "blocked on the FIFO"
    return out[0]


def test_code_key_follows_no_link_swapped_in_after_the_walk(tmp_path, monkeypatch):
    keys = []
    for secret in ("first key", "second key"):
        root = tmp_path / secret.split()[0]
        root.mkdir()
        (root / "a.py").write_text("x = 1\n")
        (tmp_path / f"{secret}.txt").write_text(secret)
        os.symlink(tmp_path / f"{secret}.txt", root / "b.py")
        # the walk saw a regular b.py; the session swapped it for the link since
        monkeypatch.setattr(_unit_last, "walk_files", lambda r, s=None: ["a.py", "b.py"])
        keys.append(_unit_last.code_key(root))
    assert keys[0] == keys[1]  # the link's target was never read


def test_code_key_waits_on_no_fifo(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "b.py")
    monkeypatch.setattr(_unit_last, "walk_files", lambda r, s=None: ["a.py", "b.py"])
    assert len(_within(lambda: _unit_last.code_key(tmp_path))) == 64


def test_the_forced_index_is_read_from_no_fifo_and_no_link(tmp_path):
    os.mkfifo(tmp_path / "requirements.txt")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("-i https://example.invalid/simple\n")
    os.symlink(outside, tmp_path / "requirements-dev.txt")
    (tmp_path / "requirements-ci.txt").write_text("-i https://pypi.example/simple\nrequests\n")
    why = "Failed to fetch: https://pypi.example/simple/requests/"
    said = _within(lambda: pyenv_failed.forced_index(
        tmp_path, ("requirements.txt", "requirements-dev.txt", "requirements-ci.txt"), why))
    assert said is not None and "requirements-ci.txt" in said and "example.invalid" not in said


def test_django_discovery_waits_on_no_planted_fifo(tmp_path):
    from superqode_ls.qe.roles import _unit_django

    for name in ("pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"):
        os.mkfifo(tmp_path / name)
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    os.mkfifo(tmp_path / ".github" / "workflows" / "ci.yml")
    os.mkfifo(tmp_path / "manage.py")
    assert _within(lambda: _unit_django._pytest_ini_settings(tmp_path)) is None
    assert _within(lambda: _unit_django._workflow_settings(tmp_path)) is None
    assert _within(lambda: _unit_django._is_django_manage(tmp_path / "manage.py")) is False


def test_the_pytest_ini_options_wait_on_no_planted_fifo(tmp_path):
    from superqode_ls.workspace import pytest_addopts

    for name in ("tox.ini", "setup.cfg"):
        os.mkfifo(tmp_path / name)
    assert _within(lambda: pytest_addopts.ini_options(tmp_path)) == {}


def test_the_pytest_ini_options_follow_no_planted_pyproject(tmp_path):
    """pyproject.toml is read first: a FIFO there hung the run, and a link
    to a file outside the project was read as its configuration."""
    from superqode_ls.workspace import pytest_addopts

    os.mkfifo(tmp_path / "pyproject.toml")
    assert _within(lambda: pytest_addopts.ini_options(tmp_path)) == {}
    os.unlink(tmp_path / "pyproject.toml")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.toml"
    outside.write_text('[tool.pytest.ini_options]\naddopts = "--cov secret"\n')
    os.symlink(outside, tmp_path / "pyproject.toml")
    assert _within(lambda: pytest_addopts.ini_options(tmp_path)) == {}


def test_the_declarations_and_the_default_test_command_follow_no_planted_file(tmp_path):
    """What the environment builder and the unit role read of a project's
    declarations (pyproject.toml, tox.ini: its default test command): a FIFO
    hung the run, a link to a file outside was read as the project's."""
    from superqode_ls.qe.roles._unit_default import default_suite
    from superqode_ls.workspace.pyenv_read import read_pyproject
    from superqode_ls.workspace.pyenv_tox import tox_commands

    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_a.py").write_text("def test_a():\n    pass\n")
    os.mkfifo(tmp_path / "pyproject.toml")
    os.mkfifo(tmp_path / "tox.ini")
    assert _within(lambda: read_pyproject(tmp_path)) == {}
    assert _within(lambda: default_suite(tmp_path, ["tests/unit/test_a.py"])) is None
    for name, text in (("pyproject.toml", '[project]\nname = "outside"\n'),
                       ("tox.ini", "[testenv]\ncommands = pytest tests/unit\n")):
        os.unlink(tmp_path / name)
        outside = tmp_path.parent / f"{tmp_path.name}-{name}"
        outside.write_text(text)
        os.symlink(outside, tmp_path / name)
    assert read_pyproject(tmp_path) == {}
    assert tox_commands(tmp_path, {}) is None
