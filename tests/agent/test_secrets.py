"""API keys never appear in events, logs or artifacts: a full pipeline run
where the provider echoes the key back in every way it can, then a grep of
everything SuperQode wrote."""

from __future__ import annotations

import logging
import secrets

from superqode_ls.events import EventBus
from superqode_ls.qe.pipeline import QERequest, QESession

from .conftest import VENV_BIN, provider_entry

CALC = "def double(x):\n    return x + x + 1\n"


async def test_key_never_written_anywhere(make_repo, scripted, monkeypatch, caplog, tmp_path):
    key = "sk-sqtest-" + secrets.token_hex(16)
    monkeypatch.setenv("SQ_TEST_API_KEY", key)
    monkeypatch.setenv("PATH", VENV_BIN + ":" + __import__("os").environ["PATH"])
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    caplog.set_level(logging.DEBUG)
    server = scripted(
        [
            {"status": 500, "body": "upstream rejected header {auth}"},
            {
                "tool_calls": [
                    {
                        "name": "run_shell",
                        "arguments": {"command": "env; echo key=$SQ_TEST_API_KEY"},
                    }
                ]
            },
            {
                "tool_calls": [
                    {
                        "name": "write_file",
                        "arguments": {"path": "settings.py", "content": "API_KEY = '{{key}}'\n"},
                    }
                ]
            },
            {
                "tool_calls": [
                    {
                        "name": "report_finding",
                        "arguments": {
                            "file": "calc.py",
                            "start_line": 2,
                            "severity": "low",
                            "confidence": 0.8,
                            "title": "double() adds one ({{key}})",
                            "message": "seen with {{key}}",
                            "evidence": ["Authorization: Bearer {{key}}"],
                        },
                    }
                ]
            },
            {
                "tool_calls": [
                    {
                        "name": "propose_fix",
                        "arguments": {
                            "description": "store {{key}}",
                            "finding_ids": ["{{finding_id}}"],
                        },
                    }
                ]
            },
            {"content": "The key is {{key}}."},
        ],
        vars={"key": key},
    )
    project = make_repo({"calc.py": CALC})
    overrides = {
        "providers": [provider_entry(server, api_key_env="SQ_TEST_API_KEY")],
        "agent": {"permissions": {"run_shell": "allow"}},
    }
    bus = EventBus()
    lines: list[str] = []
    bus.subscribe(lambda e: lines.append(e.to_json()))
    session = QESession(
        QERequest(
            project=project,
            mode="deep",
            roles=["agent_security_tester"],
            config_overrides=overrides,
        ),
        bus=bus,
    )
    report = await session.run()

    # The key was used (so the test means something)...
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {key}"
    assert server.remaining == 0
    # ...and the shell never had it to print.
    shell_result = server.requests[2]["body"]["messages"][-1]["content"]
    assert "key=\n" in shell_result or shell_result.rstrip().endswith("key=")
    assert key not in shell_result

    written: list[tuple[str, str]] = [
        ("events", "\n".join(lines)),
        ("logs", caplog.text),
        ("report", report.model_dump_json()),
    ]
    for p in sorted((project / ".superqode").rglob("*")):
        if p.is_file():
            written.append((str(p), p.read_text(encoding="utf-8", errors="replace")))
    assert any("qe-artifacts/logs" in name for name, _ in written)  # the transcript exists
    for name, text in written:
        assert key not in text, f"API key leaked into {name}"
    assert "[REDACTED]" in "\n".join(lines)
    assert any(e.startswith('{"type":"tool_call"') for e in lines)
    [finding] = report.findings
    assert "[REDACTED]" in finding.title
