"""SuperQode's analyzers read the sandbox's files in its own process while
the session's processes still run there: a file swapped for a link after
the walk must not be followed out of the sandbox, and a FIFO named like a
module must not hang the scan."""

from __future__ import annotations

import os
import threading

from superqode_ls.qe.roles._common import SourceCache


def test_a_link_or_a_fifo_in_the_sandbox_is_not_read(tmp_path):
    outside = tmp_path / "home" / "secret.txt"
    outside.parent.mkdir()
    outside.write_text("password = 'hunter2hunter2'\n")
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "a.py").write_text("x = 1\n")
    (sandbox / "link.py").symlink_to(outside)
    os.mkfifo(sandbox / "fifo.py")
    cache = SourceCache(sandbox)
    got: dict[str, str | None] = {}

    def read() -> None:
        for rel in ("a.py", "link.py", "fifo.py"):
            got[rel] = cache.text(rel)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(30)
    if reader.is_alive():  # (the old open() blocks on the FIFO for ever)
        with open(sandbox / "fifo.py", "w"):
            pass  # unblock it so the thread ends
        reader.join(5)
    assert got == {"a.py": "x = 1\n", "link.py": None, "fifo.py": None}, got
