"""Report writers for a QE session's QualityReport (QR): JSON (the full QR,
schema in ``docs/qr.schema.json``), Markdown for people, SARIF 2.1.0 for code
scanning, and the verdict rule."""

from __future__ import annotations

from .json_report import read_json, write_json
from .markdown import render_markdown
from .sarif import to_sarif
from .schema import qr_json_schema
from .verdict import compute_verdict, fails

__all__ = [
    "compute_verdict",
    "fails",
    "qr_json_schema",
    "read_json",
    "render_markdown",
    "to_sarif",
    "write_json",
]
