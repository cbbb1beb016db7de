"""A project uv refuses (two extras with the same normalized name, as
SQLAlchemy keeps its pre-PEP 685 spellings) is installed with pip in the
environment, as its tox and nox do, and the note says so. Offline: pip,
the project's requirements and the build backend come from local wheels."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from superqode_ls.workspace.pyenv_build import _uv
from superqode_ls.workspace.pyenv_plan import PIP, duplicate_extras, make_plan
from tests.pyenv_helpers import STUB, project_files, wheel_of, wheelhouse
from tests.test_project_env import write
from tests.test_project_env_build import installed, resolve, run_in

# SQLAlchemy's layout: the PEP 685 name and the legacy one that normalizes to it.
EXTRAS = {"test": ["idna"], "mssql-pymssql": [], "mssql_pymssql": [], "oracle-db": [],
          "oracle_db": []}
GROUPS = '[dependency-groups]\ntests = ["certifi", "pytest"]\n'


@pytest.fixture(scope="module")
def pip_wheels(tmp_path_factory) -> Path:
    dest = wheelhouse(tmp_path_factory.mktemp("wheels"))
    for name in ("idna", "certifi", "pip"):
        wheel_of(name, dest)
    return dest


@pytest.fixture
def pip_offline(pip_wheels, monkeypatch) -> Path:
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("UV_FIND_LINKS", str(pip_wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(pip_wheels))
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")  # the machine's index settings, unread
    return pip_wheels


def refused(tmp_path: Path) -> Path:
    return write(tmp_path / "p", {
        **project_files("dupextras", deps=[STUB], extras=EXTRAS, extra_toml=GROUPS),
        "tests/test_a.py": "def test_a():\n    pass\n"})


def test_duplicate_extras_are_the_later_spellings():
    assert duplicate_extras({"optional-dependencies": EXTRAS}) == ("mssql_pymssql", "oracle_db")
    assert duplicate_extras({"optional-dependencies": {"a-b": [], "c": []}}) == ()
    assert duplicate_extras({}) == ()


def test_a_project_uv_refuses_is_planned_with_pip(tmp_path):
    root = refused(tmp_path)
    # uv itself refuses the file: what the fallback is for.
    res = subprocess.run([_uv(), "pip", "compile", "--no-index", "-q", "pyproject.toml"],
                         cwd=root, capture_output=True, text=True, check=False)
    assert res.returncode != 0 and "duplicate" in res.stderr, res.stderr
    plan = make_plan(root)
    assert plan.kind == "pyproject" and plan.installer == "pip"
    assert plan.describe().endswith("with pip")
    assert any("uv refuses pyproject.toml (extra mssql_pymssql and 1 more" in n
               for n in plan.notes)
    seed, install = plan.commands("uv", "/env/bin/python", root, "2026-01-02T00:00:00Z")
    assert seed[:3] == ["uv", "pip", "install"] and seed[-1] == PIP
    assert "--exclude-newer" not in seed  # pip is the tool's, not the project's
    assert install[:5] == ["/env/bin/python", "-I", "-m", "pip", "install"]
    assert install[install.index("--uploaded-prior-to") + 1] == "2026-01-02T00:00:00Z"
    assert install[-3:] == ["--group", "pyproject.toml:tests", ".[test]"]
    env = plan.tool_env(tmp_path / "tmp", "/env/bin/python")
    assert env["PIP_CACHE_DIR"].startswith(str(tmp_path / "tmp"))
    # A project uv reads keeps uv.
    ok = write(tmp_path / "ok", project_files("fine", extras={"test": ["idna"]}))
    assert make_plan(ok).installer == "uv" and not make_plan(ok).notes


def test_a_project_uv_refuses_is_built_with_pip(tmp_path, pip_offline):
    root = refused(tmp_path)
    progress: list[str] = []
    py = resolve(root, progress)
    assert py.source == "built" and py.setup is None and py.has_pytest, py
    assert {"dupextras", "idna", "certifi", "pytest", "pip"} <= installed(py.python)
    assert "installed with pip" in (py.note or "")
    assert any("with pip into" in m for m in progress)
    user = tmp_path / "user"
    user.mkdir()
    got = run_in(py.python, root, user,
                 "import importlib.metadata as m, dupextras; print(m.version('dupextras'), "
                 "dupextras.__file__)")
    assert got.split() == ["1.2.3", str(root / "dupextras" / "__init__.py")]
    # pip installed non-editable from the build's copy: nothing points there.
    site = next((Path(py.python).parent.parent / "lib").glob("python3*/site-packages"))
    assert not list(site.glob("__editable__*")) and not list(site.glob("*.egg-link"))


def test_a_failed_pip_install_is_one_setup_line(tmp_path, pip_offline):
    root = write(tmp_path / "p", {
        **project_files("dupextras", deps=["no-such-dist-anywhere"], extras=EXTRAS),
        "tests/test_a.py": "def test_a():\n    pass\n"})
    py = resolve(root)
    assert py.source != "built" and py.setup is not None
    assert py.setup.startswith("could not build the project's environment from pyproject.toml;")
    assert "with pip: pip install:" in py.setup and "no-such-dist-anywhere" in py.setup
    assert "\n" not in py.setup
