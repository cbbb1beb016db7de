"""Copies written in place of their files for one re-run, the files set aside
(qe/verify_aside.py): afterwards every file is the very file it was."""

from __future__ import annotations

import os

import pytest

from superqode_ls.qe.verify_aside import CopiesAside


def _state(p):
    st = os.lstat(p)
    return (st.st_ino, st.st_mode, st.st_mtime_ns, p.read_bytes() if not p.is_symlink() else os.readlink(p))


def test_copies_replace_the_files_and_the_files_come_back_untouched(tmp_path):
    root, private = tmp_path / "sandbox", tmp_path / "private"
    (root / "pkg").mkdir(parents=True)
    plain = root / "pkg" / "a.py"
    plain.write_bytes(b"import os\n")
    script = root / "run.py"
    script.write_bytes(b"#!/usr/bin/env python\nimport sys\n")
    script.chmod(0o750)
    target = root / "target.py"
    target.write_bytes(b"x = 1\n")
    link = root / "link.py"
    link.symlink_to("target.py")
    hard = root / "hard.py"
    os.link(target, root / "hard2.py")
    hard.write_bytes(b"y = 2\n")
    os.link(hard, root / "hard3.py")
    before = {p: _state(p) for p in (plain, script, target, link, hard)}
    texts = {"pkg/a.py": "\n", "run.py": "#!/usr/bin/env python\n", "link.py": "x = 2\n",
             "hard.py": "y = 3\n", "pkg/a_sqcopy0_a.py": "import os\n"}
    aside = CopiesAside(root, private)
    aside.write(texts)
    try:
        for rel, text in texts.items():
            assert (root / rel).read_text() == text, rel
        assert os.stat(script).st_mode & 0o777 == 0o750  # the copy has the file's mode
        assert os.lstat(plain).st_ino != before[plain][0]  # a new file, the old one aside
        assert link.is_symlink() and target.read_text() == "x = 2\n"  # a link: written through
        assert (root / "hard3.py").read_text() == "y = 3\n"  # other links: written over
        assert len(list(private.glob("verify-aside-*/*"))) == 2
    finally:
        aside.restore()
    assert {p: _state(p) for p in (plain, script)} == {p: before[p] for p in (plain, script)}
    assert (target.read_bytes(), hard.read_bytes()) == (b"x = 1\n", b"y = 2\n")
    assert link.is_symlink() and not (root / "pkg" / "a_sqcopy0_a.py").exists()
    assert list(private.iterdir()) == []


def test_an_error_midway_is_undone(tmp_path):
    root = tmp_path / "sandbox"
    root.mkdir()
    (root / "a.py").write_bytes(b"a\n")
    aside = CopiesAside(root, tmp_path / "private")
    with pytest.raises(OSError):
        aside.write({"a.py": "b\n", "missing/b.py": "c\n"})  # no such folder: the create fails
    aside.restore()
    assert (root / "a.py").read_bytes() == b"a\n"
    assert sorted(p.name for p in root.iterdir()) == ["a.py"]


def test_without_a_private_folder_the_files_are_written_over_and_back(tmp_path):
    (tmp_path / "a.py").write_bytes(b"a\n")
    ino = os.lstat(tmp_path / "a.py").st_ino
    aside = CopiesAside(tmp_path, None)
    aside.write({"a.py": "b\n"})
    assert (tmp_path / "a.py").read_bytes() == b"b\n" and os.lstat(tmp_path / "a.py").st_ino == ino
    aside.restore()
    assert (tmp_path / "a.py").read_bytes() == b"a\n"


def test_a_file_reached_through_a_link_out_of_the_tree_is_not_written(tmp_path):
    """A folder of the tree that links elsewhere (the user's files): its
    files are neither moved into the session's private folder nor written."""
    root, outside = tmp_path / "sandbox", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (outside / "m.py").write_bytes(b"m = 1\n")
    before = os.lstat(outside / "m.py")
    (root / "pkg").symlink_to(outside)
    (root / "n.py").symlink_to(outside / "m.py")
    aside = CopiesAside(root, tmp_path / "private")
    aside.write({"pkg/m.py": "m = 2\n", "pkg/m_sqcopy0_m.py": "m = 1\n", "n.py": "m = 3\n"})
    try:
        assert (outside / "m.py").read_bytes() == b"m = 1\n"
        assert sorted(os.listdir(outside)) == ["m.py"]
    finally:
        aside.restore()
    after = os.lstat(outside / "m.py")
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
