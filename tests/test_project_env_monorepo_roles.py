"""Every code-running role in a monorepo, not only the unit role: the types
role, mutation and generated tests run per Python project, from that
project's folder with that project's interpreter, and their findings come
back with repository paths; loose tests at the root (outside every project)
run too. One environment per lock: a full run and then a file run of the
same repository build it once. Offline: wheels from SuperQode's own
environment (test_project_env_build's ``offline``)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

from superqode_ls.workspace.pyenv_build import _uv
from superqode_ls.workspace.pyprojects import python_projects
from tests.pyenv_helpers import STUB, project_files
from tests.role_helpers import make_ctx, run_role
from tests.test_project_env import write
from tests.test_project_env_build import installed, offline, wheels  # noqa: F401
from tests.test_project_env_monorepo import WORKSPACE, under

# api/: its own dependency (SuperQode's environment never has it: a built
# environment), its own mypy configuration, tests that read a file of its
# folder (they pass only when run from it).
API_CORE = '''import importlib.metadata

STUB = importlib.metadata.version("sq-stub-dep")  # (only api's environment has it)
SHARED = open("../shared.ini").read()  # the repository's, read from api/ (a template's ../.env)


def big(x: int) -> bool:
    return x > 10


def untyped(a):
    return a
'''
API_TEST = '''from api_pkg.core import big


def test_big():
    assert open("settings.ini").read() == "api"
    assert big(20) and not big(1)
'''
# worker/: idna (SuperQode's own environment has it, api's has not), no mypy
# configuration.
WORKER_JOBS = "import idna\n\n\ndef untyped(a):\n    return a\n\n\ndef double(x: int) -> int:\n    return x * 2\n"
WORKER_TEST = ("import os\n\nfrom worker_pkg.jobs import untyped\n\n\ndef test_here():\n"
               "    assert os.path.basename(os.getcwd()) == 'worker' and untyped(1) == 1\n")


def monorepo(root: Path) -> Path:
    return write(root, {
        "README.md": "two projects\n", "shared.ini": "shared",
        **under("api", {**project_files("api_pkg", deps=[STUB], extra_toml=(
            "\n[tool.mypy]\ndisallow_untyped_defs = true\n")),
            "api_pkg/core.py": API_CORE, "settings.ini": "api", "tests/test_core.py": API_TEST}),
        **under("worker", {"requirements.txt": "idna\n", "worker_pkg/__init__.py": "",
                           "worker_pkg/jobs.py": WORKER_JOBS, "tests/test_jobs.py": WORKER_TEST}),
    })


def assert_scratch_is_the_repositorys(root: Path) -> None:
    """Scratch copies go to the session's private folder, the repository's
    (the one the barrier leaves writable), never to one of a project's own
    (a second, unwritable session folder under working/)."""
    working = Path(os.environ["SUPERQODE_HOME"]) / "working"
    owners = sorted(p.name for p in working.iterdir()) if working.is_dir() else []
    assert len(owners) == 1 and owners[0].startswith(f"{root.name}-project-"), owners


def trusted_ctx(root: Path, **kw):
    return dataclasses.replace(make_ctx(root, **kw), trusted=True)


def test_the_types_role_checks_each_project_from_its_folder(tmp_path, offline):
    """mypy runs in ``api/`` (its ``[tool.mypy]`` applies: the untyped def
    is reported there, not in ``worker/``, which declares no such thing),
    resolving imports in api's own built environment; paths are the
    repository's. Before, mypy ran from the root, found no package there and
    checked nothing."""
    from superqode_ls.qe.roles.types import TypeTester

    root = monorepo(tmp_path / "mono")
    out = run_role(TypeTester(), trusted_ctx(root))
    assert out.status == "ok", out.reason
    untyped = sorted(f.file for f in out.findings if f.rule_id == "no-untyped-def")
    assert untyped == ["api/api_pkg/core.py"], [(f.file, f.rule_id) for f in out.findings]
    assert "api/: imports resolved in" in out.reason and "/envs/" in out.reason, out.reason
    # The verifier's type check asks about files: the same, per project.
    checked = asyncio_run(TypeTester().check_files(trusted_ctx(root),
                                                   ["api/api_pkg/core.py", "worker/worker_pkg/jobs.py"]))
    assert sorted(f.file for f in checked.findings if f.rule_id == "no-untyped-def") == [
        "api/api_pkg/core.py"]
    # Untrusted: no interpreter is looked for (finding one runs the project's programs).
    plain = run_role(TypeTester(), make_ctx(root))
    assert "imports resolved in" not in (plain.reason or ""), plain.reason


def asyncio_run(coro):
    import asyncio

    return asyncio.run(coro)


def test_mutation_runs_each_projects_tests_from_its_folder(tmp_path, offline):
    """api's tests pass only from ``api/`` with its interpreter: from there
    the boundary mutant of ``big`` survives them and is reported at
    ``api/api_pkg/core.py``. Before, mutation ran every test from the root,
    where api's test fails: no passing test covered a line, nothing was
    mutated. api's code reads ``../shared.ini`` (as the template's settings
    read ``../.env``): the copies keep the files above the project."""
    from superqode_ls.qe.roles.mutation import MutationTester

    root = monorepo(tmp_path / "mono")
    out = run_role(MutationTester(), trusted_ctx(root))
    assert out.status == "ok", out.reason
    assert_scratch_is_the_repositorys(root)
    survived = [f for f in out.findings if f.file == "api/api_pkg/core.py"]
    assert survived and all(f.range.start_line == 8 for f in survived), [
        (f.file, f.range, f.title) for f in out.findings]
    assert out.reason.startswith("api/: "), out.reason
    assert "worker/: " in out.reason, out.reason
    logs = root.parent / f"{root.name}-project" / ".superqode" / "qe-artifacts" / "logs"
    # Each project's log is its own (before, worker's run overwrote api's).
    assert "api_pkg/core.py" in next(logs.glob("*-mutation-api.log")).read_text()
    assert next(logs.glob("*-mutation-worker.log")).is_file()


def test_generated_tests_run_per_project(tmp_path, offline):
    """The ghostwriter imports each project's modules with that project's
    interpreter, from its folder: tests are generated for both. Before,
    every module was imported with the first project's (api's), where
    worker's, which needs idna, cannot be imported."""
    from superqode_ls.qe.roles.testgen import TestGenerator

    root = monorepo(tmp_path / "mono")
    out = run_role(TestGenerator(), trusted_ctx(root))
    assert out.status == "ok", out.reason
    assert_scratch_is_the_repositorys(root)
    parts = [p for p in out.reason.split("; ") if "generated" in p]
    assert [p.split(": ", 1)[0] for p in parts] == ["api/", "worker/"], out.reason
    assert not [p for p in parts if p.split(": ", 1)[1].startswith("0 test(s)")], out.reason
    artifacts = root.parent / f"{root.name}-project" / ".superqode" / "qe-artifacts"
    assert {p.name.rsplit("-", 1)[-1] for p in (artifacts / "logs").glob("*test-generator-*.log")} == {
        "api.log", "worker.log"}
    kept = [p.name for p in (artifacts / "generated-tests").rglob("*.py")]
    assert any(n.startswith("test_api_") for n in kept) and any(n.startswith("test_worker_") for n in kept), kept


LOOSE_TEST = ("import os\n\n\ndef test_from_the_root():\n"
              "    assert os.path.isdir('worker') and os.path.isdir('tests')\n\n\n"
              "def test_bug():\n    assert 1 == 2\n")


def test_loose_root_tests_run_beside_the_projects(tmp_path):
    """Tests of the whole repository at its root, in no project, run from
    the root; each project's tests still run from its own folder only (the
    root's run does not collect them again)."""
    from superqode_ls.qe.roles.unit import UnitTester
    from superqode_ls.workspace.pyprojects import loose_tests

    root = write(tmp_path / "mono", {
        "README.md": "x\n", "tests/test_e2e.py": LOOSE_TEST,
        **under("worker", {"requirements.txt": "idna\n", "worker_pkg/__init__.py": "",
                           "worker_pkg/jobs.py": WORKER_JOBS, "tests/test_jobs.py": WORKER_TEST}),
    })
    assert python_projects(root) == ["worker"]
    assert loose_tests(root, ["worker"]) == ["tests/test_e2e.py"]
    assert loose_tests(root, [""]) == []
    out = run_role(UnitTester(), trusted_ctx(root))
    assert out.status == "ok", out.reason
    assert "./: 2 test(s) run (1 passed, 1 failed" in out.reason, out.reason
    assert "worker/: 1 test(s) run (1 passed" in out.reason, out.reason
    (bug,) = out.findings
    assert bug.file == "tests/test_e2e.py" and bug.title == "Test fails: tests/test_e2e.py::test_bug"
    # A run of one of worker's files leaves the loose tests out; one of a
    # loose file runs them.
    only = run_role(UnitTester(), trusted_ctx(root, files=["worker/worker_pkg/jobs.py"]))
    assert only.reason.startswith("worker/: 1 test(s) run"), only.reason
    loose = run_role(UnitTester(), trusted_ctx(root, files=["tests/test_e2e.py"]))
    assert loose.reason.startswith("./: 2 test(s) run"), loose.reason
    found = asyncio_run(UnitTester().recheck(trusted_ctx(root), ["tests/test_e2e.py"]))
    assert [f.file for f in found] == ["tests/test_e2e.py"]


def test_a_full_run_then_a_file_run_build_one_environment(make_repo, tmp_path, offline):
    """A uv workspace's member: the full run builds its environment from
    ``uv.lock``; the file run that follows (its fixes verified against the
    member's tests) reuses it: one build, one environment."""
    uv = _uv()
    files = {
        "pyproject.toml": WORKSPACE.replace('"typer"', '"idna"')
        + "\n[tool.uv]\nenvironments = [\"sys_platform == 'linux'\"]\n",
        **under("backend", {**project_files("app", deps=[STUB], extra_toml=(
            '[dependency-groups]\ndev = ["pytest"]\n')),
            "app/mod.py": "import os\n\n\ndef f(x):\n    return x + 1\n",
            "tests/test_mod.py": "from app.mod import f\n\n\ndef test_f():\n    assert f(1) == 2\n"}),
    }
    scratch = write(tmp_path / "lockit", files)
    subprocess.run([uv, "lock", "-q", "--offline"], cwd=scratch, check=True, env={
        **os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache")})
    repo = make_repo({**files, "uv.lock": (scratch / "uv.lock").read_text()})
    home = Path(os.environ["SUPERQODE_HOME"])
    seen: list[tuple[list[str], dict[str, int]]] = []
    for target in (repo, repo / "backend" / "app" / "mod.py"):
        proc = subprocess.run([sys.executable, "-m", "superqode_ls", "run", str(target), "--jsonl",
                               "--timeout", "300"], capture_output=True, text=True, timeout=400,
                              check=False)
        assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]
        said = [str(e.get("data", {}).get("message")) for e in map(json.loads, (
            line for line in proc.stdout.splitlines() if line.startswith("{")))
            if e.get("type") == "progress"]
        # Each environment by its manifest, written when it is built.
        seen.append((said, {p.stem: p.stat().st_mtime_ns
                            for p in (home / "env-manifests").glob("*.json")}))
    (_, first), (said, second) = seen
    assert len(first) == 1, first
    assert second == first, (first, second, said)  # the same one, not built again
    assert any(m.startswith("environment: reusing") for m in said), said
    env = home / "envs" / next(iter(first))
    assert {"app", "pytest"} <= installed(str(env / "bin" / "python"))


def test_one_environment_whichever_way_its_python_is_spelled(tmp_path, offline, monkeypatch):
    """The same interpreter reached through a link (SuperQode installed
    twice, an editor's launcher, pyenv's path beside /usr/bin) is one
    environment for one lock: the second resolution reuses the first's
    build. Before, the spelling was in the key: a second build."""
    from superqode_ls.config import Config
    from superqode_ls.workspace.pyenv_build import resolve_python

    root = write(tmp_path / "proj", {**project_files("app", deps=[STUB]),
                                     "tests/test_a.py": "def test_a():\n    pass\n"})
    said: list[str] = []

    def resolve():
        return asyncio_run(resolve_python(root, root, Config(), environ={"PATH": ""},
                                          emit=lambda t, **d: said.append(str(d.get("message")))))

    first = resolve()
    assert first.source == "built", first
    real = getattr(sys, "_base_executable", None) or sys.executable
    link = tmp_path / "bin" / "python3"
    link.parent.mkdir()
    link.symlink_to(real)
    monkeypatch.setattr(sys, "_base_executable", str(link))
    second = resolve()
    assert second.python == first.python, (first, second)
    assert len([m for m in said if m.startswith("environment: building")]) == 1, said
    assert said[-1].startswith("environment: reusing"), said


def test_a_scratch_copy_keeps_a_build_folder_below_the_top(tmp_path):
    """Mutation's and testgen's copies leave out build outputs at the
    project's top (setuptools' build/, dist/) but keep a ``build`` folder of
    the project's own files deeper down (fastapi's template reads
    app/email-templates/build/*.html: without it, a generated test's
    FileNotFoundError was reported as a crash of the code)."""
    from superqode_ls.qe.roles import _scratch

    src = write(tmp_path / "api", {"build/lib/x.py": "", "dist/x.whl": "",
                                   "app/email-templates/build/test_email.html": "<p>",
                                   "app/__pycache__/x.pyc": "", "app/main.py": ""})
    copy = _scratch.copy_within(src, "", tmp_path / "copy")
    assert (copy / "app/email-templates/build/test_email.html").is_file()
    assert (copy / "app/main.py").is_file()
    assert not (copy / "build").exists() and not (copy / "dist").exists()
    assert not (copy / "app/__pycache__").exists()
