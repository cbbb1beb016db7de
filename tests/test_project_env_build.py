"""Building a project's environment the way its developers do (pyenv_plan,
pyenv_build): each kind of declaration, the project installed so its
metadata exists while its code comes from the sandbox, the cache by key,
nothing built without tests, and a failed build as a setup line. Offline:
wheels come from SuperQode's own installed distributions and the projects
carry their own build backend."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.config import Config
from superqode_ls.qe.roles.unit import UnitTester
from superqode_ls.workspace import envcache
from superqode_ls.workspace.pyenv_build import resolve_python
from superqode_ls.workspace.pyenv_interp import pick_interpreter
from superqode_ls.workspace.pyenv_plan import make_plan
from superqode_ls.workspace.pyisolate import isolated_env, source_roots, write_isolation
from tests.pyenv_helpers import STUB, project_files, wheel_of, wheelhouse
from tests.role_helpers import make_ctx, run_role
from tests.test_project_env import make_venv, write

from .conftest import run_git

VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    dest = wheelhouse(tmp_path_factory.mktemp("wheels"))
    wheel_of("idna", dest)
    wheel_of("certifi", dest)
    return dest


@pytest.fixture
def offline(wheels, monkeypatch) -> Path:
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("UV_FIND_LINKS", str(wheels))
    return wheels


def resolve(root: Path, progress: list[str] | None = None, **kw):
    def emit(type, **data):
        if progress is not None:
            progress.append(str(data.get("message")))

    return asyncio.run(resolve_python(root, root, Config(), environ={"PATH": ""}, emit=emit, **kw))


def run_in(py: str, sandbox: Path, user: Path, code: str) -> str:
    """``code`` under the env's interpreter with the sandbox first (as roles run it)."""
    iso = write_isolation(sandbox.parent / "iso")
    env = isolated_env({"PATH": "/usr/bin:/bin"}, iso, source_roots(sandbox), [user])
    return subprocess.run([py, "-c", code], cwd=sandbox, env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


def site_packages(py: str) -> Path:
    return next((Path(py).parent.parent / "lib").glob("python3*/site-packages"))


def installed(py: str) -> set[str]:
    return {p.name.split("-")[0].lower() for p in site_packages(py).glob("*.dist-info")}


# -- what the project declares ------------------------------------------------

def test_plan_kinds_follow_the_developers_tool(tmp_path):
    root = write(tmp_path / "a", {**project_files("lib", extras={"test": ["idna"], "docs": ["x"]}),
                                  "uv.lock": "version = 1\n", "requirements.txt": "idna\n",
                                  ".python-version": "3.12\n"})
    plan = make_plan(root)
    assert plan.kind == "uv.lock" and plan.extras == ("test",) and plan.python_request == "3.12"
    cmd = plan.commands("uv", "/env/bin/python", root)[0]
    assert cmd[:4] == ["uv", "sync", "-q", "--frozen"] and ["--extra", "test"] == cmd[-2:]
    (root / "uv.lock").unlink()
    plan = make_plan(root)
    assert plan.kind == "requirements" and plan.requirement_files == ("requirements.txt",)
    # The project itself is installed too (with its test extra)...
    assert plan.commands("uv", "/p", root)[0][-1] == ".[test]"
    # ...unless a requirements file already installs it (``-e .[full]``).
    write(root, {"requirements.txt": "# Optionals\n-e .[full]\n\npytest==8\n"})
    assert plan.commands("uv", "/p", root)[0][-1] == str(root / "requirements.txt")
    # Without a lock: releases up to the last commit only.
    cmd = plan.commands("uv", "/p", root, "2025-08-25T07:06:35Z")[0]
    assert cmd[cmd.index("--exclude-newer") + 1] == "2025-08-25T07:06:35Z"
    # Groups: the test ones (dev only without them); requires-python without .python-version.
    write(tmp_path / "b", {
        "pyproject.toml": '[project]\nname = "b"\nversion = "1"\nrequires-python = ">=3.9"\n'
                          '[dependency-groups]\ndev = ["ruff"]\ntests = ["pytest"]\ndocs = ["x"]\n'})
    plan = make_plan(tmp_path / "b")
    assert (plan.kind, plan.groups, plan.python_request) == ("pyproject", ("tests",), ">=3.9")
    assert make_plan(write(tmp_path / "c", {"app.py": "x = 1\n"})) is None


def test_requires_python_picks_a_matching_interpreter_or_says_so():
    base = getattr(sys, "_base_executable", None) or sys.executable
    assert pick_interpreter(f">={VERSION}", None) == (base, VERSION, None)
    assert pick_interpreter(VERSION, None) == (base, VERSION, None)
    _python, version, note = pick_interpreter("<3.0", None)
    assert version == VERSION and "asks for Python <3.0" in note and "none is installed" in note


def test_project_is_installed_for_its_metadata_and_imported_from_the_sandbox(tmp_path, offline):
    root = write(tmp_path / "p", {**project_files("mylib", deps=[STUB], extras={"test": ["idna"]}),
                                  "tests/test_a.py": "def test_a():\n    pass\n"})
    progress: list[str] = []
    py = resolve(root, progress)
    assert py.source == "built" and py.has_pytest and py.setup is None, py
    assert {"mylib", "idna", "pytest"} <= installed(py.python)
    user = tmp_path / "user"
    user.mkdir()
    got = run_in(py.python, root, user,
                 "import importlib.metadata as m, mylib; print(m.version('mylib'), mylib.__file__)")
    version, where = got.split()
    assert version == "1.2.3" and where == str(root / "mylib" / "__init__.py")
    # The same declarations again: the cached environment, nothing built.
    progress.clear()
    again = resolve(root, progress)
    assert again.python == py.python
    assert any("(cached" in m for m in progress) and not any("building" in m for m in progress)
    # A changed declaration is another key, another environment.
    write(root, {"pyproject.toml": (root / "pyproject.toml").read_text().replace("1.2.3", "1.2.4")})
    assert resolve(root).python != py.python


def test_requirements_with_editable_extras_and_includes(tmp_path, offline):
    root = write(tmp_path / "p", {
        **project_files("reqlib", extras={"full": ["idna"]}),
        "requirements.txt": "# Optionals\n-e .[full]\n-r requirements/base.txt\n-c constraints.txt\n",
        "requirements/base.txt": f"certifi\n{STUB}\n",
        "constraints.txt": "idna>=1\n",
        "tests/test_a.py": "def test_a():\n    pass\n",
    })
    plan = make_plan(root)
    assert {"constraints.txt", "requirements/base.txt"} <= set(plan.inputs)
    py = resolve(root)
    assert py.source == "built", py
    assert {"reqlib", "idna", "certifi", "pytest"} <= installed(py.python)
    # ``-e .`` was the sandbox's copy, installed non-editable: nothing points
    # at a build folder or the user's checkout.
    assert not list(site_packages(py.python).glob("__editable__*"))
    assert run_in(py.python, root, tmp_path, "import reqlib; print(reqlib.__file__)").startswith(str(root))


def test_dependency_groups(tmp_path, offline):
    root = write(tmp_path / "p", {
        **project_files("grouped", deps=[STUB],
                       extra_toml='[dependency-groups]\ntest = ["certifi", "pytest"]\n'),
        "tests/test_a.py": "def test_a():\n    pass\n",
    })
    py = resolve(root)
    assert py.source == "built", py
    assert {"grouped", "certifi", "pytest"} <= installed(py.python)


def test_uv_lock_is_synced_frozen(tmp_path, offline):
    root = write(tmp_path / "p", {
        **project_files("locked", extra_toml='[dependency-groups]\ntests = ["pytest", "idna"]\n'),
        "tests/test_a.py": "def test_a():\n    pass\n",
    })
    lock = subprocess.run([str(Path(sys.executable).with_name("uv")), "lock", "-q"], cwd=root,
                          capture_output=True, text=True, check=False)
    assert lock.returncode == 0, lock.stderr
    assert make_plan(root).kind == "uv.lock"
    py = resolve(root)
    assert py.source == "built", py
    assert {"locked", "idna", "pytest"} <= installed(py.python)


# -- when nothing is built, and when it fails ------------------------------------

def test_no_build_when_no_role_runs_the_projects_code(tmp_path, offline):
    root = write(tmp_path / "p", project_files("notests", deps=["no-such-dist-xyz"]))
    py = resolve(root, build=False)
    assert py.own and "none built" in py.note
    assert not envcache.envs_dir().exists()


def test_a_project_without_tests_builds_nothing_in_a_run(make_repo, offline):
    repo = make_repo({**project_files("notests", deps=["no-such-dist-xyz"]), "app.py": "x = 1\n"})
    proc = subprocess.run([sys.executable, "-m", "superqode_ls", "run", str(repo), "-r",
                           "unit_tester", "--timeout", "120"], capture_output=True, text=True, check=False,
                          timeout=300)
    assert "no tests" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert not envcache.envs_dir().exists()


def test_a_failed_build_is_a_setup_line_not_a_finding(make_repo, offline):
    repo = make_repo({**project_files("broken", deps=["no-such-dist-xyz>=1"]),
                      "tests/test_a.py": "import broken\n\n\ndef test_a():\n    pass\n"})
    py = resolve(repo)
    assert py.own and py.setup and "no-such-dist-xyz" in py.setup
    assert not list(envcache.envs_dir().glob("*/bin"))  # the half-built one is gone
    ctx = make_ctx(repo, repo)
    ctx.python = py
    out = run_role(UnitTester(), ctx)
    assert out.status == "skipped" and out.reason.startswith("setup: could not build")
    assert out.findings == []
    # Through the CLI: the report's verdict is not a failure.
    proc = subprocess.run([sys.executable, "-m", "superqode_ls", "run", str(repo), "-r",
                           "unit_tester", "--timeout", "200", "--jsonl"], capture_output=True,
                          text=True, timeout=300, check=False)
    report = json.loads(max((repo / ".superqode" / "qe-artifacts").glob("qr/qr-*.json"))
                        .read_text())
    assert report["verdict"] != "fail" and report["findings"] == [], proc.stderr
    unit = next(r for r in report["roles"] if r["role"] == "unit_tester")
    assert unit["status"] == "skipped" and unit["reason"].startswith("setup:")


# -- exec imports the sandbox's code -----------------------------------------------

def test_exec_with_an_editable_venv_imports_the_sandbox(make_repo):
    repo = make_repo({"src/mypkg/__init__.py": 'VALUE = "user"\n'})
    py = make_venv(repo / ".venv", pytest_too=False)
    site = site_packages(str(py))
    (site / "mypkg-src.pth").write_text(str(repo / "src") + "\n")  # an editable install
    (repo / ".gitignore").write_text(".venv/\n")
    run_git(repo, "add", ".gitignore")
    run_git(repo, "commit", "-qm", "ignore")
    proc = subprocess.run([sys.executable, "-m", "superqode_ls", "exec", str(repo), "--", str(py),
                           "-c", "import mypkg; print(mypkg.__file__)"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    sandbox = next(ln.split(": ", 1)[1] for ln in proc.stderr.splitlines() if ln.startswith("sandbox: "))
    assert proc.stdout.strip() == str(Path(sandbox) / "src" / "mypkg" / "__init__.py")


def test_own_interpreter_gets_the_projects_metadata_without_a_build(tmp_path):
    # Everything declared is in SuperQode's environment and the version is
    # static: no build, the metadata is lent (after site-packages).
    root = write(tmp_path / "p", {
        "pyproject.toml": '[project]\nname = "meta-lib"\nversion = "4.5.6"\ndependencies = ["pyyaml"]\n',
        "meta_lib/__init__.py": "",
        "tests/test_v.py": ("import importlib.metadata as m\n\n\ndef test_version():\n"
                            "    assert m.version('meta-lib') == '4.5.6'\n"),
    })
    out = run_role(UnitTester(), make_ctx(root))
    assert out.status == "ok" and out.findings == [], out.reason
    assert "1 test(s) run" in out.reason and "SuperQode's own Python" in out.reason
    assert not envcache.envs_dir().exists()


# -- what this machine cannot build ----------------------------------------------

BROKEN_BACKEND = '''
def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise SystemExit("mysql_config not found: the system libraries are missing")
'''


def broken_sdist(dest: Path, name: str = "sq-needs-syslibs", version: str = "1.0") -> Path:
    """An sdist whose build fails, as mysqlclient's does without MySQL's headers."""
    import io
    import tarfile

    base = f"{name.replace('-', '_')}-{version}"
    files = {"pyproject.toml": ('[build-system]\nrequires = []\nbuild-backend = "brokenbackend"\n'
                                f'backend-path = ["."]\n[project]\nname = "{name}"\n'
                                f'version = "{version}"\n'),
             "brokenbackend.py": BROKEN_BACKEND,
             "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"}
    out = dest / f"{base}.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def test_a_package_that_cannot_be_built_here_is_left_out_and_said(make_repo, offline):
    broken_sdist(offline)
    repo = make_repo({**project_files("app", deps=[STUB]),
                      "requirements.txt": "sq-needs-syslibs==1.0\nidna\n",
                      "tests/test_a.py": "import app\n\n\ndef test_a():\n    assert app\n",
                      "tests/test_driver.py": "import sq_needs_syslibs\n\n\ndef test_b():\n"
                                              "    assert sq_needs_syslibs\n"})
    py = resolve(repo)
    assert py.source == "built" and py.setup is None, py
    assert "left out sq-needs-syslibs: could not be built here" in (py.note or ""), py.note
    assert "idna" in installed(py.python) and "sq_needs_syslibs" not in installed(py.python)
    # Its neighbour's tests run; the module needing it is the environment's.
    ctx = make_ctx(repo, repo)
    ctx.python = py
    out = run_role(UnitTester(), ctx)
    assert out.status == "ok", out.reason
    assert out.reason.startswith(
        "1 test(s) run (1 passed, 0 failed, 0 skipped, 1 test module(s) not imported); "
        "1 failure(s) the environment's: package 'sq_needs_syslibs' is not in the test "
        "environment, which was made without it though the project declares it "
        "(sq-needs-syslibs, in requirements.txt)"), out.reason
    assert [(f.severity.value, f.file) for f in out.findings] == [("info", "tests/test_driver.py")]
    # The cached environment says it again.
    assert "left out sq-needs-syslibs" in (resolve(repo).note or "")


def test_a_project_whose_own_build_fails_gets_its_dependencies_and_runs_from_the_sandbox(
        make_repo, offline):
    # keyring's build backend downloads its licence text while building:
    # offline, the project itself cannot be built. Its declared dependencies
    # (and its test extra's) are installed without it, its metadata is lent,
    # and its tests run its code from the sandbox instead of failing to import
    # what it needs.
    files = project_files("selfbroken", version="2.5.0", deps=[STUB], extras={"test": ["idna"]})
    files["testbackend.py"] = BROKEN_BACKEND
    files["tests/test_a.py"] = (
        "import importlib.metadata\n\nimport idna\nimport selfbroken\n\n\n"
        "def test_a():\n    assert selfbroken.WHERE == 'sandbox' and idna\n"
        "    assert importlib.metadata.version('selfbroken') == '2.5.0'\n")
    repo = make_repo(files)
    py = resolve(repo)
    assert py.source == "built" and py.setup is None, py
    assert "the project itself could not be built here" in (py.note or ""), py.note
    assert "system libraries" not in (py.note or "")
    assert {"idna", STUB.replace("-", "_")} <= installed(py.python), installed(py.python)
    assert "selfbroken" not in installed(py.python)
    ctx = make_ctx(repo, repo)
    ctx.python = py
    out = run_role(UnitTester(), ctx)
    assert out.status == "ok" and out.findings == [], out.reason
    assert out.reason.startswith("1 test(s) run (1 passed"), out.reason
    # The cached environment says it again and lends the metadata again.
    again = resolve(repo)
    assert "the project itself could not be built here" in (again.note or "")
    assert again.metadata == py.metadata and py.metadata


def test_a_requirements_file_uv_cannot_read_is_left_out_and_said(make_repo, offline):
    # kombu's requirements/dev.txt lists GitHub zipball URLs (no file
    # extension): uv refuses the whole install; the other files stand.
    repo = make_repo({**project_files("app", deps=[STUB]),
                      "requirements/test.txt": "idna\n",
                      "requirements/dev.txt": "https://github.com/celery/py-amqp/zipball/main\n",
                      "tests/test_a.py": "import idna\n\n\ndef test_a():\n    assert idna\n"})
    py = resolve(repo)
    assert py.source == "built" and py.setup is None, py
    assert "left out requirements/dev.txt: uv cannot read it" in (py.note or ""), py.note
    assert "idna" in installed(py.python)


def test_the_python_the_resolver_asks_for_is_found_when_installed():
    from superqode_ls.workspace.pyenv_build import _uv
    from superqode_ls.workspace.pyenv_interp import python_for as _python_for

    said = ("Because the current Python version (3.0.1) does not satisfy Python>={v} and you "
            "require django==6.1, we can conclude that your requirements are unsatisfiable.")
    base = getattr(sys, "_base_executable", None) or sys.executable
    assert _python_for(said.format(v=VERSION), _uv(), "/no/such/python3.0") == base
    assert _python_for(said.format(v=VERSION), _uv(), base) is None  # the one it had
    assert _python_for(said.format(v="9.9"), _uv(), "/no/such/python3.0") is None  # none here
    assert _python_for("No solution found: no-such-dist-xyz", _uv(), base) is None


def test_pyenvs_installed_versions_are_searched_not_its_shims(tmp_path, monkeypatch):
    """A pyenv shim of a version not selected fails, and uv's search stops
    there: the versions' own folders are searched instead; other tools'
    folders stay as they are."""
    from superqode_ls.workspace.pyenv_interp import _search_env

    root = tmp_path / "pyenv"
    for v in ("3.12.1", "3.13.0"):
        (root / "versions" / v / "bin").mkdir(parents=True)
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.setenv("PATH", f"{root}/shims:/opt/asdf/shims:/usr/bin")
    assert _search_env()["PATH"].split(":") == [
        "/opt/asdf/shims", "/usr/bin", f"{root}/versions/3.12.1/bin", f"{root}/versions/3.13.0/bin"]
