"""workspace/pyast.py: every AST the process builds is built under one lock
(CPython 3.11 keeps the AST constructor's recursion depth in state shared by
all threads), and so is the import of acp, whose models parse their own
source as they are defined."""

from __future__ import annotations

import sys
import threading

import pytest

from superqode_ls.workspace import pyast


def test_serialized_holds_the_lock_every_parse_takes():
    with pyast.serialized():
        assert not pyast._LOCK.acquire(blocking=False)
    assert pyast._LOCK.acquire(blocking=False)
    pyast._LOCK.release()
    assert pyast.parse("x = 1").body[0].targets[0].id == "x"


class _Recording:
    """A lock that notes, for each hold, whether acp's schema was loaded
    before it was taken and after it was let go."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.holds: list[tuple[bool, bool]] = []

    def __enter__(self) -> None:
        self._lock.acquire()
        self._before = "acp.schema" in sys.modules

    def __exit__(self, *exc) -> None:
        self.holds.append((self._before, "acp.schema" in sys.modules))
        self._lock.release()


def test_acps_models_are_defined_under_the_lock(monkeypatch):
    """acp_worker imports acp (whose models parse their source as they are
    defined) holding the lock every parse takes."""
    pytest.importorskip("acp")
    saved = {k: v for k, v in sys.modules.items()
             if k == "acp" or k.startswith("acp.") or k == "superqode_ls.agent.acp_worker"}
    recording = _Recording()
    monkeypatch.setattr(pyast, "_LOCK", recording)
    try:
        for k in saved:
            del sys.modules[k]
        import superqode_ls.agent.acp_worker  # noqa: F401

        assert (False, True) in recording.holds  # loaded while held
    finally:
        for k in [k for k in sys.modules if k == "acp" or k.startswith("acp.")]:
            del sys.modules[k]
        sys.modules.update(saved)
