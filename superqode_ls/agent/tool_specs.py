"""What the agent's tools are, for the model: each tool's description and
JSON schema (``SCHEMAS``), offered in the OpenAI tools format
(``openai_tools``); ``tools.ToolBox`` validates every call against them."""

from __future__ import annotations

from typing import Any

from ..models import Severity

_S = {"type": "string"}
_I = {"type": "integer", "minimum": 1}

SCHEMAS: dict[str, dict[str, Any]] = {
    "read_file": {
        "description": "Read a text file of the project (lines are numbered in the answer).",
        "properties": {"path": _S, "start_line": _I, "end_line": _I},
        "required": ["path"],
    },
    "list_files": {
        "description": "List files under a directory of the project (recursive).",
        "properties": {"path": _S},
        "required": [],
    },
    "search": {
        "description": "Search the project's text files with a Python regular expression.",
        "properties": {"pattern": _S, "path": _S, "glob": _S},
        "required": ["pattern"],
    },
    "write_file": {
        "description": "Create or overwrite a file in the sandbox copy of the project.",
        "properties": {"path": _S, "content": _S},
        "required": ["path", "content"],
    },
    "edit_file": {
        "description": "Replace one exact, unique occurrence of old_text with new_text.",
        "properties": {"path": _S, "old_text": _S, "new_text": _S},
        "required": ["path", "old_text", "new_text"],
    },
    "run_shell": {
        "description": "Run a shell command in the sandbox root (git push and edits outside "
        "the sandbox are refused). Returns exit code, stdout and stderr.",
        "properties": {"command": _S, "timeout": {"type": "number", "exclusiveMinimum": 0}},
        "required": ["command"],
    },
    "report_finding": {
        "description": "Report one confirmed problem with evidence. Returns its finding_id.",
        "properties": {
            "file": _S,
            "start_line": _I,
            "end_line": _I,
            "severity": {"enum": [s.value for s in Severity]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "title": _S,
            "message": _S,
            "evidence": {"oneOf": [_S, {"type": "array", "items": _S}]},
            "rule_id": _S,
            "category": _S,
            "reproducer": {
                "type": "string",
                "description": "A shell command that fails while the problem exists.",
            },
        },
        "required": ["file", "start_line", "severity", "confidence", "title", "evidence"],
    },
    "propose_fix": {
        "description": "Turn your edits so far into a patch for the user (optionally only "
        "some files), linked to findings you reported.",
        "properties": {
            "description": _S,
            "finding_ids": {"type": "array", "items": _S},
            "files": {"type": "array", "items": _S},
        },
        "required": ["description"],
    },
}
TOOL_NAMES = tuple(SCHEMAS)


def openai_tools() -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": spec["description"],
                "parameters": {
                    "type": "object",
                    "properties": spec["properties"],
                    "required": spec["required"],
                    "additionalProperties": False,
                },
            },
        }
        for name, spec in SCHEMAS.items()
    ]
