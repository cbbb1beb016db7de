"""A failed environment build, remembered for its key: the next run says at
once that it failed and why, rather than building it again and, past a quick
run's wait, "still being built" (OctoPrint's build failed in 30 s in the
background; the next run built it again, handed it over again and said it
was still being built). Tried again after ``RETRY_S`` or when anything the
key hashes changes (the declarations, the interpreter). Kept in
``$SUPERQODE_HOME/envs/<key>.failed`` (SuperQode's home, never the
sandbox); its text is only ever shown.

Also the one line naming a package index that a requirement file forces
(``-i https://pypi.python.org/simple``) when the build failed fetching: the
likely cause on a machine that cannot reach it, said with the failure."""

from __future__ import annotations

import datetime
import json
import os
import re
import time
from pathlib import Path

from .regular import read_regular_bytes

RETRY_S = 3600.0
_MAX_CAUSE = 2000
# uv's and pip's words for an index it could not use.
_FETCH = re.compile(r"Failed to fetch|Request failed|Failed to resolve|Could not connect|"
                    r"dns error|Name or service not known|No matching distribution|"
                    r"Network is unreachable|Connection refused|timed out", re.IGNORECASE)
_INDEX = re.compile(r"^\s*(?:-i|--index-url)(?:\s*=\s*|\s+)(\S+)", re.MULTILINE)


def failed_path(target: Path) -> Path:
    return target.with_name(target.name + ".failed")


def record_failure(target: Path, why: str) -> None:
    """Remember ``why`` the build of ``target`` failed (best effort)."""
    path = failed_path(target)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps({"why": why[:_MAX_CAUSE], "at": time.time()}), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def clear_failure(target: Path) -> None:
    failed_path(target).unlink(missing_ok=True)


def last_failure(target: Path, now: float | None = None, inputs: tuple[str, ...] = ()
                 ) -> str | None:
    """Why the last build of ``target`` failed, with when, while it is not
    to be tried again; None when there is none (or it is time to retry).
    ``inputs``: the project's files the build read (a change to one of them
    is a new build at once), named in the line with how to retry now."""
    path = failed_path(target)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        why, at = str(data["why"]), float(data["at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    age = (time.time() if now is None else now) - at
    if age < 0 or age >= RETRY_S:
        return None
    when = datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%H:%M UTC")
    named = ", ".join(inputs[:4]) + (f" and {len(inputs) - 4} more" if len(inputs) > 4 else "")
    return (f"{why} (its last build, at {when}; tried again in {(RETRY_S - age) / 60:.0f} min, "
            f"at once when {f'one of {named}' if len(inputs) > 1 else named or 'what it read'} "
            f"changes, or now after deleting {path})")


def build_failed(target: Path, folder: Path, files: tuple[str, ...], why: str) -> str:
    """The cause of a failed build of ``target`` (``files``: the requirement
    files in ``folder`` it read), with a forced index named; remembered
    unless the disk was full (freeing it is the user's retry)."""
    if index := forced_index(folder, files, why):
        why = f"{why}; {index}"
    if "no space left on the disk" not in why:
        record_failure(target, why)
    return why


def forced_index(root: Path, files: tuple[str, ...], why: str) -> str | None:
    """For a build that failed fetching (``why``): the requirement file that
    forces a package index and that index, said in one line; else None."""
    if not _FETCH.search(why):
        return None
    for rel in files:
        raw = read_regular_bytes(root / rel, 200_000)  # no link followed, no FIFO waited on
        if raw is None:
            continue
        text = raw.decode("utf-8", errors="replace")
        if m := _INDEX.search(text):
            return (f"{rel} forces the package index {m.group(1)} (its -i line), which the "
                    "build could not use here")
    return None
