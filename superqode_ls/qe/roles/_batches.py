"""Work for a tool that analyses one file at a time (bandit), in batches
that fit a deadline: product code first, the code the report shows one
level lower (tests, docs, examples: qe.path_classes) after it, each part
split by size over the CPUs and cut into pieces. A run that stops at the
deadline keeps every finished piece's findings and names the files it did
not reach, instead of losing them all with the one process that held them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ._common import shards_by_size

# About 10 s of bandit's CPU on an idle core: one more process start (under
# half a second) per piece is the price of keeping finished work.
PIECE_BYTES = 1_500_000


@dataclass
class Plan:
    width: int  # processes at a time
    batches: list[list[str]]  # in the order to run, product code first
    later: int  # how many of the batches (the last ones) are demoted code


def plan_batches(root: Path, files: list[str], cpus: int,
                 demoted: Callable[[str], bool]) -> Plan | None:
    """The batches for ``files``: one per CPU at once when each CPU's share
    is under a piece (None when that is one), else product code first, in
    pieces; None when the lists would not fit on a command line (the tool
    then walks the tree itself)."""
    whole = shards_by_size(root, files, cpus)
    if not whole:
        return None
    if all(_size(root, shard) <= PIECE_BYTES for shard in whole):
        # small enough to finish at once: one process per CPU, as ever
        return Plan(width=len(whole), batches=whole, later=0) if len(whole) > 1 else None
    first = [f for f in files if not demoted(f)]
    later = [f for f in files if demoted(f)]
    parts = [p for p in (first, later) if p]
    batches: list[list[str]] = []
    counts = []
    width = 1
    for part in parts:
        shards = shards_by_size(root, part, cpus)
        if not shards:
            return None
        width = max(width, len(shards))
        pieces = []
        for shard in shards:
            pieces.append(_pieces(root, shard))
        # round robin: the CPUs work on the part's pieces side by side
        part_batches = [p[i] for i in range(max(map(len, pieces))) for p in pieces if i < len(p)]
        batches.extend(part_batches)
        counts.append(len(part_batches))
    return Plan(width=width, batches=batches, later=counts[-1] if first and later else 0)


def _size(root: Path, files: list[str]) -> int:
    total = 0
    for rel in files:
        try:
            total += (root / rel).stat().st_size
        except OSError:
            pass
    return total


def _pieces(root: Path, files: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    size = 0
    for rel in files:
        try:
            n = (root / rel).stat().st_size
        except OSError:
            n = 0
        if out[-1] and size + n > PIECE_BYTES:
            out.append([])
            size = 0
        out[-1].append(rel)
        size += n
    return out


def by_folder(files: list[str], shown: int = 3) -> str:
    """``test/ 227, doc/ 12 and 2 more places``: how many of ``files`` are
    in each top folder, the largest first."""
    folders: dict[str, int] = {}
    for f in files:
        top = f.split("/", 1)[0] + "/" if "/" in f else f
        folders[top] = folders.get(top, 0) + 1
    top = sorted(folders.items(), key=lambda kv: (-kv[1], kv[0]))
    named = ", ".join(f"{k} {n}" for k, n in top[:shown])
    more = f" and {len(top) - shown} more places" if len(top) > shown else ""
    return named + more


def left_out_reason(files: list[str], shown: int = 3) -> str:
    """Which files bandit had no time for, by top folder (tests and docs
    come last, so they are what a tight budget leaves out)."""
    return (f"bandit ran out of time: {len(files)} files not scanned ({by_folder(files, shown)}); "
            "product code was scanned first")
