"""Patches as files: which files a unified diff touches, ``git apply`` in a
sandbox folder (inside a repository or not), saving and putting back the files
a round of fixes touches, and which fixes can go into one round (verifier)."""

from __future__ import annotations

from pathlib import Path

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from ..models import Patch
from ..workspace.git import agit


def patch_files(diff: str) -> list[str]:
    """Project-relative paths a unified diff touches (sources and targets)."""
    try:
        ps = PatchSet(diff)
    except UnidiffParseError:
        return []
    out: list[str] = []
    for pf in ps:
        for name in (pf.source_file, pf.target_file):
            if not name or name == "/dev/null":
                continue
            for prefix in ("a/", "b/"):
                if name.startswith(prefix):
                    name = name[len(prefix):]
                    break
            if name not in out:
                out.append(name)
    return out


def strip_level(diff: str) -> int:
    try:
        ps = PatchSet(diff)
    except UnidiffParseError:
        return 1
    for pf in ps:
        for name in (pf.source_file, pf.target_file):
            if name and name != "/dev/null":
                return 1 if name.startswith(("a/", "b/")) else 0
    return 1


def _ceiling(root: Path) -> dict[str, str]:
    # Stops git from discovering a repository above a plain folder and
    # applying paths relative to that one instead.
    return {"GIT_CEILING_DIRECTORIES": str(Path(root).parent)}


async def repo_prefix(root: Path) -> str:
    """Where ``root`` is inside its repository ("" at the top or outside git):
    git reads patch paths from the top, so a sub-folder needs them prefixed."""
    code, out, _ = await agit(["rev-parse", "--show-prefix"], root, env=_ceiling(root), check=False)
    return out.decode("utf-8", "surrogateescape").strip().rstrip("/") if code == 0 else ""


async def git_apply(
    root: Path, diff: str, *, check_only: bool = False, check_first: bool = True,
    prefix: str | None = None,
) -> tuple[bool, str]:
    """``git apply`` in ``root``; works outside git too. git applies all of a
    patch or nothing; ``check_first`` adds an explicit ``--check`` run."""
    root = Path(root)
    env = _ceiling(root)
    args = ["apply", f"-p{strip_level(diff)}", "--whitespace=nowarn"]
    data = diff.encode("utf-8", "surrogateescape")
    if prefix is None:
        prefix = await repo_prefix(root)
    if prefix:
        args.append(f"--directory={prefix}")
    if check_first or check_only:
        code, _, err = await agit([*args, "--check", "-"], root, env=env, input=data, check=False)
        if code != 0:
            return False, _first_error(err)
        if check_only:
            return True, ""
    code, _, err = await agit([*args, "-"], root, env=env, input=data, check=False)
    return code == 0, _first_error(err)


def _first_error(err: bytes) -> str:
    lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("error:"):
            return ln[len("error:"):].strip()
    return lines[0] if lines else ""


class FileBackup:
    """Save exactly the files a patch touches; put them back byte for byte."""

    def __init__(self, root: Path, files: list[str]):
        self.root = root
        self.saved: dict[str, bytes | None] = {}
        for rel in files:
            p = root / rel
            try:
                self.saved[rel] = p.read_bytes() if p.is_file() else None
            except OSError:
                self.saved[rel] = None

    def restore(self) -> None:
        for rel, data in self.saved.items():
            p = self.root / rel
            if data is None:
                if p.is_file() or p.is_symlink():
                    p.unlink()
            else:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)



def apart(batch: list[tuple[Patch, list[str]]]) -> list[tuple[Patch, list[str]]]:
    """The patches whose hunks neither overlap nor touch another's (first come
    first in), so that applied together each lands where it was meant; the
    same diff twice is one. The rest wait for the careful rounds."""
    taken: dict[str, list[tuple[int, int]]] = {}
    diffs: set[str] = set()
    out = []
    for p, files in batch:
        if p.diff in diffs:
            out.append((p, files))
            continue
        spans = _spans(p.diff)
        if spans is None or any(a <= d and c <= b for f, (a, b) in spans
                                for c, d in taken.get(f, [])):
            continue
        for f, span in spans:
            taken.setdefault(f, []).append(span)
        diffs.add(p.diff)
        out.append((p, files))
    return out


def _spans(diff: str) -> list[tuple[str, tuple[int, int]]] | None:
    """(file, (first, last line)) of each hunk in the original, one line of
    margin on each side; None when the diff does not parse."""
    try:
        ps = PatchSet(diff)
    except UnidiffParseError:
        return None
    out = []
    for pf in ps:
        for h in pf:
            out.append((pf.path, (h.source_start - 1, h.source_start + max(h.source_length, 1))))
    return out


def shares_files(patches: list[Patch]) -> bool:
    seen: set[str] = set()
    for p in patches:
        files = set(p.files or patch_files(p.diff))
        if seen & files:
            return True
        seen |= files
    return False


def write_copies(root: Path, texts: dict[str, str]) -> None:
    for rel, text in texts.items():
        with open(root / rel, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
