"""The fingerprint's walk shared among threads (treewalk.collect) sees the
same entries as the walk in one thread, and every change below the folders
it hands out."""

from __future__ import annotations

import os

import pytest

from superqode_ls.workspace import treewalk
from superqode_ls.workspace.fingerprint import _entry, compare, take_fingerprint

SKIP = {".git", ".superqode", "deep/a1/b1/.superqode"}


def _skip(rel: str, _name: str) -> bool:
    return rel in SKIP


@pytest.fixture
def tree(tmp_path):
    """Folders wide and deep (past the levels listed before handing out),
    links to folders (never followed), odd names, an empty folder, a
    nested own folder that must stay out."""
    root = tmp_path / "t"
    for i in range(6):
        for j in range(5):
            d = root / "deep" / f"a{i}" / f"b{j}" / "c" / "d"
            d.mkdir(parents=True)
            (d / "f.py").write_text(f"{i}{j}\n")
            (d.parent / f"g{j}.txt").write_text("g\n")
    (root / "deep/a1/b1/.superqode").mkdir()
    (root / "deep/a1/b1/.superqode/x").write_text("own\n")
    (root / ".superqode").mkdir()
    (root / ".superqode/y").write_text("own\n")
    (root / ".git").mkdir()
    (root / "naïve name with spaces").mkdir()
    (root / "naïve name with spaces/ü.txt").write_text("u\n")
    (root / "empty").mkdir()
    os.symlink("deep", root / "link-to-deep")
    os.symlink("/nonexistent", root / "deep/a0/dangling")
    (root / "top.txt").write_text("t\n")
    return root


@pytest.mark.parametrize("workers", [2, 4, 16])
def test_threads_see_what_one_thread_sees(tree, workers):
    one = treewalk.collect(str(tree), _skip, _entry, workers=1)
    many = treewalk.collect(str(tree), _skip, _entry, workers=workers)
    assert many == one
    assert "deep/a5/b4/c/d/f.py" in many and "link-to-deep" in many
    assert not any(k.startswith("link-to-deep/") for k in many)  # never through a link
    assert "deep/a1/b1/.superqode" not in many and not any(k.startswith(".superqode") for k in many)
    assert many == {r: _entry(p, st) for r, p, st in treewalk.walk(str(tree), _skip)}


@pytest.mark.parametrize("workers", [1, 2, 16])
def test_a_tree_narrower_than_the_threads(tmp_path, workers):
    root = tmp_path / "n"
    (root / "only/one/path").mkdir(parents=True)
    (root / "only/one/path/f").write_text("f\n")
    got = treewalk.collect(str(root), _skip, _entry, workers=workers)
    assert sorted(got) == ["only", "only/one", "only/one/path", "only/one/path/f"]
    assert treewalk.collect(str(tmp_path / "missing"), _skip, _entry, workers=workers) == {}


CHANGES = {
    "content deep": lambda r: (r / "pkg/a/b/c/m.py").write_text("changed!\n"),
    "new file deep": lambda r: (r / "pkg/a/b/c/new.py").write_text("n\n"),
    "deleted deep": lambda r: (r / "pkg/z/b/c/m.py").unlink(),
    "chmod folder deep": lambda r: os.chmod(r / "pkg/a/b/c", 0o700),
    "new top file": lambda r: (r / "t.txt").write_text("t\n"),
}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_fingerprint_walked_by_threads_sees_every_change(make_repo, monkeypatch, name):
    files = {f"pkg/{x}/b/c/m.py": f"{x}\n" for x in "abcdefghijklmnopqrstuvwxyz"}
    repo = make_repo({**files, "top.py": "t\n"})
    monkeypatch.setattr(treewalk, "_WORKERS", 8)
    before = take_fingerprint(repo)
    monkeypatch.setattr(treewalk, "_WORKERS", 1)
    assert compare(before, take_fingerprint(repo)) == []  # the same entries either way
    CHANGES[name](repo)
    monkeypatch.setattr(treewalk, "_WORKERS", 8)
    assert compare(before, take_fingerprint(repo)) != []
