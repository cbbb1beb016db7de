"""The verdict at a session's end: the user's project against the
fingerprint taken at its start, attributed.

With the kernel barrier on (``barrier_abi`` set), no process of the session
could write the user's tree or git dir, so a difference was made from
outside (the user, their editor, their git): it is reported as such and
kept, and the session stays verified. What the barrier cannot vouch for
still fails: objects that HEAD, a ref, the stash or the index name and the
store no longer has. With the barrier off, every difference fails, as it
always did.
"""

from __future__ import annotations

from pathlib import Path

from ..models import Verification
from .fingerprint import Fingerprint, compare, fingerprint_with_proof


def verify_state(before: Fingerprint, root: Path, barrier_abi: int | None) -> Verification:
    after, missing = fingerprint_with_proof(root, before.own)
    diffs = compare(before, after)
    if barrier_abi is not None:
        return Verification(verified=not missing, differences=missing, outside_changes=diffs,
                            barrier_abi=barrier_abi)
    return Verification(verified=not (diffs or missing), differences=diffs + missing)
