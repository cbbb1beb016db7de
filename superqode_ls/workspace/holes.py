"""Copying a user's file into a sandbox without filling its holes.

A sparse file (a VM image, a database file, a 2 GB ``truncate``d test
fixture) takes little disk; a plain byte copy writes every zero and can fill
the disk a sandbox lives on. The copy shares the file's extents where the file
system can (reflink: btrfs, XFS, bcachefs), else copies only its data
segments (``SEEK_DATA``/``SEEK_HOLE``) and sets the length, else falls back to
a plain copy where the file has no holes. A file written from its bytes
(a blob of the user's untracked or dirty state, :func:`write_bytes`) gets
holes where it has whole blocks of zeros.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
from pathlib import Path

_FICLONE = 0x40049409  # _IOW(0x94, 9, int): share all extents of the source
_CHUNK = 1 << 20
# write_bytes: blocks of zeros this size (aligned) become holes; files smaller
# than _SPARSE_MIN are written plainly (no block worth a hole, no scan).
_BLOCK = 1 << 16
_ZEROS = bytes(_BLOCK)
_SPARSE_MIN = 1 << 20


def _reflink(src_fd: int, dst_fd: int) -> bool:
    try:
        fcntl.ioctl(dst_fd, _FICLONE, src_fd)
        return True
    except OSError:
        return False  # not supported here (ext4, tmpfs) or across file systems


def _copy_range(src_fd: int, dst_fd: int, start: int, end: int) -> None:
    pos = start
    while pos < end:
        n = min(_CHUNK, end - pos)
        try:
            done = os.copy_file_range(src_fd, dst_fd, n, pos, pos)
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                raise
            data = os.pread(src_fd, n, pos)
            done = os.pwrite(dst_fd, data, pos) if data else 0
        if done <= 0:
            return  # the file shrank while we copied
        pos += done


def _segments(fd: int, size: int):
    """(start, end) of each data segment of the open file ``fd``."""
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:
                return  # only a hole is left
            raise
        end = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, min(end, size)
        pos = end


def copy_file(src: Path | str, dst: Path | str) -> None:
    """Copy the bytes of the regular file ``src`` to ``dst`` (created or
    truncated), keeping holes. Does not follow a symlink at ``src``."""
    sfd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(sfd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(src))
        sparse = st.st_blocks * 512 < st.st_size
        dfd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            if _reflink(sfd, dfd):
                return
            if not sparse:
                _copy_range(sfd, dfd, 0, st.st_size)
                return
            try:
                for start, end in _segments(sfd, st.st_size):
                    _copy_range(sfd, dfd, start, end)
            except OSError as e:
                if e.errno not in (errno.EINVAL, errno.ENOTSUP):
                    raise
                os.ftruncate(dfd, 0)  # no SEEK_DATA here: every byte, once
                _copy_range(sfd, dfd, 0, st.st_size)
            os.ftruncate(dfd, st.st_size)
        finally:
            os.close(dfd)
    finally:
        os.close(sfd)


def copy_with_mode(src: Path | str, dst: Path | str) -> None:
    """``copy_file`` plus the permission bits and times, as ``shutil.copy2``."""
    copy_file(src, dst)
    shutil.copystat(src, dst, follow_symlinks=False)


def write_bytes(path: Path | str, data: bytes) -> None:
    """``Path(path).write_bytes(data)``, but every aligned block of zeros is
    skipped (a hole, where the file system has them) and the length set at
    the end: a 2 GB sparse file carried from its blob does not become 2 GB
    on disk. The bytes read back are ``data`` either way."""
    if len(data) < _SPARSE_MIN:
        Path(path).write_bytes(data)
        return
    view, n = memoryview(data), len(data)

    def zeros(at: int) -> bool:
        block = data[at:at + _BLOCK]  # bytes: a memcpy and a memcmp, not a loop
        return block == _ZEROS if len(block) == _BLOCK else not block.strip(b"\0")

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        pos = 0
        while pos < n:
            if zeros(pos):
                pos += _BLOCK
                continue
            end = pos + _BLOCK
            while end < n and not zeros(end):
                end += _BLOCK  # one write for a run of data blocks
            end = min(end, n)
            while pos < end:
                pos += os.pwrite(fd, view[pos:end], pos)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)
