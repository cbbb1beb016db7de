"""A repository whose Python projects live in subfolders (a monorepo:
fastapi's full-stack template keeps its backend in ``backend/`` with its own
``pyproject.toml``, the root being a uv workspace with the ``uv.lock``):
each project is found as a developer finds it, built with its own declared
tooling (the workspace's lock for a member) and tested from its own folder;
findings come back with repository paths. A root that is itself the project
(flask, with ``examples/tutorial`` beside its tests) stays one project.
Offline: wheels come from SuperQode's own environment."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from superqode_ls.config import Config
from superqode_ls.workspace.pyenv_build import _uv, resolve_python
from superqode_ls.workspace.pyenv_plan import make_plan
from superqode_ls.workspace.pyprojects import python_projects, uv_workspace
from tests.pyenv_helpers import STUB, project_files, run_unit_cli
from tests.test_project_env import write
from tests.test_project_env_build import installed, offline, wheels  # noqa: F401

# A Django project's manage.py (a Flask app's makes no project: tests/test_role_unit_start.py).
MANAGE = "from django.core.management import execute_from_command_line\n"

TEST = "def test_a():\n    pass\n"
WORKSPACE = '[dependency-groups]\ndev = ["typer"]\n\n[tool.uv.workspace]\nmembers = ["backend"]\n'


def under(folder: str, files: dict[str, str]) -> dict[str, str]:
    return {f"{folder}/{rel}": text for rel, text in files.items()}


def test_projects_are_found_where_their_declarations_and_tests_are(tmp_path):
    # The template's layout: a uv workspace root (no [project]), tests in backend/.
    mono = write(tmp_path / "mono", {
        "pyproject.toml": WORKSPACE, "uv.lock": "version = 1\n",
        **under("backend", {**project_files("app"), "tests/api/test_login.py": TEST}),
        "frontend/package.json": "{}\n",
        "services/worker/requirements.txt": "idna\n", "services/worker/test_jobs.py": TEST,
        "docs/requirements.txt": "sphinx\n",  # declares, holds no tests: not a project to test
        "node_modules/x/setup.py": "", "node_modules/x/test_x.py": TEST,
    })
    assert python_projects(mono) == ["backend", "services/worker"]
    assert uv_workspace(mono, "backend") == "" and uv_workspace(mono, "services/worker") is None
    # A root that is the project with tests of its own: that project only
    # (flask: examples/tutorial has its own pyproject.toml and tests).
    lib = write(tmp_path / "lib", {**project_files("lib"), "tests/test_lib.py": TEST,
                                   **under("examples/tutorial", {**project_files("flaskr"),
                                                                 "tests/test_db.py": TEST})})
    assert python_projects(lib) == [""]
    # Loose tests with nothing declared, or nothing at all: the root, as before.
    assert python_projects(write(tmp_path / "loose", {"test_x.py": TEST})) == [""]
    assert python_projects(write(tmp_path / "empty", {"README.md": "x\n"})) == [""]
    # A root project without tests of its own, its subproject with tests.
    app = write(tmp_path / "app", {"requirements.txt": "idna\n",
                                   **under("api", {"setup.py": "", "tests/test_api.py": TEST})})
    assert python_projects(app) == ["api"]
    # Django's manage.py marks its project's root (tests.py are Django's tests).
    site = write(tmp_path / "site", {"requirements.txt": "Django\n", "web/manage.py": MANAGE,
                                     "web/shop/tests.py": TEST, "frontend/package.json": "{}"})
    assert python_projects(site) == ["web"]
    # Declaring nothing itself, web/ is built from the nearest declarations above it.
    plan = make_plan(site, "web")
    assert (plan.kind, plan.folder, plan.requirement_files) == ("requirements", "",
                                                                ("requirements.txt",))


def test_a_workspace_member_is_built_from_the_workspace_lock(tmp_path):
    root = write(tmp_path / "mono", {
        "pyproject.toml": WORKSPACE, "uv.lock": "version = 1\n", ".python-version": "3.12\n",
        **under("backend", {**project_files("app", extra_toml='[dependency-groups]\n'
                                                          'dev = ["pytest"]\n'),
                            "tests/test_a.py": TEST})})
    plan = make_plan(root, "backend")
    assert (plan.kind, plan.package, plan.folder, plan.lock_dir) == ("uv.lock", "app", "backend", "")
    assert plan.groups == ("dev",) and plan.python_request == "3.12"  # the workspace's pin
    assert set(plan.inputs) == {"uv.lock", "pyproject.toml", ".python-version",
                                "backend/pyproject.toml"}
    assert plan.cwd == ""  # uv sync runs where the lock is
    (cmd,) = plan.commands("uv", "/env/bin/python", tmp_path / "src")
    assert cmd[:4] == ["uv", "sync", "-q", "--frozen"]
    assert cmd[cmd.index("--package") + 1] == "app" and cmd[-2:] == ["--group", "dev"]
    assert plan.describe() == "backend: uv.lock (workspace member app); groups dev"
    # The root's own plan keeps the key it had: the folder changes only a member's.
    assert make_plan(root) is not None and make_plan(root).folder == ""
    # Without the workspace table the lock is another project's: the member's own declarations.
    write(root, {"pyproject.toml": '[tool.ruff]\nline-length = 99\n'})
    plan = make_plan(root, "backend")
    assert (plan.kind, plan.folder, plan.package) == ("pyproject", "backend", None)
    assert plan.inputs == ("backend/pyproject.toml",) and plan.cwd == "backend"
    # A project with a lock of its own is synced where that lock is.
    write(root, {"backend/uv.lock": "version = 1\n"})
    plan = make_plan(root, "backend")
    assert (plan.kind, plan.package, plan.cwd) == ("uv.lock", None, "backend")
    assert plan.inputs[0] == "backend/uv.lock"


def test_a_workspace_members_environment_is_synced_from_the_lock(tmp_path, offline):
    uv = _uv()
    root = write(tmp_path / "mono", {
        # (resolved for this platform only: the offline wheels are this one's)
        "pyproject.toml": WORKSPACE.replace('"typer"', '"idna"')
        + "\n[tool.uv]\nenvironments = [\"sys_platform == 'linux'\"]\n",
        **under("backend", {**project_files("app", deps=[STUB], extra_toml=(
            '[dependency-groups]\ndev = ["pytest"]\n')), "tests/test_a.py": TEST})})
    subprocess.run([uv, "lock", "-q", "--offline"], cwd=root, check=True, env={
        **os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache")})
    progress: list[str] = []
    py = asyncio.run(resolve_python(root, root, Config(), environ={"PATH": ""},
                                    emit=lambda t, **d: progress.append(str(d.get("message")))))
    assert py.source == "built" and py.setup is None and py.folder == "backend", py
    # The member, its dependency and its dev group; not the workspace root's group.
    assert {"app", "sq_stub_dep", "pytest"} <= installed(py.python)
    assert "idna" not in installed(py.python)
    assert any("workspace member app" in m for m in progress), progress


BACKEND_TEST = '''import importlib.metadata

import app


def test_runs_from_its_own_folder():
    # the developers' `cd backend && pytest`: paths relative to backend/
    assert open("settings.ini").read() == "backend"


def test_imports_the_sandbox_copy():
    assert app.WHERE == "sandbox" and importlib.metadata.version("app") == "1.2.3"


def test_bug():
    assert app.WHERE == "elsewhere"
'''


def test_each_project_of_a_monorepo_is_tested_from_its_folder(make_repo, offline):
    repo = make_repo({
        "README.md": "a monorepo\n", "frontend/package.json": "{}\n",
        **under("backend", {**project_files("app", deps=[STUB]), "settings.ini": "backend",
                            "tests/__init__.py": "", "tests/test_app.py": BACKEND_TEST}),
        **under("worker", {"requirements.txt": "idna\n", "tests/test_jobs.py": (
            "import os\n\n\ndef test_here():\n    assert os.path.basename(os.getcwd()) == "
            "'worker'\n")}),
    })
    proc, report, unit = run_unit_cli(repo)
    assert unit["status"] == "ok", unit
    reason = unit["reason"]
    assert "backend/: 3 test(s) run (2 passed, 1 failed, 0 skipped)" in reason, reason
    assert "worker/: 1 test(s) run (1 passed, 0 failed, 0 skipped)" in reason, reason
    assert "tests of backend/:" in reason and "built from the declared dependencies" in reason
    (bug,) = [f for f in report["findings"] if f["role"] == "unit_tester"]
    assert bug["title"] == "Test fails: backend/tests/test_app.py::test_bug", bug
    assert bug["file"] == "backend/tests/test_app.py" and bug["severity"] == "high"
    assert (repo / bug["file"]).is_file()
    assert proc.returncode == 1, proc.stdout + proc.stderr


def test_a_project_that_cannot_be_built_is_a_setup_line(make_repo, offline):
    repo = make_repo({
        "README.md": "x\n",
        **under("api", {**project_files("api", extra_toml=""), "tests/test_api.py": TEST})})
    text = (repo / "api" / "pyproject.toml").read_text()
    (repo / "api" / "pyproject.toml").write_text(
        text.replace('version = "1.2.3"', 'version = "1.2.3"\nrequires-python = "<3.0"')
        .replace("dependencies = []", f'dependencies = ["{STUB}==9.9"]'))
    subprocess.run(["git", "commit", "-qam", "py2"], cwd=repo, check=True)
    proc, report, unit = run_unit_cli(repo)
    assert unit["status"] == "skipped" and unit["reason"].startswith("setup: api/: "), unit
    assert "the project asks for Python <3.0" in unit["reason"], unit["reason"]
    assert not [f for f in report["findings"] if f["role"] == "unit_tester"]
    assert proc.returncode == 0, proc.stdout + proc.stderr


DB_CONFTEST = '''import pytest


@pytest.fixture(autouse=True)
def db():
    # what psycopg says when no PostgreSQL server listens
    raise ConnectionRefusedError('connection to server at "localhost" (127.0.0.1), port 5432 '
                                 "failed: Connection refused")
'''


def test_a_subproject_whose_database_is_absent_is_a_setup_line(make_repo):
    """Every test of ``api/`` errors for want of its database: its suite did
    not run here; that is said once, as setup, and is no pass and no
    finding (the template's 60 tests against PostgreSQL)."""
    repo = make_repo({
        "README.md": "x\n",
        **under("api", {"requirements.txt": "idna\n", "tests/conftest.py": DB_CONFTEST,
                        "tests/test_items.py": TEST + "\n\ndef test_b():\n    pass\n"})})
    proc, report, unit = run_unit_cli(repo)
    assert unit["status"] == "skipped", unit
    reason = unit["reason"]
    assert reason.startswith("setup: api/: no test could run here; 2 test(s) run (0 passed"), reason
    assert "2 failure(s) the environment's: the tests need PostgreSQL (port 5432)" in reason
    assert all(f["noise"] for f in report["findings"]) and report["verdict"] != "fail"
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_fix_is_rechecked_with_its_own_projects_tests(tmp_path):
    """Verification asks the unit role again about some files (recheck) and
    whether the suite can start at all (can_start): in a monorepo each
    answer comes from that project's folder, with repository paths."""
    import asyncio as aio

    from superqode_ls.qe.roles.unit import UnitTester
    from tests.role_helpers import make_ctx

    root = write(tmp_path / "mono", {
        "README.md": "x\n",
        **under("worker", {"requirements.txt": "idna\n", "settings.ini": "worker",
                           "tests/test_jobs.py": (
                               "def test_reads_its_folder():\n"
                               "    assert open('settings.ini').read() == 'elsewhere'\n")})})
    ctx = make_ctx(root)
    (found,) = aio.run(UnitTester().recheck(ctx, ["worker/tests/test_jobs.py"]))
    assert found.file == "worker/tests/test_jobs.py", found
    assert found.title == "Test fails: worker/tests/test_jobs.py::test_reads_its_folder"
    assert "'worker' == 'elsewhere'" in found.message  # it ran from worker/
    assert aio.run(UnitTester().recheck(ctx, ["README.md"])) == []
    started = aio.run(UnitTester().can_start(ctx, ["worker/tests"]))
    assert started.status in ("ok", "skipped") and not (started.reason or "").startswith("setup")


FRONTEND_CONFTEST = '''from pathlib import Path

FRONTEND = Path(__file__).resolve().parent.parent / "app" / "frontend"
if not FRONTEND.is_dir():  # (fastapi's template serves its built frontend from there)
    raise RuntimeError(f"Frontend directory '{FRONTEND}' does not exist.")
'''


def test_a_build_output_the_repository_ignores_is_a_setup_line(make_repo, tmp_path):
    """fastapi's template: the backend's conftest imports the app, which
    needs ``backend/app/frontend`` — built by the frontend's build, ignored
    by git, absent from a fresh checkout. The suite cannot start: a setup
    line naming that folder, no finding; a missing path git does not ignore
    stays the code's."""
    from superqode_ls.qe.roles._unit_env import ignored_output

    repo = make_repo({
        ".gitignore": "node_modules\nbackend/app/frontend/\n",
        **under("backend", {"requirements.txt": "idna\n", "app/__init__.py": "",
                            "tests/conftest.py": FRONTEND_CONFTEST, "tests/test_a.py": TEST})})
    proc, report, unit = run_unit_cli(repo)
    assert unit["status"] == "skipped", unit
    assert unit["reason"].startswith(
        "setup: backend/: the tests need app/frontend, which the repository ignores"), unit
    assert not [f for f in report["findings"] if f["role"] == "unit_tester" and not f["noise"]]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    backend = repo / "backend"
    said = f"RuntimeError: Frontend directory '{backend}/app/frontend' does not exist."
    assert ignored_output(said, backend).startswith("the tests need app/frontend")
    # Not ignored: a path the code should have and has not is the code's.
    assert ignored_output(said.replace("app/frontend", "app/templates"), backend) is None
    # There: whatever failed, it is not its absence.
    (backend / "app" / "frontend").mkdir()
    assert ignored_output(said, backend) is None


def test_a_slow_projects_build_goes_on_detached_while_the_others_are_tested(
        tmp_path, offline, monkeypatch):
    """Within a run's budget, one project's environment still building after
    a third of the time left is handed to the detached builder (the next
    run uses it) and the other projects' suites run meanwhile: the role
    does not spend the run's budget on it and end with nothing."""
    from superqode_ls.qe.roles import _unit_projects
    from superqode_ls.qe.roles.unit import UnitTester
    from tests.role_helpers import make_ctx, run_role

    slow = project_files("slow", deps=[STUB])
    slow["testbackend.py"] = "import time\ntime.sleep(120)\n" + slow["testbackend.py"]
    root = write(tmp_path / "mono", {
        "README.md": "x\n", **under("slow", {**slow, "tests/test_s.py": TEST}),
        **under("worker", {"requirements.txt": "idna\n", "tests/test_w.py": TEST})})
    handed: list[tuple] = []
    # The detached builder itself is pyenv_build's (tested there); here, that it is asked.
    monkeypatch.setattr(_unit_projects, "spawn_background_build",
                        lambda project, nice, sub: handed.append((project, sub)) or None)
    out = run_role(UnitTester(), make_ctx(root, deadline_in=30))
    assert handed == [(root.parent / "mono-project", "slow")], handed
    assert out.status == "ok", out.reason
    assert out.reason.startswith("slow/: setup: building its environment; worker/: 1 test(s) "
                                 "run (1 passed"), out.reason


def test_a_configured_test_command_still_runs_from_the_root(tmp_path):
    """``roles.unit_test_command`` is how the user runs the tests: the role
    runs it from the repository's root, not once per project."""
    import sys

    from superqode_ls.config import RoleOptions
    from superqode_ls.qe.roles.unit import UnitTester
    from tests.role_helpers import make_ctx, run_role

    root = write(tmp_path / "mono", {
        "README.md": "x\n",
        **under("worker", {"requirements.txt": "idna\n", "tests/test_jobs.py": (
            "import os\n\n\ndef test_here():\n    assert os.path.basename(os.getcwd()) == "
            "'worker'\n")})})
    config = Config(roles=RoleOptions(unit_test_command=[sys.executable, "-m", "pytest"]))
    out = run_role(UnitTester(), make_ctx(root, config=config))
    (found,) = out.findings
    assert found.title == "Test fails: worker/tests/test_jobs.py::test_here", found.title
    assert not out.reason.startswith("worker/"), out.reason
