"""Offline material for environment builds: wheels made from distributions
installed in SuperQode's own environment, and tiny projects whose build
backend is a file in the project (no build dependency to download)."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from packaging.requirements import Requirement

# A PEP 517 backend with no dependency: it zips the package folder and the
# metadata. ``VERSION`` and ``REQUIRES`` come from pyproject's [project].
BACKEND = r'''
import base64, hashlib, os, tomllib, zipfile


def _meta():
    data = tomllib.load(open("pyproject.toml", "rb"))["project"]
    return data["name"], data["version"], data.get("dependencies", []), data.get("optional-dependencies", {})


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, deps, extras = _meta()
    dist = name.replace("-", "_")
    files = {}
    for dirpath, _, names in os.walk(dist):
        for n in names:
            if n.endswith(".py"):
                p = os.path.join(dirpath, n)
                files[p.replace(os.sep, "/")] = open(p, "rb").read()
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += "".join(f"Requires-Dist: {d}\n" for d in deps)
    for extra, reqs in extras.items():
        meta += f"Provides-Extra: {extra}\n"
        meta += "".join(f"Requires-Dist: {r}; extra == \"{extra}\"\n" for r in reqs)
    info = f"{dist}-{version}.dist-info"
    files[f"{info}/METADATA"] = meta.encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = [_record_line(k, v) for k, v in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
    return wheel


def get_requires_for_build_wheel(config_settings=None):
    return []
'''


def project_files(name: str, version: str = "1.2.3", deps: list[str] = (),
                  extras: dict[str, list[str]] | None = None, extra_toml: str = "") -> dict[str, str]:
    """A buildable project named ``name`` (package ``name``) with the backend."""
    lines = [
        "[build-system]", "requires = []", 'build-backend = "testbackend"', 'backend-path = ["."]',
        "", "[project]", f'name = "{name}"', f'version = "{version}"',
        f"dependencies = {list(deps)!r}".replace("'", '"'),
    ]
    if extras:
        lines.append("[project.optional-dependencies]")
        lines += [f"{k} = {v!r}".replace("'", '"') for k, v in extras.items()]
    return {
        "pyproject.toml": "\n".join(lines) + "\n" + extra_toml,
        "testbackend.py": BACKEND,
        f"{name}/__init__.py": 'WHERE = "sandbox"\n',
    }


def wheel_of(name: str, dest: Path, version: str | None = None) -> Path:
    """A wheel of the installed distribution ``name`` (its files as
    installed), or of an empty stand-in when ``version`` is given."""
    dist = importlib.metadata.distribution(name)
    ver = version or dist.version
    norm = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    out = dest / f"{norm}-{ver}-py3-none-any.whl"
    info = f"{norm}-{ver}.dist-info"
    entries: dict[str, bytes] = {}
    for f in dist.files or []:
        parts = f.parts
        if parts[0] == ".." or "__pycache__" in parts or parts[0].endswith(".dist-info"):
            continue
        entries[f.as_posix()] = Path(dist.locate_file(f)).read_bytes()
    meta = dist.read_text("METADATA") or f"Metadata-Version: 2.1\nName: {name}\n"
    meta = re.sub(r"^Version: .*$", f"Version: {ver}", meta, count=1, flags=re.MULTILINE)
    entries[f"{info}/METADATA"] = meta.encode()
    entries[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                b"Tag: py3-none-any\n")
    ep = dist.read_text("entry_points.txt")
    if ep:
        entries[f"{info}/entry_points.txt"] = ep.encode()
    record = []
    for k, v in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b"=").decode()
        record.append(f"{k},sha256={digest},{len(v)}")
    entries[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    with zipfile.ZipFile(out, "w") as z:
        for k, v in entries.items():
            z.writestr(k, v)
    return out


def wheelhouse(dest: Path, names: tuple[str, ...] = ("pytest",)) -> Path:
    """Wheels of ``names`` and everything they need, offline."""
    dest.mkdir(parents=True, exist_ok=True)
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        wheel_of(name, dest)
        for req in importlib.metadata.requires(name) or []:
            r = Requirement(req)
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                todo.append(r.name)
    stub_wheel(dest)
    return dest


STUB = "sq-stub-dep"  # a requirement SuperQode's own environment never has


def stub_wheel(dest: Path, name: str = STUB, version: str = "1.0") -> Path:
    """A wheel of an empty distribution: a project depending on it needs
    its own environment."""
    norm = re.sub(r"[-_.]+", "_", name)
    info = f"{norm}-{version}.dist-info"
    files = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{k},sha256={base64.urlsafe_b64encode(hashlib.sha256(v.encode()).digest()).rstrip(b'=').decode()},{len(v)}"
              for k, v in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    out = dest / f"{norm}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
    return out


def run_unit_cli(repo: Path) -> tuple[subprocess.CompletedProcess, dict, dict]:
    """``superqe run REPO -r unit_tester`` as a user runs it: the process,
    the report it wrote and the unit role's entry there."""
    proc = subprocess.run([sys.executable, "-m", "superqode_ls", "run", str(repo), "-r",
                           "unit_tester", "--timeout", "200"], capture_output=True, text=True,
                          timeout=300, check=False)
    report = json.loads(max((repo / ".superqode" / "qe-artifacts").glob("qr/qr-*.json"))
                        .read_text())
    return proc, report, next(r for r in report["roles"] if r["role"] == "unit_tester")
