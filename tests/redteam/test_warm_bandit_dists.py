"""A warm bandit run reads, of a site-packages folder, only the
distributions bandit is made of.

Each run's child could read every ``sys.path`` folder one of bandit's modules
came from: for a system Python the whole ``dist-packages``, for a venv its
whole ``site-packages`` (other projects, ``.pth`` files), and through the
standard library a pyenv Python's global ``site-packages`` kept inside it.
Now the server grants, of such a folder, the top-level packages and the
``.dist-info`` of each distribution its loaded modules belong to, and lists
(never reads) the rest; a site-packages folder inside the standard library
is cut out of it.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from superqode_ls.qe.roles import _bandit_server, _bandit_warm
from superqode_ls.runtime import Runtime
from superqode_ls.workspace import landlock
from superqode_ls.workspace.session import IsolatedSession

from .test_warm_bandit_reads import unread

FINDING = "import subprocess\nsubprocess.call('x', shell=True)\n"  # bandit's B602
HAS_BANDIT = (Path(sys.executable).parent / "bandit").exists()
needs_landlock = pytest.mark.skipif(
    landlock.abi() is None or not HAS_BANDIT,
    reason="no Landlock (the warm bandit serves no run) or no bandit beside this Python")


def _closure(name: str) -> list[importlib.metadata.Distribution]:
    """bandit's distribution and those it needs here (no extras)."""
    out, seen, todo = [], set(), [name]
    while todo:
        dist = importlib.metadata.distribution(todo.pop())
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        out.append(dist)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return out


def _venv_with_bandit(prefix: Path) -> tuple[Path, Path]:
    """A venv at ``prefix`` with its own copy of bandit and what it needs in
    its site-packages (no .pth to this environment); (its python, that
    site-packages folder)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    (site,) = (prefix / "lib").glob("python3*/site-packages")
    for dist in _closure("bandit"):
        for f in dist.files or []:
            if f.parts[0] == os.pardir:  # its scripts, outside site-packages
                continue
            dest = site / f
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(dist.locate_file(f), dest)
    (prefix / "bin" / "bandit").symlink_to(Path(sys.executable).parent / "bandit")
    return prefix / "bin" / "python", site


def _plant(site: Path) -> list[Path]:
    """Another project's files in bandit's own site-packages."""
    (site / "planted").mkdir()
    (site / "planted" / "__init__.py").write_text(FINDING)
    (site / "planted-1.0.dist-info").mkdir()
    (site / "planted-1.0.dist-info" / "RECORD").write_text(
        "planted/__init__.py,,\nplanted-1.0.dist-info/RECORD,,\nplanted_mod.py,,\n")
    (site / "planted_mod.py").write_text(FINDING)
    (site / "zz-planted.pth").write_text(f"# {FINDING}")
    return [site / "planted" / "__init__.py", site / "planted_mod.py", site / "zz-planted.pth"]


@needs_landlock
def test_a_run_reads_only_bandits_distributions(isolated_home, make_repo):
    python, site = _venv_with_bandit(isolated_home / ".venv")
    planted = _plant(site)
    warm = _bandit_warm.start(Runtime.background(), str(python))
    assert warm is not None, "the warm bandit did not start from its own venv"
    try:
        repo = make_repo({"app.py": FINDING, "pkg/x.py": FINDING})
        with IsolatedSession.create_sync(repo) as s:
            # bandit and its plugins still work: B602 from the blacklist and
            # the injection plugins, over a folder too.
            res = asyncio.run(warm.run(["-f", "json", "-q", "-r", "."], s.sandbox, s.env(), 60))
            assert res is not None, "not served"
            found = {(r["filename"], r["test_id"]) for r in json.loads(res.stdout)["results"]}
            assert {("./app.py", "B602"), ("./pkg/x.py", "B602"), ("./app.py", "B404")} <= found
            for target in planted:
                assert "Permission denied" in unread(warm, s, target)
            # bandit's own files are what it is made of: readable.
            own = site / "bandit" / "core" / "manager.py"
            res = asyncio.run(warm.run(["-f", "json", "-q", str(own)], s.sandbox, s.env(), 60))
            assert res is not None and not json.loads(res.stdout)["errors"], res
    finally:
        warm.stop()


def _fake_site(root: Path) -> Path:
    site = root / "site-packages"
    for name in ("bandit", "yaml", "other"):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text("")
    for dist, files in (("bandit-1.0", ["bandit/__init__.py"]),
                        ("PyYAML-6.0", ["yaml/__init__.py"]),
                        ("other-1.0", ["other/__init__.py", "../../bin/other"])):
        meta = site / f"{dist}.dist-info"
        meta.mkdir()
        (meta / "RECORD").write_text("".join(f"{f},,\n" for f in files))
    (site / "stray.py").write_text("")
    (site / "x.pth").write_text(str(root) + "\n")
    return site


def _module(name: str, where: Path):
    mod = type(sys)(name)
    mod.__file__ = str(where)
    return mod


def test_the_read_set_names_distributions_not_folders(tmp_path):
    site = _fake_site(tmp_path / "venv")
    mods = {"bandit": _module("bandit", site / "bandit" / "__init__.py"),
            "yaml": _module("yaml", site / "yaml" / "__init__.py"),
            "stray": _module("stray", site / "stray.py"), "os": sys.modules["os"]}
    reads, listed = _bandit_server._read_paths(mods, [*sys.path, str(site)],
                                               home=str(tmp_path / "home"))
    s = str(site.resolve())
    for name in ("bandit", "bandit-1.0.dist-info", "yaml", "PyYAML-6.0.dist-info", "stray.py"):
        assert os.path.join(s, name) in reads
    for name in ("other", "other-1.0.dist-info", "x.pth"):
        assert os.path.join(s, name) not in reads
    assert s not in reads and s in listed  # listed, never read
    assert sys.prefix not in reads and "/usr" not in reads


def test_a_site_packages_inside_the_standard_library_is_cut_out(tmp_path):
    """A pyenv or python.org Python keeps its global site-packages inside its
    standard library folder: granting that folder granted all of it."""
    stdlib = tmp_path / "lib" / "python3"
    (stdlib / "json").mkdir(parents=True)
    (stdlib / "os.py").write_text("")
    (stdlib / "lib-dynload").mkdir()
    site = _fake_site(stdlib)
    (stdlib / "site-packages" / "flask").mkdir()
    kept = _bandit_server._cover(str(stdlib), {str(site)})
    assert sorted(kept) == sorted(str(stdlib / n) for n in ("json", "os.py", "lib-dynload"))
    assert _bandit_server._cover(str(stdlib / "json"), {str(site)}) == [str(stdlib / "json")]
    assert not _bandit_server._inside_stdlib_proper(str(site), {str(stdlib)})
    assert _bandit_server._inside_stdlib_proper(str(stdlib / "lib-dynload"), {str(stdlib)})


def test_the_read_set_is_refused_when_it_cannot_be_computed(tmp_path):
    site = _fake_site(tmp_path / "venv")
    bandit = _module("bandit", site / "bandit" / "__init__.py")
    with pytest.raises(ValueError, match="bandit"):  # bandit not found: fail closed
        _bandit_server._read_paths({"os": sys.modules["os"]}, sys.path)
    with pytest.raises(ValueError, match="home"):  # a folder holding HOME
        _bandit_server._read_paths({"bandit": bandit}, [str(site)], home=str(site / "x"))
    (site / "bandit-1.0.dist-info" / "RECORD").write_bytes(b"\xff\xfe bad")
    with pytest.raises(ValueError, match="distributions"):  # unreadable metadata
        _bandit_server._read_paths({"bandit": bandit}, [str(site)], home=str(tmp_path / "h"))
