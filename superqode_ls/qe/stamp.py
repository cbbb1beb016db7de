"""What the user's files looked like when a session started (stat only).
Apart from the report's making (finish.py) because it is taken right after
``session_start``, before the sandbox exists: it needs git and the file
system, not the report writers, the noise filter or the verification, which
are imported beside the sandbox's making."""

from __future__ import annotations

import os
from pathlib import Path

from ..workspace.git import git


class Stamp:
    """What the user's files looked like when the session started (stat only),
    to tell at the end whether the results still describe them."""

    def __init__(self, project: Path, files: list[str] | None, overlays: dict[str, bytes]):
        self.project = project
        self.overlays = overlays
        self.files = files if files is not None else self._list(project)
        self.stats = {rel: self._stat(rel) for rel in self.files}

    @staticmethod
    def _list(project: Path) -> list[str]:
        # git's listing where the folder is in a work tree; git itself says
        # when it is not (one process: no ``rev-parse`` asked first).
        try:
            out = git(["ls-files", "-z", "-co", "--exclude-standard", "--", "."], project, check=False)
        except OSError:  # no such folder (any more): nothing to list
            out = None
        if out is not None and out.returncode == 0:
            return [p for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p]
        from .roles._common import walk_files

        return walk_files(project)

    def _stat(self, rel: str) -> tuple | None:
        try:
            st = os.lstat(self.project / rel)
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)

    def changed(self) -> list[str]:
        out = []
        for rel, before in self.stats.items():
            now = self._stat(rel)
            if now == before:
                continue
            overlay = self.overlays.get(rel)
            if overlay is not None:  # the editor saved the buffer the session analysed
                try:
                    if (self.project / rel).read_bytes() == overlay:
                        continue
                except OSError:
                    pass
            out.append(rel)
        return out
