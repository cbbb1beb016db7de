"""``ast.parse`` for every thread of the process, one at a time.

CPython 3.11 keeps the AST constructor's recursion depth in state shared by
all threads; two threads building ASTs at once (roles, the noise filter and
the sparse planner all parse in worker threads) can end one of them with
``SystemError: AST constructor recursion depth mismatch``, which failed
whole sessions. Parsing is milliseconds a file: one lock costs nothing that
shows."""

from __future__ import annotations

import ast
import contextlib
import threading
from collections.abc import Iterator
from typing import Any

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec", **kw: Any) -> Any:
    """``ast.parse``, serialized across threads (same arguments, same errors)."""
    with _LOCK:
        return ast.parse(source, filename, mode, **kw)


@contextlib.contextmanager
def serialized() -> Iterator[None]:
    """Hold the parse lock around an import that parses as it loads (acp's
    models read their field docstrings with ``ast.parse``, pydantic's
    ``use_attribute_docstrings``): a parse in another thread meanwhile
    failed the language server's role listing."""
    with _LOCK:
        yield
