"""Every feature of the language server, registered in one place.

A feature is a module with ``register(ls)``: it adds its LSP handlers and, if
it needs to act when the client is up, an ``on_initialized`` hook. Features do
not import one another; what they share lives on ``SuperQodeServer``.
"""

from __future__ import annotations

from . import (
    asker,
    code_actions,
    commands,
    diagnostics,
    documents,
    hover,
    lifecycle,
    recovery_prompt,
    worktrees,
)
from .server import SuperQodeServer

FEATURES = (
    lifecycle,  # initialize, settings, folders, shutdown
    documents,  # sync, findings following edits, runOnSave
    diagnostics,  # pull diagnostics
    code_actions,  # quick fixes, fix all, run QE on a file
    hover,
    commands,  # superqode.* session commands
    worktrees,  # superqode.*Worktree(s)
    # on_initialized hooks run in this order: the asker is in place before a
    # resumed session could ask anything.
    asker,  # agent permission prompts
    recovery_prompt,  # interrupted sessions offered at start
)


def create_server() -> SuperQodeServer:
    server = SuperQodeServer()
    for feature in FEATURES:
        feature.register(server)
    return server
