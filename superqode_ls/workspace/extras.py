"""SuperQode's optional extras: which one brings each package a role needs
beyond the lean install, and the one line that says so when it is missing.

The base package holds what the editor and quick mode need (ruff, bandit,
the secrets scan, the language server, the sandbox). ``[deep]`` brings the
tools of the roles that run or type-check the project's code and the
project-environment builder; ``[agents]`` the model provider and ACP.
pyproject.toml declares the same split (tests/test_install.py checks that
the two agree).
"""

from __future__ import annotations

import importlib.util

# Importable name -> (distribution, extra).
EXTRAS: dict[str, tuple[str, str]] = {
    "mypy": ("mypy", "deep"),
    "pytest": ("pytest", "deep"),
    "coverage": ("coverage", "deep"),
    "hypothesis": ("hypothesis", "deep"),
    "black": ("black", "deep"),
    "uv": ("uv", "deep"),
    "httpx": ("httpx", "agents"),
    "jsonschema": ("jsonschema", "agents"),
    "acp": ("agent-client-protocol", "agents"),
}


def needs(module: str) -> str:
    """``needs mypy: pip install 'superqode-ls[deep]'``: why a role cannot
    run, naming the extra that brings ``module``."""
    dist, extra = EXTRAS[module]
    return f"needs {dist}: pip install 'superqode-ls[{extra}]'"


def lacking(*modules: str) -> str | None:
    """``needs(m)`` for the first of ``modules`` SuperQode's own environment
    cannot import, or None when it has them all."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            return needs(module)
    return None
