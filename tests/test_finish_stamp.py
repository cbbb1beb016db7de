"""The user tree's stamp (qe/finish.Stamp): which files it lists, in a git
work tree and outside one, and that it sees an edit."""

from __future__ import annotations

from superqode_ls.qe.finish import Stamp


def test_in_git_lists_tracked_and_untracked_not_ignored(make_repo):
    repo = make_repo({"a.py": "x = 1\n", ".gitignore": "build/\n"})
    (repo / "new.py").write_text("y = 2\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.py").write_text("z = 3\n")
    stamp = Stamp(repo, None, {})
    assert sorted(stamp.files) == [".gitignore", "a.py", "new.py"]
    assert stamp.changed() == []
    (repo / "a.py").write_text("x = 10\n")
    assert stamp.changed() == ["a.py"]


def test_outside_git_walks_the_folder(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("x = 1\n")
    (tmp_path / "top.py").write_text("y = 1\n")
    stamp = Stamp(tmp_path, None, {})
    assert sorted(stamp.files) == ["pkg/m.py", "top.py"]


def test_a_folder_gone_lists_nothing(tmp_path):
    assert Stamp(tmp_path / "gone", None, {}).files == []
