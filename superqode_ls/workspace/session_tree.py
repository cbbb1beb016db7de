"""A sandbox's content as snapshots in SuperQode's private object store: the
baseline carried in, checkpoints, the changes since, restore.

Every read of the sandbox first checks it is still the folder SuperQode made:
git run "in" a swapped sandbox would work on whatever it points to.
"""

from __future__ import annotations

from pathlib import Path

from ..models import ChangeSet
from . import excludes, removal
from . import worktree as wt
from .changes import changes_between
from .git import GitError
from .gitsnapshot import SnapshotStore
from .paths import SessionPaths, store_dir, working_root
from .records import SessionRecord


class SandboxTree:
    """The snapshots of one sandbox. ``store`` and ``baseline`` are set by
    whoever fills the sandbox (session_build.py); ``identity`` once it is made
    (what removal and every hash check against)."""

    def __init__(self, sandbox: Path, private: Path, session_id: str, *,
                 git_dir: Path | None = None):
        self.sandbox = sandbox
        self.private = private
        self.id = session_id
        # SuperQode's own git dir of a worktree sandbox (owngit.py): its
        # config and ignore rules, never the session's; None: the store's.
        self.git_dir = git_dir
        self.store: SnapshotStore | None = None
        self.baseline: str | None = None  # snapshot id of the state carried in
        self.identity: removal.Identity | None = None  # (dev, ino) of the sandbox as made

    @property
    def index(self) -> Path:
        """SuperQode's tracking index of the sandbox (never the session's)."""
        return self.private / "track-index"

    def check(self) -> None:
        """Raise UnsafeRemoval when the sandbox is not the folder we made any more."""
        removal.check(self.sandbox, working_root(), self.identity)

    def hash(self) -> str:
        assert self.store is not None
        self.check()
        return self.store.hash_tree(self.sandbox, self.index, git_dir=self.git_dir)

    def set_baseline(self, tree: str | None = None) -> None:
        """The baseline: ``tree`` (known already), else the sandbox now."""
        assert self.store is not None
        self.baseline = self.store.commit(tree or self.hash(), None, f"baseline {self.id}").id

    def checkpoint(self) -> str:
        assert self.store is not None
        return self.store.commit(self.hash(), self.baseline, f"checkpoint {self.id}").id

    def changes(self, since: str | None = None) -> ChangeSet:
        assert self.store is not None and self.baseline is not None
        now = self.checkpoint()
        return changes_between(self.store, since or self.baseline, now)

    def restore(self, snapshot_id: str) -> None:
        assert self.store is not None
        self.check()
        self.store.restore(snapshot_id, self.sandbox, self.index, git_dir=self.git_dir)

def extract_patch(record: SessionRecord) -> str:
    """The sandbox's changes against what was carried in, as a git diff (a
    session whose process is gone)."""
    project = Path(record.repo)
    paths = SessionPaths(project, record.id)
    if not record.baseline_snapshot or not Path(record.sandbox).is_dir():
        return ""
    alternates = []
    if record.isolation == "worktree":
        try:
            _, cd = wt.user_git_dirs(project)
            alternates = [cd / "objects"]
        except (GitError, IndexError):
            pass
    # SuperQode's own git dir of the sandbox (owngit.py); without one, the
    # store's: never the git dir the session could write.
    own = wt.SealedGit(paths.private / "git").own
    git_dir = own if record.isolation == "worktree" and (own / "HEAD").is_file() else None
    tree = SandboxTree(Path(record.sandbox), paths.private, record.id, git_dir=git_dir)
    tree.identity = record.sandbox_identity
    tree.check()
    tree.store = SnapshotStore(store_dir(project), alternates=alternates, session=record.id)
    # Hashed under the rules the session was made with (excludes.py).
    if (copy := excludes.session_copy(paths.private)) is not None:
        tree.store.use_excludes(copy)
    tree.baseline = record.baseline_snapshot
    return tree.changes().diff


class OnTree:
    """A part of a session that works on its :class:`SandboxTree`: where the
    sandbox and its private folder are is read from the tree, never copied."""

    tree: SandboxTree

    @property
    def sandbox(self) -> Path:
        return self.tree.sandbox

    @property
    def private(self) -> Path:
        return self.tree.private
