"""What one walk for both the fingerprint and the user's snapshot could save.

    .venv/bin/python bench/onewalk.py [--files 20000] [--rounds 7] [--repo DIR]

A session's start walks the user's tree twice: the fingerprint's Python walk
(``lstat`` of every entry) and git's ``add -A`` of the snapshot
(``gitsnapshot.hash_tree``: ``lstat`` of every index entry, then a walk of the
folders for untracked files). This measures, on bench/sandbox.py's generated
repository with its dirty state, the snapshot's scan as SuperQode runs it
("old") against the one-walk way of doing it ("new"): the index's stat data
read in Python and compared with the fingerprint's entries (an entry is
handed to git unless its size, mtime, ctime and inode are equal to the
nanosecond and it is not racy by git's rule in whole seconds), git's
``update-index --add --remove`` on the entries named and on the untracked
files of ``ls-files --others``, with the same configuration as the old
scan. Each round checks that both give the same tree. The fingerprint's walk
itself is not counted on either side: a session makes it anyway.

The index reader here handles what a measurement needs (versions 2 and 3,
no flagged entry) and is not used by SuperQode; run on an index it cannot
read, the bench says so and stops.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sandbox import make_repo

from superqode_ls.workspace.fingerprint import take_fingerprint
from superqode_ls.workspace.gitsnapshot import CACHE_PATTERNS

_STAT = struct.Struct(">10I").unpack_from
_FLAGS = struct.Struct(">H").unpack_from
_NS = 10**9


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def named_entries(index: Path, files: dict[str, tuple]) -> list[bytes]:
    """Index entries the fingerprint's stat data does not prove unchanged."""
    data = index.read_bytes()
    if data[:4] != b"DIRC":
        raise SystemExit(f"{index}: not a git index")
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3):
        raise SystemExit(f"{index}: index version {version}, which this bench does not read")
    # git's racy rule (without USE_NSEC): an entry whose mtime is in the
    # index's own second or later may have changed unseen.
    racy_from = index.stat().st_mtime_ns // _NS
    off, named = 12, []
    for _ in range(count):
        cs, cn, ms, mn, _dev, ino, mode, _uid, _gid, size = _STAT(data, off)
        flags = _FLAGS(data, off + 60)[0]
        if flags & 0xF000 or (flags & 0xFFF) == 0xFFF:  # flagged, staged, extended, long name
            raise SystemExit(f"{index}: an entry this bench does not read")
        end = off + 62 + (flags & 0xFFF)
        name = data[off + 62:end]
        off += (end - off + 8) & ~7
        e = files.get(name.decode("utf-8", "surrogateescape"))
        if (e is None or e[0] != ("l" if mode >> 12 == 0o12 else "f") or e[2] != size
                or e[3] != ms * _NS + mn or e[4] != cs * _NS + cn or e[5] & 0xFFFFFFFF != ino
                or ms >= racy_from):
            named.append(name)
    return named


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repo", type=Path, metavar="DIR",
                    help="this generated repository (made there when missing and kept)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sq-onewalk-"))
    try:
        repo = args.repo / "big repo" if args.repo else None
        if repo is None or not repo.exists():
            base = args.repo or tmp
            base.mkdir(parents=True, exist_ok=True)
            repo = make_repo(base, args.files)
        excludes = tmp / "excludes"
        excludes.write_text("\n".join(CACHE_PATTERNS) + "\n")
        cfg = ["-c", f"core.excludesFile={excludes}", "-c", "core.autocrlf=false"]
        take_fingerprint(repo)  # warm: both sides then read a tree in the page cache
        fp = take_fingerprint(repo)
        load = os.getloadavg()[0]
        old_cpu, new_git, new_py, named_n, trees = [], [], [], [], set()
        for r in range(args.rounds):
            for side in ("old", "new") if r % 2 == 0 else ("new", "old"):
                index = tmp / f"index-{side}"
                shutil.copy2(repo / ".git" / "index", index)
                env = dict(os.environ, GIT_INDEX_FILE=str(index))
                c0 = _cpu_children()
                if side == "old":
                    subprocess.run(["git", *cfg, "add", "-A", "--ignore-errors", "--", "."],
                                   cwd=repo, env=env, check=True)
                    old_cpu.append(_cpu_children() - c0)
                else:
                    p0 = time.process_time()
                    named = named_entries(index, fp.files)
                    new_py.append(time.process_time() - p0)
                    untracked = subprocess.run(
                        ["git", *cfg, "ls-files", "-z", "--others", "--exclude-standard"],
                        cwd=repo, env=env, capture_output=True, check=True).stdout
                    feed = b"".join(n + b"\0" for n in named) + untracked
                    subprocess.run(["git", "update-index", "--add", "--remove", "-z", "--stdin"],
                                   cwd=repo, env=env, input=feed, check=True)
                    new_git.append(_cpu_children() - c0)
                    named_n.append(len(named))
                tree = subprocess.run(["git", "write-tree"], cwd=repo, env=env,
                                      capture_output=True, check=True).stdout.strip()
                trees.add(tree)
        med = lambda xs: 1000 * statistics.median(xs)
        print(f"load {load:.1f} -> {os.getloadavg()[0]:.1f}; {args.rounds} rounds, alternated")
        print(f"old: git add -A                       git CPU {med(old_cpu):6.1f} ms")
        print(f"new: Python read + compare of the index     {med(new_py):6.1f} ms "
              f"({statistics.median(named_n):.0f} entries named)")
        print(f"     ls-files --others + update-index  git CPU {med(new_git):6.1f} ms")
        print(f"     together                                  {med(new_py) + med(new_git):6.1f} ms")
        print(f"same tree on both sides: {len(trees) == 1}")
        if len(trees) != 1:
            raise SystemExit(1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
