"""The QR as JSON: ``qr-<date>-<session>.json``, the full QualityReport.

The layout is published as a JSON Schema in ``docs/qr.schema.json``
(``schema.qr_json_schema()``).
"""

from __future__ import annotations

from ...models import QualityReport, summarize


def write_json(report: QualityReport) -> str:
    """The report as indented JSON (summary filled if the caller left it empty)."""
    if not report.summary:
        report = report.model_copy(update={"summary": summarize(report.findings)})
    return report.model_dump_json(indent=2) + "\n"


def read_json(text: str) -> QualityReport:
    return QualityReport.model_validate_json(text)
