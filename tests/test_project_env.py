"""The project's own environment (workspace/pyenv*, pyisolate, roles/_pyenv):
discovery order, declared dependencies, the sandbox-first isolation against
editable installs, and pytest runs that did not run."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.config import Config
from superqode_ls.qe.roles._pyenv import _top_levels
from superqode_ls.qe.roles.mutation import MutationTester
from superqode_ls.qe.roles.unit import UnitTester
from superqode_ls.workspace.pyenv import candidates, discover
from superqode_ls.workspace.pyenv_build import resolve_python
from superqode_ls.workspace.pyenv_declared import declared_requirements
from tests.role_helpers import make_ctx, run_role

BASE_PYTHON = getattr(sys, "_base_executable", None) or sys.executable
VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"


def make_venv(where: Path, pytest_too: bool = True, dists: tuple[str, ...] = ()) -> Path:
    """A real venv (no pip) at ``where``; pytest (and only what it needs)
    linked in from SuperQode's environment, so no plugin is autoloaded."""
    subprocess.run([BASE_PYTHON, "-m", "venv", "--without-pip", str(where)], check=True)
    site = next((where / "lib").glob("python3*/site-packages"))
    wanted = (("pytest",) if pytest_too else ()) + dists
    if wanted:
        for name, path in _top_levels(wanted).items():
            (site / name).symlink_to(path)
    return where / "bin" / "python"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


# -- discovery ---------------------------------------------------------------

def test_candidates_come_in_the_documented_order(tmp_path):
    project = tmp_path / "p"
    (project / ".venv").mkdir(parents=True)
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / "venv").mkdir()
    (project / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / ".pdm-python").write_text("/opt/pdm/bin/python\n")
    (project / ".hatch" / "default").mkdir(parents=True)
    (project / ".hatch" / "default" / "pyvenv.cfg").write_text("")
    got = candidates(project, configured="cfg/bin/python", editor="/ed/bin/python",
                     environ={"VIRTUAL_ENV": "/active", "CONDA_PREFIX": "/conda", "PATH": ""})
    assert [s for s, _ in got] == ["config", "editor", "VIRTUAL_ENV", ".venv", "venv",
                                   "hatch", "pdm", "conda"]
    assert got[0][1] == str(project / "cfg" / "bin" / "python")  # relative to the project
    assert got[2][1] == "/active/bin/python"


def test_a_repositorys_shared_venv_serves_its_subfolders(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".venv").mkdir()
    (repo / ".venv" / "pyvenv.cfg").write_text("")
    sub = repo / "packages" / "a"
    sub.mkdir(parents=True)
    assert candidates(sub, environ={"PATH": ""}) == [("repo/.venv", str(repo / ".venv/bin/python"))]
    # Outside a repository nothing above the folder is looked at.
    (tmp_path / "loose" / "x").mkdir(parents=True)
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("")
    assert candidates(tmp_path / "loose" / "x", environ={"PATH": ""}) == []


def test_a_broken_setting_is_passed_over_with_its_reason(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    py = make_venv(project / ".venv", pytest_too=False)
    found, tried = discover(project, configured="/no/such/python", environ={"PATH": ""})
    assert found is not None and found.source == ".venv" and found.version == VERSION
    assert found.python == str(py) and not found.has_pytest
    assert tried == ["config: /no/such/python does not exist"]
    assert "/no/such/python" in (found.note or "")
    assert found.label(project) == f"tests: .venv/bin/python {VERSION}"
    # A setting may name the environment folder instead of its interpreter.
    found, _ = discover(project, configured=".venv", environ={"PATH": ""})
    assert found.source == "config" and found.python == str(py)


def test_declared_requirements(tmp_path):
    root = write(tmp_path / "p", {
        "pyproject.toml": (
            '[project]\nname = "My_Proj"\ndependencies = ["attrs>=22", "requests"]\n'
            '[project.optional-dependencies]\ntest = ["pytest-mock", "my-proj[extra]"]\n'
            'docs = ["sphinx"]\n'
            '[dependency-groups]\ndev = [{include-group = "lint"}, "freezegun"]\nlint = ["ruff"]\n'
        ),
        "requirements-dev.txt": "# tools\n-e .\n-r requirements/base.txt\nhypothesis==6.1  # pinned\n",
        "requirements/base.txt": "attrs>=22\n--index-url https://example.invalid\n./local\n",
    })
    assert declared_requirements(root) == [
        "attrs>=22", "requests", "pytest-mock", "ruff", "freezegun", "hypothesis==6.1",
    ]


PICCOLO_SETUP = """import os
from setuptools import setup

def parse(rel):
    with open(os.path.join("requirements", rel)) as f:
        return [ln.strip() for ln in f if ln.strip()]

setup(name="piccolo", install_requires=parse("requirements.txt"),
      extras_require={e: parse(f"extras/{e}.txt") for e in ("postgres", "sqlite")})
"""


def test_extras_files_a_setup_py_reads_are_declared_and_built(tmp_path):
    """piccolo's setup.py reads its extras from requirements/extras/*.txt:
    before, asyncpg (its tests' driver) was neither installed nor known as
    declared ("the project does not declare it under that name")."""
    from superqode_ls.qe.roles._unit_env import environment_problem
    from superqode_ls.workspace.pyenv_plan import make_plan

    root = write(tmp_path / "piccolo", {
        "setup.py": PICCOLO_SETUP, "requirements/requirements.txt": "black\n",
        "requirements/test-requirements.txt": "pytest==9.0.3\n",
        "requirements/doc-requirements.txt": "sphinx\n",
        "requirements/extras/postgres.txt": "asyncpg>=0.30.0\n",
        "requirements/extras/sqlite.txt": "aiosqlite>=0.16.0\n",
        "piccolo/__init__.py": "", "tests/test_x.py": "import asyncpg\n"})
    assert {"asyncpg>=0.30.0", "aiosqlite>=0.16.0", "black"} <= set(declared_requirements(root))
    assert "sphinx" not in declared_requirements(root)
    plan = make_plan(root)
    assert "requirements/extras/postgres.txt" in plan.requirement_files, plan
    said = environment_problem({"message": "ModuleNotFoundError: No module named 'asyncpg'"}, root)
    assert said == ("package 'asyncpg' is not in the test environment, which was made without "
                    "it though the project declares it (asyncpg, in "
                    "requirements/extras/postgres.txt): set roles.python to an environment that "
                    "has it"), said


def test_without_an_environment(tmp_path):
    root = write(tmp_path / "p", {"requirements.txt": "pyyaml\n"})
    py = asyncio.run(resolve_python(root, root, Config(), environ={"PATH": ""}))
    # Not an installable project and SuperQode's own Python already has
    # pyyaml: nothing to build.
    assert py.own and "every declared dependency" in py.note
    write(root, {"pyproject.toml": '[project]\nname = "p"\ndependencies = ["no-such-dist-xyz>=1"]\n'})
    cfg = Config.model_validate({"roles": {"build_env": False}})
    py = asyncio.run(resolve_python(root, root, cfg, environ={"PATH": ""}))
    assert py.own and "build_env is off" in py.note and "roles.python" in py.note
    # The user's own test command: nothing is built for it.
    cfg = Config.model_validate({"roles": {"unit_test_command": ["/x/bin/python", "-m", "pytest"]}})
    py = asyncio.run(resolve_python(root, root, cfg, environ={"PATH": ""}))
    assert py.own and "unit_test_command" in py.note


# -- the sandbox's sources first ---------------------------------------------

def editable_project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A src-layout project (the user's tree), installed in its .venv the way
    setuptools does it (an __editable__ finder) and, for good measure, with a
    .pth line too; and a sandbox copy where ``VALUE`` differs and ``oldmod``
    is deleted. The finder goes first on sys.meta_path (as some build
    backends' do), so PYTHONPATH alone would not beat it."""
    project = write(tmp_path / "project", {
        "src/mypkg/__init__.py": 'VALUE = "user"\n\n\ndef double(x):\n    return x * 2\n',
        "src/oldmod.py": "GONE = False\n",
        "tests/test_pkg.py": (
            "import os\n\nimport pytest\n\nimport mypkg\n\n\n"
            "def test_sandbox_copy():\n"
            "    assert mypkg.VALUE == 'sandbox', mypkg.__file__\n"
            "    assert mypkg.__file__.startswith(os.getcwd())\n\n\n"
            "def test_deleted_module_is_gone():\n"
            "    with pytest.raises(ImportError):\n"
            "        import oldmod  # noqa: F401\n\n\n"
            "def test_double():\n    assert mypkg.double(2) == 4\n"
        ),
    })
    py = make_venv(project / ".venv", dists=("coverage",))
    site = next((project / ".venv" / "lib").glob("python3*/site-packages"))
    (site / "__editable___mypkg_0_1_finder.py").write_text(
        "import importlib.util, sys\n"
        f"MAPPING = {{'mypkg': {str(project / 'src' / 'mypkg')!r}}}\n"
        "class _EditableFinder:\n"
        "    @classmethod\n"
        "    def find_spec(cls, fullname, path=None, target=None):\n"
        "        if fullname in MAPPING:\n"
        "            return importlib.util.spec_from_file_location(\n"
        "                fullname, MAPPING[fullname] + '/__init__.py',\n"
        "                submodule_search_locations=[MAPPING[fullname]])\n"
        "        return None\n"
        "def install():\n    sys.meta_path.insert(0, _EditableFinder)\n"
    )
    (site / "__editable__.mypkg-0.1.pth").write_text("import __editable___mypkg_0_1_finder; __editable___mypkg_0_1_finder.install()\n")
    (site / "mypkg-src.pth").write_text(str(project / "src") + "\n")
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    for sub in ("src", "tests"):
        subprocess.run(["cp", "-r", str(project / sub), str(sandbox / sub)], check=True)
    (sandbox / "src" / "oldmod.py").unlink()
    (sandbox / "src" / "mypkg" / "__init__.py").write_text(
        'VALUE = "sandbox"\n\n\ndef double(x):\n    return x * 2\n'
    )
    return project, sandbox, py


def test_editable_install_of_the_users_tree_does_not_shadow_the_sandbox(tmp_path):
    project, sandbox, py = editable_project(tmp_path)
    # Control: in the environment as it is, the user's tree wins everywhere.
    where = subprocess.run([str(py), "-c", "import mypkg; print(mypkg.VALUE)"], cwd=sandbox,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert where == "user"
    out = run_role(UnitTester(), make_ctx(sandbox, project))
    assert out.status == "ok", out.reason
    assert out.findings == [], [f.message for f in out.findings]
    assert "3 test(s) run" in out.reason and f"tests: .venv/bin/python {VERSION}" in out.reason


def test_mutants_are_imported_from_the_scratch_copy_not_the_users_tree(tmp_path):
    project, sandbox, _ = editable_project(tmp_path)
    # Only the test that pins the result: a mutant of ``x * 2`` is caught
    # only if the mutated copy is what the test imports.
    (sandbox / "tests" / "test_pkg.py").write_text(
        "import mypkg\n\n\ndef test_double():\n    assert mypkg.double(3) == 6\n"
    )
    ctx = make_ctx(sandbox, project)
    ctx.trusted = True
    role = MutationTester(workers=1, use_cache=False)
    out = run_role(role, ctx)
    assert out.status == "ok", out.reason
    assert role.report.statuses["killed"] >= 1, role.report.summary()
    assert role.report.statuses["survived"] == 0, role.report.summary()


# -- a run that did not run is not ok ------------------------------------------

@pytest.fixture
def venv_project(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    make_venv(project / ".venv")
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    return project, sandbox


@pytest.mark.parametrize("files, reason", [
    ({"pytest.ini": "[pytest]\nfilterwarnings = error\nbogus_option = 1\n",
      "test_a.py": "def test_a():\n    pass\n"},
     "PytestConfigWarning: Unknown config option: bogus_option"),
    ({"pytest.ini": "[pytest]\naddopts = --no-such-flag\n",
      "test_a.py": "def test_a():\n    pass\n"},
     "unrecognized arguments: --no-such-flag"),
    ({"test_a.py": "def test_a(:\n    pass\n", "test_b.py": "def test_b():\n    pass\n"},
     "collection error"),
], ids=["config-warning-as-error", "usage-error", "collection-error"])
def test_pytest_that_did_not_run_is_a_failure_with_its_message(venv_project, files, reason):
    project, sandbox = venv_project
    write(sandbox, files)
    out = run_role(UnitTester(), make_ctx(sandbox, project))
    assert out.status == "failed", out.reason
    assert reason in out.reason


def test_no_test_collected_is_no_tests(venv_project):
    project, sandbox = venv_project
    write(sandbox, {"test_nothing.py": "X = 1\n"})
    out = run_role(UnitTester(), make_ctx(sandbox, project))
    assert out.status == "skipped" and out.reason.startswith("no tests"), out.reason


def test_a_project_env_without_pytest_says_so(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    make_venv(project / ".venv", pytest_too=False)
    sandbox = write(tmp_path / "sandbox", {"test_a.py": "def test_a():\n    pass\n"})
    out = run_role(UnitTester(), make_ctx(sandbox, project))
    assert out.status == "skipped" and "pytest is not installed" in out.reason, out.reason
    assert ".venv/bin/python" in out.reason


def test_types_use_the_project_interpreter(tmp_path):
    from superqode_ls.qe.roles.types import TypeTester

    project = tmp_path / "project"
    project.mkdir()
    py = make_venv(project / ".venv", pytest_too=False)
    site = next((project / ".venv" / "lib").glob("python3*/site-packages"))
    # A typed third-party package only the project's environment has.
    write(site, {"extlib/__init__.py": "def number() -> int:\n    return 1\n", "extlib/py.typed": ""})
    sandbox = write(tmp_path / "sandbox", {
        "pkg/__init__.py": "import extlib\n\nx: str = extlib.number()\n",
    })
    ctx = make_ctx(sandbox, project)
    ctx.trusted = True
    out = run_role(TypeTester(), ctx)
    assert out.status == "ok", out.reason
    assert [f.rule_id for f in out.findings] == ["assignment"], [f.message for f in out.findings]
    assert out.reason == f"imports resolved in .venv/bin/python {VERSION}"
    assert py.exists()


def test_cli_python_flag_chooses_the_interpreter_and_the_report_names_it(tmp_path, capsys):
    import json

    from superqode_ls.cli import main

    project = write(tmp_path / "project", {"test_a.py": "def test_a():\n    assert True\n"})
    make_venv(project / ".venv")  # found by discovery, but the flag wins
    other = make_venv(tmp_path / "envx")
    code = main(["run", str(project), "--snapshot", "-r", "unit_tester", "--jsonl",
                 "--python", str(tmp_path / "envx")])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    events = [json.loads(line) for line in out.splitlines()]
    report = json.loads(Path(events[-1]["data"]["report"]).read_text())
    assert report["interpreter"]["source"] == "config"
    assert report["interpreter"]["python"] == str(other)
    assert report["interpreter"]["label"] == f"tests: {other} {VERSION}"
    unit = next(r for r in report["roles"] if r["role"] == "unit_tester")
    assert unit["status"] == "ok" and "1 test(s) run" in unit["reason"]
    assert any(e["type"] == "progress" and "environment: tests:" in e["data"].get("message", "")
               for e in events)


def test_own_interpreter_leaves_async_plugins_out_of_a_suite_without_async_tests(tmp_path):
    # No environment and nothing declared: SuperQode's own Python runs the
    # suite. filterwarnings = error must not turn an unused async plugin's
    # configure-time warning into a failed run.
    sandbox = write(tmp_path / "sandbox", {
        "pytest.ini": "[pytest]\nfilterwarnings = error\n",
        "test_a.py": "def test_a():\n    assert 1 + 1 == 2\n",
    })
    out = run_role(UnitTester(), make_ctx(sandbox))
    assert out.status == "ok", out.reason
    assert "1 test(s) run" in out.reason and "SuperQode's own Python" in out.reason


def test_tests_run_as_in_the_projects_activated_environment(venv_project):
    # sqlmodel's tests run `coverage` by name in a subprocess: its developers
    # run them in an activated venv, so the environment's bin comes first.
    project, sandbox = venv_project
    write(sandbox, {"test_env.py": (
        "import os, shutil, sys\n\n\ndef test_env():\n"
        "    here = os.path.dirname(sys.executable)\n"
        "    assert os.path.dirname(shutil.which('python')) == here\n"
        "    assert os.environ['VIRTUAL_ENV'] == sys.prefix\n")})
    out = run_role(UnitTester(), make_ctx(sandbox, project))
    assert out.status == "ok" and out.findings == [], (out.reason, out.findings)
    assert out.reason.startswith("1 test(s) run (1 passed"), out.reason
