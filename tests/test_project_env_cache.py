"""Red team: the shared cache of built environments cannot be poisoned.

A session's code must not replace a cached environment's interpreter or plant
a ``.pth`` there (the next run of another project would execute it): the
write fails behind the kernel barrier. A file planted from outside the
session (a lower level giving way) is caught by the manifest before anything
in the environment runs: the environment is discarded and rebuilt, with one
line, and the planted file never executes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.config import Config, superqode_home
from superqode_ls.workspace import envcache, landlock
from superqode_ls.workspace.pyenv_build import _ready, resolve_python
from tests.pyenv_helpers import STUB, project_files, wheelhouse


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    return wheelhouse(tmp_path_factory.mktemp("wheels"))


@pytest.fixture
def built(make_repo, wheels, monkeypatch):
    """A project and its environment, built offline into the cache."""
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("UV_FIND_LINKS", str(wheels))
    repo = make_repo({**project_files("victim", deps=[STUB]), "tests/test_a.py": "def test_a():\n    pass\n"})
    py = resolve(repo)
    assert py.source == "built", py
    return repo, Path(py.python)


def resolve(root: Path, progress: list[str] | None = None):
    def emit(type, **data):
        if progress is not None:
            progress.append(str(data.get("message")))

    return asyncio.run(resolve_python(root, root, Config(), environ={"PATH": ""}, emit=emit))


def site_packages(python: Path) -> Path:
    return next((python.parent.parent / "lib").glob("python3*/site-packages"))


@pytest.mark.skipif(landlock.abi() is None, reason="this kernel has no Landlock")
def test_a_session_cannot_write_the_environment_cache(built, tmp_path):
    repo, python = built
    env_dir = python.parent.parent
    targets = {
        "replace python": f"open('x', 'w').write('#!/bin/sh\\n'); os.replace('x', {str(python)!r})",
        "write pyvenv.cfg": f"open({str(env_dir / 'pyvenv.cfg')!r}, 'a').write('x')",
        "unlink python": f"os.unlink({str(python)!r})",
        "plant pth": f"open({str(site_packages(python) / 'evil.pth')!r}, 'w').write('import os')",
        "plant sitecustomize": f"open({str(site_packages(python) / 'sitecustomize.py')!r}, 'w')",
        "new env": f"os.mkdir({str(envcache.envs_dir() / 'planted')!r})",
        "manifest": f"open({str(envcache.manifest_path(env_dir))!r}, 'w')",
        "tool shim": f"os.makedirs({str(superqode_home() / 'tools' / 'evil')!r})",
        "uv cache": f"os.makedirs({str(envcache.package_cache(env_dir) / 'planted')!r})",
    }
    script = "import errno, os\nout = []\n"
    for name, stmt in targets.items():
        script += (f"try:\n    {stmt}\n    out.append({name!r} + ': ok')\n"
                   f"except OSError as e:\n    out.append({name!r} + ': ' + errno.errorcode[e.errno])\n")
    script += "print('\\n'.join(out))\n"
    proc = subprocess.run([sys.executable, "-m", "superqode_ls", "exec", str(repo), "--",
                           sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == len(targets), proc.stderr
    # EROFS: the namespace layer's read-only bind answers first; EACCES/EXDEV: Landlock.
    assert all(ln.endswith(("EACCES", "EPERM", "EXDEV", "EROFS")) for ln in lines), lines
    # ...and the environment is still the one that was built.
    assert envcache.verify(env_dir) is None


def test_an_interpreter_replaced_from_outside_is_never_run(built, tmp_path):
    repo, python = built
    marker = tmp_path / "ran"
    real = os.path.realpath(python)
    python.unlink()
    python.write_text(f"#!/bin/sh\ntouch {marker}\nexec {real} \"$@\"\n")
    python.chmod(0o755)
    progress: list[str] = []
    again = resolve(repo, progress)
    assert not marker.exists()
    assert any(": discarded, bin/python was changed" in m for m in progress), progress
    assert again.source == "built" and Path(again.python).is_symlink()  # rebuilt
    assert not marker.exists()


@pytest.mark.parametrize("planted", ["zz-evil.pth", "sitecustomize.py"])
def test_a_startup_file_planted_from_outside_is_never_run(built, tmp_path, planted):
    _, python = built
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('planted')"
    text = f"import os; {code}\n" if planted.endswith(".pth") else f"{code}\n"
    (site_packages(python) / planted).write_text(text)
    progress: list[str] = []
    # What a session does before using a cached environment (build_env):
    # checked, found changed, discarded, unrun.
    assert _ready(python.parent.parent, lambda t, **d: progress.append(d["message"])) is None
    assert any(f"{planted} was added" in m for m in progress), progress
    assert not python.parent.parent.exists() and not marker.exists()


def test_a_file_changed_inside_the_environment_is_caught(built):
    _, python = built
    victim = next(site_packages(python).glob("_pytest/main.py"))
    victim.write_text(victim.read_text() + "\n# changed\n")
    assert envcache.verify(python.parent.parent).startswith("its files changed")
    envcache.manifest_path(python.parent.parent).unlink()
    assert envcache.verify(python.parent.parent) == "it has no manifest"


@pytest.mark.skipif(landlock.abi() is None, reason="this kernel has no Landlock")
def test_a_build_cannot_plant_in_the_package_cache_of_another_key(built, tmp_path):
    """uv links what its cache holds into environments as it is (unpacked
    wheels, built sdists): a build of another project (another key) runs that
    project's code with its own cache writable only, so it cannot change a
    file that this environment's rebuild would install. With one cache
    shared by every key (as before), the same build could."""
    _, python = built
    env_a = python.parent.parent
    cache_a = envcache.package_cache(env_a)
    assert cache_a.parent == superqode_home() / "uv-cache" and cache_a.name == env_a.name
    unpacked = sorted(p for p in cache_a.rglob("*.py") if p.is_file() and not p.is_symlink())
    assert unpacked, "the build should have left the stub's unpacked wheel in its cache"
    victim = unpacked[0]
    before = victim.read_bytes()
    env_b = envcache.envs_dir() / "0123456789abcdef"
    scratch = envcache.scratch()
    plant = [sys.executable, "-c", f"open({str(victim)!r}, 'a').write('import os  # PWNED')"]

    def build_b(cache: Path):
        return asyncio.run(envcache.run_confined(plant, scratch, dict(os.environ),
                                                 [env_b, scratch, cache], timeout=60))

    res = build_b(envcache.package_cache(env_b))
    assert res.returncode != 0, res.stdout
    assert victim.read_bytes() == before
    # Live: the shared layout would have let it through.
    assert build_b(cache_a).returncode == 0
    assert b"PWNED" in victim.read_bytes()


def test_another_project_with_the_same_declarations_gets_its_own_environment(built, make_repo):
    """A build installs the project itself (and runs its backend): with the
    key made of the declarations alone, a hostile project that copies a
    victim's ``pyproject.toml`` (a fork) builds *the* environment the victim's
    sessions then run, its own code installed in it. Keyed by project too,
    each has its own; the victim's environment holds none of the other's code."""
    victim, python = built
    files = {**project_files("victim", deps=[STUB]), "tests/test_a.py": "def test_a():\n    pass\n"}
    files["victim/__init__.py"] = 'WHERE = "EVIL fork"\n'
    fork = make_repo(files, name="fork")
    assert (fork / "pyproject.toml").read_bytes() == (victim / "pyproject.toml").read_bytes()
    other = resolve(fork)
    assert other.source == "built", other
    assert Path(other.python).parent.parent != python.parent.parent
    installed = site_packages(python) / "victim" / "__init__.py"
    assert "EVIL" not in installed.read_text()
    assert "EVIL" in (site_packages(Path(other.python)) / "victim" / "__init__.py").read_text()
    again = resolve(victim)
    assert Path(again.python) == python and "EVIL" not in installed.read_text()
