"""Red team: quick mode judges a role's fixes while the session's other
processes still run (qe/verify_early.py), on a tree of copies and links in
the session's private folder. SuperQode's own process writes copies there and
puts files back, outside every sandbox: a process of the session running
beside it (the suite probe runs the project's code then) must not be able to
write that tree -- swap a copy for a link to the user's files, plant a file
the re-run would judge, change a copy under the verdict. It may read it (the
re-run does)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.qe.verify_early import build_tree
from superqode_ls.workspace import landlock
from superqode_ls.workspace.proc import supervise
from superqode_ls.workspace.session import IsolatedSession

_TRY = """
import os, sys
tree, user = sys.argv[1], sys.argv[2]
out = []
def attempt(name, fn):
    try:
        fn()
        out.append(name + ": done")
    except OSError as e:
        out.append(name + ": refused " + type(e).__name__)
attempt("read", lambda: open(os.path.join(tree, "pkg", "a.py")).read())
attempt("overwrite", lambda: open(os.path.join(tree, "pkg", "a.py"), "w").write("planted"))
attempt("unlink", lambda: os.unlink(os.path.join(tree, "pkg", "a.py")))
attempt("link", lambda: os.symlink(user, os.path.join(tree, "pkg", "evil.py")))
attempt("plant", lambda: open(os.path.join(tree, "pkg", "a_sqcopy0_a.py"), "w").write("x"))
attempt("retarget", lambda: os.rename(os.path.join(tree, "pkg", "b.py"), os.path.join(tree, "moved.py")))
print("\\n".join(out))
"""


@pytest.mark.skipif(landlock.abi() is None,
                    reason="no Landlock barrier (this kernel, or SUPERQODE_LANDLOCK=off): "
                    "a session can write any folder")
def test_a_sessions_process_cannot_write_the_early_verification_tree(make_repo, tmp_path):
    repo = make_repo({"pkg/__init__.py": "", "pkg/a.py": "import os\n", "pkg/b.py": "import re\n"})
    user = tmp_path / "user secret.py"
    user.write_text("the user's own\n")
    with IsolatedSession.create_sync(repo) as s:
        s.private.mkdir(parents=True, exist_ok=True)
        dest = s.private / "verify-early-test"
        dest.mkdir()
        tree = build_tree(s.sandbox, ["pkg/a.py"], dest)
        assert tree is not None
        assert not any(Path(tree).is_relative_to(w) for w in s.writable())
        env = s.env()
        res = subprocess.run(supervise([sys.executable, "-c", _TRY, str(tree), str(user)], env),
                             cwd=s.sandbox, check=False, env=env, capture_output=True, text=True,
                             timeout=60)
        assert res.returncode == 0, res.stderr
        lines = dict(line.split(": ", 1) for line in res.stdout.splitlines())
        assert lines["read"] == "done"  # the re-run reads it
        for name in ("overwrite", "unlink", "link", "plant", "retarget"):
            assert lines[name].startswith("refused"), (name, lines[name])
        assert (tree / "pkg" / "a.py").read_text() == "import os\n"
        assert not (tree / "pkg" / "a.py").is_symlink()
        assert sorted(p.name for p in (tree / "pkg").iterdir()) == ["__init__.py", "a.py", "b.py"]
    assert user.read_text() == "the user's own\n"


def test_a_fixed_file_swapped_for_a_link_while_the_tree_is_made_is_not_copied(tmp_path, monkeypatch):
    """The session's processes run while SuperQode makes the tree: a fixed
    file swapped for a link to the user's file between SuperQode's look and
    its copy gives no tree (nothing of it read through the link), and the
    step after the roles verifies those fixes itself."""
    import os
    import shutil

    from superqode_ls.qe import verify_early

    user = tmp_path / "user" / "secret.py"
    user.parent.mkdir()
    user.write_text("the user's own\n")
    sandbox = tmp_path / "sandbox"
    (sandbox / "pkg").mkdir(parents=True)
    (sandbox / "pkg" / "a.py").write_text("import os\n")
    real = shutil.copy2

    def swap_then_copy(src, dst, *, follow_symlinks=True):
        if os.path.basename(src) == "a.py" and not os.path.islink(src):
            os.unlink(src)
            os.symlink(user, src)  # as a process of the session would, meanwhile
        return real(src, dst, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(verify_early.shutil, "copy2", swap_then_copy)
    dest = tmp_path / "tree"
    dest.mkdir()
    assert build_tree(sandbox, ["pkg/a.py"], dest) is None
    assert not dest.exists() or not any(dest.rglob("*"))
    assert user.read_text() == "the user's own\n"
