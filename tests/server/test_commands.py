"""server/commands.py: what a Fix All says it did, in one line (the editor's
message, the same counts as the session's end and the report)."""

from __future__ import annotations

from superqode_ls.server.commands import fix_all_line


def result(**kw) -> dict:
    base = {"applied": 0, "files": [], "relFiles": [], "skipped": [], "counts": ""}
    return {**base, **kw}


def test_one_fix_two_fixes_and_where():
    assert fix_all_line(result()) == "applied 0 fixes."
    assert fix_all_line(result(applied=1, files=["/w/shop/a.py"], relFiles=["shop/a.py"],
                               counts="1 verified fix(es)")) == \
        "applied 1 fix (1 verified fix(es)) in shop/a.py."
    # Without relative names the paths are given as they are.
    assert fix_all_line(result(applied=2, files=["/w/a.py", "/w/b.py"])) == \
        "applied 2 fixes in /w/a.py, /w/b.py."


def test_what_was_skipped_is_named_with_its_reason():
    skipped = [{"rule": "F841", "file": "shop/catalog.py", "reason": "unsafe fix"},
               {"rule": "B105", "file": None, "reason": "changed since the run"}]
    line = fix_all_line(result(applied=1, files=["/w/a.py"], relFiles=["a.py"], skipped=skipped))
    assert line == ("applied 1 fix in a.py. Skipped 2: F841 in shop/catalog.py (unsafe fix); "
                    "B105 in ? (changed since the run).")
