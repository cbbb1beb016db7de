"""JSON Schema of the QR (QualityReport), published as ``docs/qr.schema.json``.

Regenerate after changing the models: ``python -m superqode_ls.qe.report.schema``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ...models import QualityReport

SCHEMA_ID = "urn:superqode-ls:qr:1.0"
DOC_PATH = Path(__file__).resolve().parents[3] / "docs" / "qr.schema.json"


def qr_json_schema() -> dict[str, Any]:
    schema = QualityReport.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "title": "SuperQode LS Quality Report (QR)",
        "description": (
            "One QE session: roles run with status and timings, findings, patches, "
            "summary by severity, verdict, verification of the user's tree, artifacts."
        ),
    }


def schema_text() -> str:
    return json.dumps(qr_json_schema(), indent=2, sort_keys=False) + "\n"


def main() -> int:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else DOC_PATH
    target.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
