"""Why a project's suite did not start, said in one line as a setup problem
(never a pass, never a finding about the code): a suite that refuses to run
as root (ArchiveBox's ``check_not_root``) where SuperQode runs as root, and
a ``python -m pytest`` that ran something other than pytest (lemur's empty
``lemur/pytest.py`` in the folder the tests ran from) and exited 0 with no
test run."""

from __future__ import annotations

import os
import re
from pathlib import Path

# "should never be run as root", "must not run as root", "refusing to run as
# root", "Running as root is not supported/allowed". Matched on the output
# with its lines joined: rich and click wrap long lines at 80 columns.
_ROOT_REFUSAL = re.compile(
    r"\b(?:never|not|n't|refus\w*\s+to)\s+(?:be\s+)?(?:run|running|started|executed)\s+as\s+"
    r"(?:the\s+)?root\b"
    r"|\brunning\s+as\s+root\s+is\s+not\s+(?:allowed|supported|permitted)"
    r"|\b(?:do\s+not|don't)\s+run\s+\S+\s+as\s+root\b",
    re.IGNORECASE)


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def refuses_root(text: str, as_root: bool | None = None) -> str | None:
    """The one line for a suite that stopped because it runs as root, or
    None. ``as_root``: whether SuperQode runs as root (asked of the process
    when None); a refusal printed by a suite not run as root is its own
    business, not this environment's."""
    if not (_as_root() if as_root is None else as_root):
        return None
    if not _ROOT_REFUSAL.search(" ".join(text.split())):
        return None
    return ("the project's tests refuse to run as root, and SuperQode runs as root (uid 0) "
            "here: run it as an ordinary user to run them")


def never_started(cwd: Path, tool: str) -> str:
    """The one line for a test command that exited 0 without running the
    suite (the recorder saw no session)."""
    for rel in ("pytest.py", "pytest/__init__.py"):
        path = cwd / rel
        if tool == "pytest" and path.is_file() and not path.is_symlink():
            return (f"no test ran: `python -m pytest` ran the project's own {rel} (a module "
                    "named pytest in the folder the tests run from), not pytest")
    what = "pytest" if tool == "pytest" else "manage.py test"
    return f"no test ran: {what} exited 0 without starting the test session"
