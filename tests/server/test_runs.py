"""server/runs.py: what a run asks of the engine, and how its events reach the editor."""

from __future__ import annotations

from superqode_ls.server import settings


def test_session_request_carries_buffers_settings_and_trust(tmp_path):
    from superqode_ls.server.registry import Run
    from superqode_ls.server.runs import build_request
    from superqode_ls.server.server import SuperQodeServer

    ls = SuperQodeServer()
    folder = str(tmp_path)
    ls.folder_settings[folder] = settings.parse({"isolation": "snapshot", "provider": "local-llm"})
    run = Run(id="qe-x", folder=folder, files=["a.py"], mode="deep", roles=None, trigger="command",
              overlays={"a.py": b"unsaved\n"})
    req = build_request(ls, run, ["lint_tester"], False)
    assert req.project == tmp_path and req.mode == "deep" and req.files == ["a.py"]
    assert req.overlays == {"a.py": b"unsaved\n"} and req.trusted is False
    assert req.isolation == "snapshot" and req.roles == ["lint_tester"]
    assert req.config_overrides == {"agent": {"provider": "local-llm"}}
    ls.folder_settings[folder] = settings.Settings()
    assert build_request(ls, run, None, True).config_overrides == {}


def test_the_interpreter_line_reaches_the_editor_at_once_and_its_log():
    from types import SimpleNamespace

    from superqode_ls.server.runs import _on_event

    logged: list[str] = []
    shown: list[tuple[str, bool]] = []
    ls = SimpleNamespace(log=logged.append)
    progress = SimpleNamespace(status=lambda: "1/3 roles done",
                               report=lambda msg, now=True: shown.append((msg, now)))
    line = "environment: tests: .venv/bin/python 3.12"
    _on_event(ls, None, progress, SimpleNamespace(type="progress", data={"message": line}))
    _on_event(ls, None, progress, SimpleNamespace(type="progress", data={"message": "mutant 3"}))
    assert logged == [f"SuperQode {line}"]
    assert shown == [(f"{line}; 1/3 roles done", True), ("mutant 3; 1/3 roles done", False)]
    # The engine's role count is the status's own words: not said twice.
    shown.clear()
    count = {"message": "1/3 roles done", "done": 1, "total": 3}
    _on_event(ls, None, progress, SimpleNamespace(type="progress", data=count))
    fixes = {"message": "verifying fixes: 1 of 2", "done": 1, "total": 2}
    _on_event(ls, None, progress, SimpleNamespace(type="progress", data=fixes))
    assert shown == [("1/3 roles done", False), ("verifying fixes: 1 of 2; 1/3 roles done", False)]
