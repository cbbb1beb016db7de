"""Report writers for a QE session's QualityReport (QR): JSON (the full QR,
schema in ``docs/qr.schema.json``), Markdown for people, SARIF 2.1.0 for code
scanning, and the verdict rule.

Each name is imported from its module when first asked for: the verdict's
rule (which ``superqe run`` reads before its session starts) does not pull in
the Markdown writer's noise ranking, and a run without ``--sarif`` never
imports the SARIF writer."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .json_report import read_json, write_json
    from .markdown import render_markdown
    from .sarif import to_sarif
    from .schema import qr_json_schema
    from .verdict import compute_verdict, fails

_MODULE = {
    "compute_verdict": "verdict",
    "fails": "verdict",
    "qr_json_schema": "schema",
    "read_json": "json_report",
    "render_markdown": "markdown",
    "to_sarif": "sarif",
    "write_json": "json_report",
}

__all__ = [
    "compute_verdict",
    "fails",
    "qr_json_schema",
    "read_json",
    "render_markdown",
    "to_sarif",
    "write_json",
]


def __getattr__(name: str) -> Any:
    module = _MODULE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
