"""The verdict at a session's end: the user's project (and HOME's dot
entries) against the fingerprint taken at its start, attributed.

Who could have made a difference depends on what the kernel prevented:

- the read-only namespace layer (protection "namespaces + Landlock"): the
  project, its ``.git`` and HOME were read-only to every process of the
  session, metadata included; any difference was made from outside (the
  user, their editor, their git): reported as such and kept, verified;
- the Landlock barrier alone (``barrier_abi`` set): the session could not
  write, create, remove, rename or truncate there, but Landlock does not
  govern chmod, chown, utimes, setxattr or ``chattr``. A difference that
  needed a write is outside (kept); one in metadata only (mode, owner,
  times, xattrs, flags) is "changed during the session: may have been the
  session", and NOT verified;
- no barrier: every difference fails, as it always did.

What no barrier vouches for still fails: objects that HEAD, a ref, the stash
or the index name and the store no longer has.
"""

from __future__ import annotations

from pathlib import Path

from ..models import Verification
from .fingerprint import Fingerprint, differences, fingerprint_with_proof

MAYBE_SESSION = "changed during the session, may have been the session"


def kernel_seals_metadata(protection: str | None) -> bool:
    """THE one place that says whether a protection level made every write of
    a session to the project, its .git and HOME impossible, metadata
    included. Only the read-only namespace layer does (its level names it:
    "namespaces + Landlock"); Landlock alone leaves metadata calls open.
    ``protection`` is ``namespaces.protection_level()`` as the session recorded
    it when it started."""
    return bool(protection) and str(protection).lower().startswith("namespaces")


def verify_state(before: Fingerprint, root: Path, barrier_abi: int | None,
                 protection: str | None = None) -> Verification:
    after, missing = fingerprint_with_proof(root, before.own)
    found = differences(before, after)
    if barrier_abi is None:
        # No kernel barrier was in force (the namespace layer runs only on
        # top of one): any difference may have been the session's.
        diffs = [d for d, _ in found]
        return Verification(verified=not (diffs or missing), differences=diffs + missing)
    sealed = kernel_seals_metadata(protection)
    outside = [d for d, meta in found if sealed or not meta]
    maybe = [f"{MAYBE_SESSION}: {d}" for d, meta in found if meta and not sealed]
    return Verification(verified=not (missing or maybe), differences=maybe + missing,
                        outside_changes=outside, barrier_abi=barrier_abi)
