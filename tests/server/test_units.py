"""Unit tests: conversion, position encodings, edit tracking, patches, settings, trust."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from superqode_ls.models import Evidence, Finding, Range, Severity
from superqode_ls.server import convert, patches, settings, tracking, trust
from superqode_ls.server.store import FindingStore, Tracked


def finding(**kw) -> Finding:
    base = dict(role="lint_tester", tool="ruff", rule_id="F401", title="unused import",
                message="`os` imported but unused", severity=Severity.medium, file="a.py",
                range=Range(start_line=2, start_col=1, end_line=2, end_col=3))
    base.update(kw)
    return Finding(**base).with_stable_id()


def tracked(sl, el=None, snippet=None, ec=5) -> Tracked:
    f = finding(snippet=snippet)
    return Tracked(finding=f, session_id="s", uri="file:///a.py", folder="/", sl=sl, sc=0,
                   el=sl if el is None else el, ec=ec)


# ---- convert ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "encoding,expected",
    [("utf-16", (10, 17)), ("utf-8", (13, 20)), ("utf-32", (9, 16))],
)
def test_columns_follow_the_negotiated_encoding(encoding, expected):
    # "é" is 1 UTF-16 unit / 2 UTF-8 bytes; "😀" is 2 UTF-16 units / 4 UTF-8 bytes.
    lines = ['s = "é😀"  PLANTED']
    col = lines[0].index("PLANTED")
    rng = convert.lsp_range(lines, 0, col - 1, 0, col + 6, encoding)
    assert (rng["start"]["character"], rng["end"]["character"]) == expected
    assert convert.from_client_col(lines, 0, expected[0], encoding) == col - 1


def test_model_range_is_one_based_exclusive_and_widened_when_empty():
    lines = ["import os", "x = 1"]
    assert convert.model_range_to_points(Range(start_line=1, start_col=8, end_line=1, end_col=10), lines) == (0, 7, 0, 9)
    # No end: to the end of the line; no range: the first line.
    assert convert.model_range_to_points(Range(start_line=2, start_col=1), lines) == (1, 0, 1, 5)
    assert convert.model_range_to_points(None, lines) == (0, 0, 0, 9)


def test_diagnostic_fields_follow_the_contract():
    f = finding(help_uri="https://docs.astral.sh/ruff/rules/unused-import",
                evidence=[Evidence(message="seen here", file="b.py", line=3)], severity=Severity.high)
    d = convert.to_diagnostic(f, session_id="qe-1", version=4, rng={"start": {}, "end": {}},
                              uri_for=lambda rel: f"file:///w/{rel}")
    # ruff's F401 is a Warning, as ruff's own server shows it, whatever the model rates it.
    assert d["source"] == "superqode" and d["code"] == "F401" and d["severity"] == 2
    assert d["codeDescription"] == {"href": "https://docs.astral.sh/ruff/rules/unused-import"}
    assert d["data"] == {"findingId": f.id, "sessionId": "qe-1", "version": 4}
    assert d["relatedInformation"][0]["location"]["uri"] == "file:///w/b.py"
    assert d["relatedInformation"][0]["location"]["range"]["start"]["line"] == 2
    assert d["message"] == "unused import: `os` imported but unused"
    stale = convert.to_diagnostic(f, session_id="x", version=None, rng={}, uri_for=str, stale=True)
    assert stale["message"].startswith("[stale")


@pytest.mark.parametrize(
    "kw,expected",
    [
        # ruff's lint rules: a Warning, whatever the severity model says...
        (dict(rule_id="F401", severity=Severity.low), 2),
        (dict(rule_id="E501", severity=Severity.info), 2),
        (dict(rule_id="F632", severity=Severity.high), 2),
        # ...but an undefined name, an unreadable file and a syntax error: Errors.
        (dict(rule_id="F821", severity=Severity.high), 1),
        (dict(rule_id="E902", severity=Severity.high), 1),
        (dict(rule_id="invalid-syntax", severity=Severity.high, category="syntax"), 1),
        # Noise stays a Hint, a ruff finding too.
        (dict(rule_id="F401", severity=Severity.low, noise="in tests code"), 4),
        (dict(rule_id="F821", severity=Severity.high, noise="in examples code"), 4),
        # Security keeps the model's mapping: bandit's, ruff's flake8-bandit rules,
        # and a ruff finding the model raised for another tool's rating.
        (dict(tool="bandit", rule_id="B105", severity=Severity.high), 1),
        (dict(tool="bandit", rule_id="B404", severity=Severity.info), 4),
        (dict(rule_id="S105", severity=Severity.high), 1),
        (dict(rule_id="S105", severity=Severity.medium, related_rules=["B105"]), 2),
        (dict(rule_id="E712", severity=Severity.high,
              severity_reason="high, as bandit B105 rates the same line"), 1),
        # Types keep theirs too.
        (dict(tool="mypy", rule_id="arg-type", severity=Severity.medium), 2),
        (dict(tool="mypy", rule_id="syntax", severity=Severity.high), 1),
    ],
)
def test_severity_follows_ruffs_server_for_lint_and_the_model_elsewhere(kw, expected):
    f = finding(**kw)
    assert convert.diagnostic_severity(f) == expected
    d = convert.to_diagnostic(f, session_id="s", version=None, rng={}, uri_for=str)
    assert d["severity"] == expected


def test_fix_all_takes_what_was_shown_and_leaves_the_hints():
    from superqode_ls.server import fixes

    def t(**kw) -> Tracked:
        return Tracked(finding=finding(**kw), session_id="s", uri="file:///a.py", folder="/",
                       sl=1, sc=0, el=1, ec=5)

    # An info-level ruff rule is a Warning now: shown, so Fix All takes it.
    assert fixes.shown(t(rule_id="I001", severity=Severity.info))
    # Noise is a Hint however the model rates it: never shown, never fixed by Fix All.
    assert not fixes.shown(t(rule_id="F401", severity=Severity.medium, noise="in examples code"))
    assert not fixes.shown(t(tool="bandit", rule_id="B404", severity=Severity.info))


def test_diagnostic_message_names_related_rules_and_severity_reason():
    f = finding(rule_id="B105", tool="bandit", title="Possible hardcoded password: '****'",
                message="B105 (hardcoded_password_string): Possible hardcoded password: '****'",
                related_rules=["secret-generic"], severity=Severity.medium,
                severity_reason="in tests ('tests/'): shown one level lower than high")
    assert convert.diagnostic_message(f).endswith(
        "Possible hardcoded password: '****' "
        "[also secret-generic] [medium: in tests ('tests/'): shown one level lower than high]")


# ---- tracking --------------------------------------------------------------------
def test_edit_above_shifts_edit_on_the_lines_marks_stale_edit_below_nothing():
    above, on, below = tracked(10), tracked(5), tracked(2)
    items = [above, on, below]
    # Insert two lines in the middle of line 5.
    assert tracking.apply_change(items, (5, 3), (5, 3), "x\ny\nz")
    assert on.stale and not above.stale and not below.stale
    assert above.sl == 12 and below.sl == 2


def test_whole_line_insert_and_delete_only_move():
    t = tracked(4)
    tracking.apply_change([t], (4, 0), (4, 0), "new line\n")  # insert above line 4
    assert (t.sl, t.stale) == (5, False)
    tracking.apply_change([t], (1, 0), (3, 0), "")  # delete lines 1-2
    assert (t.sl, t.stale) == (3, False)
    tracking.apply_change([t], (3, 0), (4, 0), "")  # delete the flagged line itself
    assert t.stale


def test_enter_at_the_end_of_a_flagged_line_keeps_it_and_moves_what_is_below():
    on = tracked(1, snippet="import os", ec=9)
    below = tracked(2, snippet="x = 1", ec=5)
    after = ["# top", "import os", "    ", "x = 1"]  # Enter (+ indent) typed after "import os"
    assert tracking.apply_change([on, below], (1, 9), (1, 9), "\n    ", after)
    assert (on.sl, on.stale) == (1, False)
    assert (below.sl, below.stale) == (3, False)
    # Enter in the middle of the flagged code does change it.
    mid = tracked(1, snippet="import os", ec=9)
    tracking.apply_change([mid], (1, 3), (1, 3), "\n", ["# top", "imp", "ort os", "x = 1"])
    assert mid.stale
    # Typing at its end changes the line; without the text after, no guess is made.
    typed = tracked(1, snippet="import os", ec=9)
    tracking.apply_change([typed], (1, 9), (1, 9), "x", ["# top", "import osx", "x = 1"])
    assert typed.stale
    blind = tracked(1, snippet="import os", ec=9)
    tracking.apply_change([blind], (1, 9), (1, 9), "\n")
    assert blind.stale


def test_exclusive_end_at_column_zero_does_not_cover_the_next_line():
    t = tracked(2, el=3, ec=0)
    tracking.apply_change([t], (3, 0), (3, 1), "X")
    assert not t.stale


def test_reanchor_moves_to_the_snippet_or_marks_stale():
    t = tracked(1, snippet="import os")
    assert tracking.reanchor([t], ["x = 1", "y = 2", "import os"], strict=True)
    assert t.sl == 2 and not t.stale
    gone = tracked(1, snippet="import os")
    tracking.reanchor([gone], ["x = 1", "import sys"], strict=True)
    assert gone.stale
    no_snippet = tracked(0)
    assert not tracking.reanchor([no_snippet], ["a"], strict=False) and not no_snippet.stale
    tracking.reanchor([no_snippet], ["a"], strict=True)
    assert no_snippet.stale


# ---- store -----------------------------------------------------------------------
def test_store_result_ids_change_with_content_and_scope_replacement():
    store = FindingStore()
    a = tracked(1)
    store.add(a)
    rid = store.result_id(a.uri)
    assert store.result_id(a.uri) == rid
    touched = store.replace_scope("/", None, [])
    assert a.uri in touched and store.visible(a.uri) == []
    assert store.result_id(a.uri) != rid


# ---- patches ---------------------------------------------------------------------
SRC = "".join(f"line {i}\n" for i in range(1, 21))
DIFF = textwrap.dedent(
    """\
    --- a/m.py
    +++ b/m.py
    @@ -9,3 +9,3 @@
     line 9
    -line 10
    +LINE TEN
     line 11
    """
)


def _apply(text: str, diff: str) -> str:
    fes = patches.file_edits(diff, lambda rel: text)
    return patches.apply_to_text(text, fes[0])


def test_patch_applies_where_it_was_made():
    out = _apply(SRC, DIFF)
    assert "LINE TEN\n" in out and "line 10\n" not in out and out.count("\n") == 20


def test_patch_is_reanchored_when_lines_were_added_above():
    moved = "new 1\nnew 2\nnew 3\n" + SRC
    fe = patches.file_edits(DIFF, lambda rel: moved)[0]
    assert fe.edits[0].start == 8 + 3
    assert patches.apply_to_text(moved, fe) == moved.replace("line 10\n", "LINE TEN\n")


def test_patch_is_refused_when_its_code_changed_and_fits_a_neighbours_change():
    # One context line changed (a neighbouring fix applied first): it fits,
    # anchored by the rest.
    neighbour = SRC.replace("line 11", "line eleven")
    (fe,) = patches.file_edits(DIFF, lambda rel: neighbour)
    assert patches.apply_to_text(neighbour, fe) == neighbour.replace("line 10\n", "LINE TEN\n")
    # The line it removes, or all its context, changed: refused.
    for changed in (SRC.replace("line 10", "line ten"),
                    SRC.replace("line 11", "line eleven").replace("line 9", "line nine")):
        with pytest.raises(patches.PatchError, match="changed since the run"):
            patches.file_edits(DIFF, lambda rel, changed=changed: changed)


def test_patch_for_a_missing_or_non_utf8_file_is_refused_and_garbage_is_malformed():
    with pytest.raises(patches.PatchError, match="not found or not UTF-8"):
        patches.file_edits(DIFF, lambda rel: None)
    with pytest.raises(patches.PatchError):
        patches.file_edits("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n garbage\n", lambda rel: "x\n")


def test_patch_keeps_crlf_and_a_missing_final_newline():
    text = "a\r\nb\r\nc"
    diff = "--- a/m\n+++ b/m\n@@ -2,2 +2,2 @@\n b\n-c\n\\ No newline at end of file\n+C\n\\ No newline at end of file\n"
    fe = patches.file_edits(diff, lambda rel: text)[0]
    assert patches.apply_to_text(text, fe) == "a\r\nb\r\nC"
    rng = patches.text_edit_range(fe, fe.edits[0], len)
    assert rng == {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 1}}


def test_split_lines_counts_like_lsp():
    assert patches.split_lines("a\x0cb\u2028c\r\nd\n") == ["a\x0cb\u2028c", "d"]


# ---- settings --------------------------------------------------------------------
def test_settings_accept_section_or_bare_and_reject_bad_values():
    s = settings.parse({"superqode": {"mode": "deep", "runOnSave": True}})
    assert s.mode == "deep" and s.runOnSave
    layered = settings.parse({"roles": ["lint_tester"]}, s)
    assert layered.mode == "deep" and layered.roles == ["lint_tester"]
    with pytest.raises(settings.SettingsError, match="superqode.mode"):
        settings.parse({"mode": "fast"})
    with pytest.raises(settings.SettingsError):
        settings.parse(["not", "an", "object"])


# ---- trust -----------------------------------------------------------------------
def test_trust_is_fail_closed_and_remembered(tmp_path):
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    assert not trust.is_trusted(project)
    assert trust.is_trusted(project / "sub", [str(project)])
    trust.remember(project)
    assert trust.is_trusted(project / "sub")
    data = json.loads(trust.store_path().read_text())
    assert data["folders"] == [os.path.realpath(project)]
    trust.store_path().write_text("{not json")
    assert not trust.is_trusted(project)  # a broken store trusts nothing
    assert not trust.is_trusted(tmp_path / "elsewhere", [str(project)])


def test_uri_for_keeps_findings_inside_their_folder(tmp_path):
    from superqode_ls.server.server import SuperQodeServer

    ls = SuperQodeServer()
    folder = str(tmp_path)
    assert ls.uri_for(folder, "pkg/a b.py").endswith("/pkg/a%20b.py")
    assert ls.uri_for(folder, "./pkg/../x.py").endswith(f"{tmp_path.name}/x.py")
    for outside in ("../evil.py", "/etc/passwd", "pkg/../../evil.py", ".."):
        assert ls.uri_for(folder, outside) is None


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


def test_count_reports_are_coalesced_and_the_latest_is_never_lost():
    """On the loop's own clock, moved by hand: how loaded the machine is
    (how long a burst takes, when a sleep wakes) changes nothing."""
    import asyncio
    from types import SimpleNamespace

    from superqode_ls.server import progress as progress_mod
    from superqode_ls.server.progress import RunProgress

    sent: list[str] = []
    arrived = asyncio.Event()

    def got(message: str) -> None:
        sent.append(message)
        arrived.set()

    wdp = SimpleNamespace(report=lambda token, value: got(value.message),
                          end=lambda token, value: got(f"end: {value.message}"), tokens={})
    ls = SimpleNamespace(work_done_progress=wdp)
    interval = progress_mod.COUNT_INTERVAL_S

    async def go():
        loop = asyncio.get_running_loop()
        clock = [loop.time()]
        loop.time = lambda: clock[0]  # type: ignore[method-assign]  # timers follow it too

        async def after(seconds: float) -> None:
            """Move the clock on and let every timer due by then run."""
            clock[0] += seconds
            for _ in range(3):  # the timer's turn comes after ours in one loop pass
                await asyncio.sleep(0)

        p = RunProgress(ls, "t", lambda: None)
        p.active = True
        for n in range(1, 501):  # a role's findings in one burst
            p.report(f"{n} finding(s)", now=False)
        assert sent == ["1 finding(s)"]
        arrived.clear()
        clock[0] += interval
        await arrived.wait()  # the pending count's timer fires once the interval is up
        assert sent == ["1 finding(s)", "500 finding(s)"]  # the latest, never an older one
        await after(2 * interval)
        p.report("501 finding(s)", now=False)  # a quiet while since the last one: at once
        p.report("502 finding(s)", now=False)
        p.report("role ok", now=True)  # role start/complete never wait, and supersede counts
        await after(2 * interval)
        assert sent[2:] == ["501 finding(s)", "role ok"]
        p.report("503 finding(s)", now=False)
        p.report("504 finding(s)", now=False)
        p.end("done")  # nothing pending fires after the end
        await after(2 * interval)
        assert sent[4:] == ["503 finding(s)", "end: done"]

    asyncio.run(go())


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
