"""The fingerprint a session takes of the user's tree before anything else,
and the verification against it when the session ends.

It is written beside the session's record, so a revert after a crash
(``superqe revert``/``clean``, ``verify_record``) can still verify.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from ..models import Verification
from .artifacts import atomic_write
from .errors import WorkspaceError
from .fingerprint import Fingerprint, files_part, git_part
from .records import SessionRecord
from .verification import verify_state

log = logging.getLogger(__name__)


class SessionFingerprint:
    """The fingerprint of ``project`` one session is verified against: taken
    in line or in a thread beside the sandbox's making (``start``), stored in
    ``file``; ``verify`` joins the thread and compares."""

    def __init__(self, project: Path, own: list[str], file: Path, *, session_id: str):
        self.project = project
        self.own = own  # SuperQode's artifact folders in the project (relative)
        self.file = file
        self.session_id = session_id
        self.before: Fingerprint | None = None
        self.thread: threading.Thread | None = None
        self._git_ready = threading.Event()  # the git section is taken (or failed)
        self._git_ok = False
        self._refs: str | None = None  # the git section's ref listing

    def git_part(self) -> Fingerprint:
        """The git section alone (taken before a worktree is registered)."""
        return git_part(self.project, self.own)

    def take(self, fp: Fingerprint | None = None) -> None:
        """``fp``: its git section, taken already; the files are walked here."""
        if fp is None:
            fp = self.git_part()
        files_part(fp)
        atomic_write(self.file, fp.to_json())
        self.before = fp

    def start(self, fp: Fingerprint | None = None) -> None:
        """:meth:`take` in a thread; joined by :meth:`join` and :meth:`verify`.
        Without ``fp`` the thread takes the git section first:
        :meth:`wait_git` waits for it."""
        if fp is not None:
            self._refs = fp.refs
            self._git_ok = True
            self._git_ready.set()
        self.thread = threading.Thread(target=self._beside, args=(fp,), daemon=True,
                                       name=f"fingerprint {self.session_id}")
        self.thread.start()

    def _beside(self, fp: Fingerprint | None) -> None:
        try:
            if fp is None:
                fp = self.git_part()
                self._refs = fp.refs
                self._git_ok = True
                self._git_ready.set()
            self.take(fp)
        except Exception:  # no fingerprint: unverified, or creation stops
            log.exception("session %s: the fingerprint could not be taken", self.session_id)
        finally:
            self._git_ready.set()

    def wait_git(self) -> str | None:
        """Return once the git section is taken (a worktree may be registered
        from then on); raise when it could not be, before anything is. Returns
        git's listing of the project's refs as the section read it (None: not
        read), which the session's seal uses instead of reading it again."""
        self._git_ready.wait()
        if not self._git_ok:
            raise WorkspaceError("the fingerprint of the project could not be taken")
        return self._refs

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()

    def verify(self, barrier_abi: int | None, protection: str | None) -> Verification:
        """``barrier_abi``, ``protection``: what the session ran under (the
        differences are attributed only with the kernel barrier)."""
        self.join()
        if self.before is None:
            return Verification(verified=False, differences=["no fingerprint was taken"])
        return verify_state(self.before, self.project, barrier_abi, protection)


def verify_record(record: SessionRecord) -> Verification:
    """Compare the user's tree with the fingerprint stored at session start
    (a session whose process is gone)."""
    try:
        before = Fingerprint.from_json(Path(record.fingerprint_file or "").read_text())
    except OSError:
        return Verification(verified=False, differences=["no fingerprint was stored for this session"])
    except (ValueError, KeyError) as e:
        return Verification(verified=False, differences=[f"the stored fingerprint is unreadable: {e}"])
    return verify_state(before, Path(record.repo), record.barrier_abi, record.protection)
