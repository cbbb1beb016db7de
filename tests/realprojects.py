"""Real projects from PyPI sdists for the end-to-end tests, prepared once.

Everything is cached under ``$SUPERQODE_TEST_CACHE`` (default: the repo's
``build/superqode-tests/``, git-ignored), never the test's temporary HOME, so a
second run downloads and installs nothing:

    sdists/            the downloaded sdists (pip download --no-binary)
    projects/<name>/   each project unpacked, committed to a git repository,
                       with its own .venv where the test needs one
    envs/              environments SuperQode builds for projects without one,
    env-manifests/     and their manifests (linked into the test's $SUPERQODE_HOME)

A download or install that fails skips the test with the reason.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASE_PYTHON = getattr(sys, "_base_executable", None) or sys.executable


def cache_root() -> Path:
    env = os.environ.get("SUPERQODE_TEST_CACHE")
    root = Path(env) if env else ROOT / "build" / "superqode-tests"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST", "SUPERQODE"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 600) -> None:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=_clean_env(),
                         timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        last = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["?"]
        pytest.skip(f"preparing a real project failed: {' '.join(cmd[:4])}...: {last[0][:300]}")


@contextmanager
def _lock(name: str):
    path = cache_root() / f".{name}.lock"
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def sdist(spec: str) -> Path:
    """The sdist of ``name==version``, downloaded once."""
    name, version = spec.split("==")
    d = cache_root() / "sdists"
    d.mkdir(exist_ok=True)
    with _lock(f"sdist-{name}"):
        found = sorted(d.glob(f"{name}-{version}.tar.gz"))
        if not found:
            _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                  "--no-binary", ":all:", "-d", str(d), spec], timeout=300)
            found = sorted(d.glob(f"{name}-{version}.tar.gz"))
        if not found:
            pytest.skip(f"pip download gave no sdist for {spec}")
        return found[0]


def project(spec: str, tag: str = "", venv: list[str] | None = None,
            editable: bool = False) -> Path:
    """``spec`` unpacked into its own git repository (``.venv`` ignored),
    with a ``.venv`` holding ``venv`` (and the project itself, editable,
    when asked). Built once; a half-built one is redone."""
    archive = sdist(spec)
    name = archive.name.removesuffix(".tar.gz") + (f"-{tag}" if tag else "")
    target = cache_root() / "projects" / name
    done = target.parent / f"{name}.done"
    with _lock(f"project-{name}"):
        if done.is_file():
            return target
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            top = tar.getnames()[0].split("/")[0]
            tar.extractall(target.parent / f"{name}.tmp", filter="data")
        (target.parent / f"{name}.tmp" / top).rename(target)
        shutil.rmtree(target.parent / f"{name}.tmp", ignore_errors=True)
        (target / ".gitignore").write_text(".venv/\n__pycache__/\n*.egg-info/\n.superqode/\n")
        for cmd in (["init", "-q"], ["add", "-A"],
                    ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "sdist"]):
            _run(["git", *cmd], cwd=target)
        if venv is not None:
            _run([BASE_PYTHON, "-m", "venv", str(target / ".venv")])
            py = str(target / ".venv" / "bin" / "python")
            _run([py, "-m", "pip", "install", "-q", *venv], timeout=900)
            if editable:
                _run([py, "-m", "pip", "install", "-q", "--no-deps", "-e", str(target)],
                     timeout=900)
        done.write_text("")
    return target


def link_env_cache(home: Path) -> None:
    """Let SuperQode's built environments outlive the test's temporary home."""
    sq = home / ".superqode"
    sq.mkdir(parents=True, exist_ok=True)
    # An environment is trusted only with its manifest: both are kept.
    for name in ("envs", "env-manifests", "uv-cache"):
        kept = cache_root() / name
        kept.mkdir(exist_ok=True)
        if not (sq / name).exists():
            (sq / name).symlink_to(kept, target_is_directory=True)
