"""A failed environment build is said at once by the next run, with its
cause (never "still being built" again, never built again while nothing it
reads changed); the cause names a package index a requirement file forces;
the detached builder's log says it goes on with the run's build."""

from __future__ import annotations

import time

from superqode_ls.workspace import envcache, pyenv_build
from superqode_ls.workspace.pyenv_failed import (
    RETRY_S,
    forced_index,
    last_failure,
    record_failure,
)
from tests.pyenv_helpers import project_files
from tests.test_project_env_build import offline, resolve, wheels  # noqa: F401 (fixtures)


def test_the_next_run_says_the_failed_build_at_once_without_building_again(make_repo, offline):  # noqa: F811
    repo = make_repo({**project_files("broken", deps=["no-such-dist-xyz>=1"]),
                      "tests/test_a.py": "import broken\n\n\ndef test_a():\n    pass\n"})
    first: list[str] = []
    py = resolve(repo, first)
    assert py.setup and "no-such-dist-xyz" in py.setup
    assert any(m.startswith("environment: building from") for m in first), first
    again: list[str] = []
    py2 = resolve(repo, again)
    assert py2.setup and "no-such-dist-xyz" in py2.setup, py2.setup
    assert "its last build, at" in py2.setup and "tried again" in py2.setup
    # What to change, or remove, to retry now (before: "when its declarations
    # change", naming no file, and an hour to wait).
    assert "at once when pyproject.toml changes, or now after deleting " in py2.setup, py2.setup
    assert py2.setup.rstrip(")").endswith(".failed")
    assert py2.setup.count("no-such-dist-xyz") == py.setup.count("no-such-dist-xyz")  # once
    assert not any(m.startswith("environment: building from") for m in again), again


def test_a_failure_is_tried_again_after_a_while(tmp_path):
    target = tmp_path / "envs" / "k1"
    target.parent.mkdir()
    record_failure(target, "uv pip install: error: boom")
    assert "uv pip install: error: boom (its last build, at" in last_failure(target)
    said = last_failure(target, None, ("requirements.txt", "dev-requirements.txt"))
    assert "at once when one of requirements.txt, dev-requirements.txt changes" in said, said
    assert said.endswith(f"or now after deleting {target}.failed)"), said
    assert last_failure(target, now=time.time() + RETRY_S + 1) is None
    assert last_failure(tmp_path / "envs" / "other") is None


def test_a_forced_index_is_named_when_the_build_could_not_fetch(tmp_path):
    (tmp_path / "requirements.txt").write_text(
        "# force the regular index\n-i https://pypi.python.org/simple\n.\n")
    why = ("uv pip install: error: Request failed after 3 retries cause: Failed to fetch: "
           "https://pypi.python.org/simple/annotated-types/")
    line = forced_index(tmp_path, ("requirements.txt",), why)
    assert line == ("requirements.txt forces the package index https://pypi.python.org/simple "
                    "(its -i line), which the build could not use here")
    # A failure of another kind is not blamed on the index.
    assert forced_index(tmp_path, ("requirements.txt",), "pip install: exit 1") is None
    (tmp_path / "req2.txt").write_text("idna\n")
    assert forced_index(tmp_path, ("req2.txt",), why) is None


def test_the_detached_builder_says_it_goes_on_with_the_runs_build(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERQODE_HOME", str(tmp_path / "home"))
    target = envcache.envs_dir() / "k2"
    target.mkdir(parents=True)  # a build cut short: no manifest
    said: list[str] = []

    def emit(_type, **data):
        said.append(data["message"])

    assert pyenv_build._ready(target, emit, handed_over=True) is None
    assert said == [("environment: going on with the build the run handed over (what it "
                     "downloaded is reused)")]
    target.mkdir()
    said.clear()
    pyenv_build._ready(target, emit)
    assert said and "the last build of it was stopped before it finished" in said[0]


def test_a_full_disk_is_not_remembered_as_a_failed_build(tmp_path):
    target = tmp_path / "envs" / "k3"
    target.parent.mkdir()
    why = pyenv_build.build_failed(target, tmp_path, (), "uv pip install: no space left on the disk")
    assert why == "uv pip install: no space left on the disk"
    assert last_failure(target) is None  # freeing the disk is the retry
    pyenv_build.build_failed(target, tmp_path, (), "uv pip install: error: boom")
    assert last_failure(target) is not None
