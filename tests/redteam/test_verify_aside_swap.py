"""Red team: during fix verification's re-run, the tool (a process of the
session, free to write the sandbox) swaps a folder of the sandbox for a link
to the user's repository. SuperQode then puts the sandbox's files back: it
must do so in the folder it set them aside from, never through the link
(which would replace or remove the user's own files)."""

from __future__ import annotations

import os

from superqode_ls.qe.verify_aside import CopiesAside


def test_putting_back_never_follows_a_folder_swapped_for_a_link(tmp_path):
    user = tmp_path / "user repo" / "pkg"
    user.mkdir(parents=True)
    (user / "core.py").write_bytes(b"the user's own\n")
    user_ino = os.lstat(user / "core.py").st_ino
    box = tmp_path / "sandbox"
    (box / "pkg").mkdir(parents=True)
    (box / "pkg" / "core.py").write_bytes(b"def f():\n    return 1\n")
    aside = CopiesAside(box, tmp_path / "private")
    aside.write({"pkg/core.py": "def f():\n    return 2\n", "pkg/core_sqcopy0_core.py": "x\n"})
    # The re-run: the folder moved elsewhere in the sandbox, a link in its place.
    os.rename(box / "pkg", box / "moved")
    (box / "pkg").symlink_to(user)
    aside.restore()
    assert (user / "core.py").read_bytes() == b"the user's own\n"
    assert os.lstat(user / "core.py").st_ino == user_ino
    assert sorted(os.listdir(user)) == ["core.py"]
    # The sandbox's file went back where it was taken from (the moved folder).
    assert (box / "moved" / "core.py").read_bytes() == b"def f():\n    return 1\n"
    assert sorted(os.listdir(box / "moved")) == ["core.py"]


def test_the_careful_rounds_put_back_nothing_through_a_link(tmp_path):
    """The careful rounds run the project's tests between saving the fixed
    files and putting them back (TreeBackup): a folder swapped for a link to
    the user's files, or the file itself swapped for one, is not written
    through, and a file the fix created is not removed through a link."""
    from superqode_ls.qe.verify_aside import TreeBackup

    user = tmp_path / "user repo"
    (user / "pkg").mkdir(parents=True)
    (user / "pkg" / "core.py").write_bytes(b"the user's own\n")
    (user / "pkg" / "new.py").write_bytes(b"the user's new\n")
    (user / "app.py").write_bytes(b"the user's app\n")
    box = tmp_path / "sandbox"
    (box / "pkg").mkdir(parents=True)
    (box / "pkg" / "core.py").write_bytes(b"sandbox core\n")
    (box / "app.py").write_bytes(b"sandbox app\n")
    (box / "ok.py").write_bytes(b"sandbox ok\n")
    backup = TreeBackup(box, ["app.py", "ok.py", "pkg/core.py", "pkg/new.py"])
    # The fix wrote; then the project's tests planted the links.
    (box / "ok.py").write_bytes(b"fixed\n")
    os.rename(box / "pkg", box / "moved")
    (box / "pkg").symlink_to(user / "pkg")
    (box / "app.py").unlink()
    (box / "app.py").symlink_to(user / "app.py")
    backup.restore()
    assert (user / "pkg" / "core.py").read_bytes() == b"the user's own\n"
    assert (user / "pkg" / "new.py").read_bytes() == b"the user's new\n"
    assert (user / "app.py").read_bytes() == b"the user's app\n"
    assert not (box / "app.py").is_symlink() and (box / "app.py").read_bytes() == b"sandbox app\n"
    assert (box / "ok.py").read_bytes() == b"sandbox ok\n"


def test_the_type_gate_writes_no_copy_through_a_link_out_of_the_sandbox(tmp_path):
    """The project's tests ran before the type check of the accepted fixes:
    one swapped the fixed file's folder for a link to the user's copy of it
    (the same text: the sandbox is a snapshot of the user's tree). The gate's
    copy is written by SuperQode's own process, outside the barrier: it must
    not land in the user's file, and that fix is not verified."""
    import asyncio

    from superqode_ls.models import Patch
    from superqode_ls.qe.roles.base import RoleOutput
    from superqode_ls.qe.type_gate import type_gate

    text = b"import os\n\n\ndef f():\n    return 1\n"
    user = tmp_path / "user repo" / "pkg"
    user.mkdir(parents=True)
    (user / "core.py").write_bytes(text)
    box = tmp_path / "sandbox"
    (box / "moved").mkdir(parents=True)
    (box / "moved" / "core.py").write_bytes(text)
    (box / "pkg").symlink_to(user)
    diff = ("diff --git a/pkg/core.py b/pkg/core.py\n--- a/pkg/core.py\n+++ b/pkg/core.py\n"
            "@@ -1,3 +1,1 @@\n-import os\n-\n-\n+\n")
    patches = {"p1": Patch(id="p1", description="Remove unused import", diff=diff, files=["pkg/core.py"],
                           role="lint_tester", verified_by="tool", verification="tool-verified only: ruff")}
    checked: list[list[str]] = []

    async def check(ctx, files):
        checked.append(list(files))
        return RoleOutput(status="ok")

    class Role:
        name = "type_tester"

    asyncio.run(type_gate(patches, ["p1"], box, Role(), None, None, check))
    assert (user / "core.py").read_bytes() == text
    assert checked == []
    assert patches["p1"].verified_by is None and "leads out of the sandbox" in patches["p1"].verification
