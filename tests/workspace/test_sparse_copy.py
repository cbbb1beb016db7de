"""Sparse files stay sparse in the sandbox: a 256 MiB hole costs no disk in
the copy (the user's 2 GB sparse fixture must not become 2 GB of zeros)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from superqode_ls.workspace.holes import copy_file

SUPERQE = [sys.executable, "-m", "superqode_ls"]
HOLE = 256 << 20


def _sparse(path: Path, data_at: tuple[int, ...] = (0, HOLE // 2)) -> None:
    with open(path, "wb") as fh:
        for off in data_at:
            fh.seek(off)
            fh.write(b"data at %d\n" % off)
        fh.truncate(HOLE)


def test_copy_keeps_holes_and_bytes(tmp_path):
    src, dst = tmp_path / "disk.img", tmp_path / "copy.img"
    _sparse(src)
    if os.stat(src).st_blocks * 512 >= HOLE:
        import pytest
        pytest.skip("this file system does not keep holes")
    copy_file(src, dst)
    st = os.stat(dst)
    assert st.st_size == HOLE
    assert st.st_blocks * 512 < 1 << 20  # a few KiB of data, not 256 MiB
    with open(src, "rb") as a, open(dst, "rb") as b:
        for off in (0, HOLE // 2, HOLE - 4096):
            a.seek(off)
            b.seek(off)
            assert a.read(4096) == b.read(4096)


def test_copy_of_a_dense_file_is_exact(tmp_path):
    src, dst = tmp_path / "a.bin", tmp_path / "b.bin"
    src.write_bytes(os.urandom(3 << 20) + b"tail")
    copy_file(src, dst)
    assert dst.read_bytes() == src.read_bytes()


def test_a_sparse_file_stays_sparse_in_a_folder_copy(tmp_path):
    repo = tmp_path / "plain folder"  # not a git repository: copied into the sandbox
    repo.mkdir()
    (repo / "app.py").write_text("x = 1\n")
    _sparse(repo / "fixture.img")
    if os.stat(repo / "fixture.img").st_blocks * 512 >= HOLE:
        import pytest
        pytest.skip("this file system does not keep holes")
    probe = "import os; st = os.stat('fixture.img'); print(st.st_size, st.st_blocks * 512)"
    proc = subprocess.run([*SUPERQE, "exec", str(repo), "--", sys.executable, "-c", probe],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    size, used = map(int, proc.stdout.split())
    assert size == HOLE and used < 1 << 20


def test_an_untracked_sparse_file_stays_sparse_in_a_worktree_sandbox(make_repo):
    """Untracked and dirty files reach a worktree sandbox from their blobs
    (worktree.lay_over): written with holes where the blob has zeros."""
    repo = make_repo({"app.py": "x = 1\n"})
    _sparse(repo / "fixture.img")
    if os.stat(repo / "fixture.img").st_blocks * 512 >= HOLE:
        import pytest
        pytest.skip("this file system does not keep holes")
    probe = ("import os; st = os.stat('fixture.img'); print(st.st_size, st.st_blocks * 512); "
             f"f = open('fixture.img', 'rb'); f.seek({HOLE // 2}); print(f.read(20))")
    proc = subprocess.run([*SUPERQE, "exec", "--worktree", str(repo), "--", sys.executable, "-c",
                           probe], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    sizes, data = proc.stdout.splitlines()[:2]
    size, used = map(int, sizes.split())
    assert size == HOLE and used < 1 << 20
    assert data == repr(b"data at %d\n" % (HOLE // 2) + bytes(20 - len(b"data at %d\n" % (HOLE // 2))))
