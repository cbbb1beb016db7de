"""unified_diff's direct one-hunk path (large trees: thousands of fixes)
gives diffs git applies to exactly the fixed text, including duplicate lines
near the change, files without a final newline and CRLF lines."""

from __future__ import annotations

import random
import subprocess

import pytest

from superqode_ls.qe.roles._patches import unified_diff

POOL = ["a", "b", "x = 1", "", "def f():", "    return 2", "c\r"]


def _cases(n: int, seed: int = 7):
    rng = random.Random(seed)
    for _ in range(n):
        lines = [rng.choice(POOL) for _ in range(rng.randint(0, 30))]
        old = "\n".join(lines) + rng.choice(["", "\n"])
        new_lines = old.split("\n")
        for _ in range(rng.randint(1, 3)):
            i = rng.randint(0, len(new_lines))
            r = rng.random()
            if r < 0.4 and new_lines:
                new_lines[min(i, len(new_lines) - 1)] = f"CHANGED {rng.randint(0, 9)}"
            elif r < 0.7:
                new_lines.insert(i, rng.choice(POOL + ["NEW"]))
            elif new_lines:
                del new_lines[min(i, len(new_lines) - 1)]
        new = "\n".join(new_lines)
        if rng.random() < 0.2:
            new = new.rstrip("\n")
        yield old, new


def test_direct_hunks_apply_with_git(tmp_path):
    applied = 0
    for k, (old, new) in enumerate(_cases(120)):
        diff = unified_diff("m.py", old, new)
        if old == new:
            assert diff == ""
            continue
        (tmp_path / "m.py").write_bytes(old.encode())
        proc = subprocess.run(["git", "apply", "-p1", "-"], cwd=tmp_path, input=diff.encode(),
                              capture_output=True, check=False,
                              env={"GIT_CEILING_DIRECTORIES": str(tmp_path.parent), "PATH": "/usr/bin:/bin"})
        assert proc.returncode == 0, (k, old, new, diff, proc.stderr)
        assert (tmp_path / "m.py").read_bytes() == new.encode(), (k, diff)
        applied += 1
    assert applied > 100


def test_one_line_change_in_a_long_file_has_full_context():
    old = "".join(f"line {i}\n" for i in range(1000))
    diff = unified_diff("m.py", old, old.replace("line 500\n", "LINE\n"))
    assert "@@ -498,7 +498,7 @@" in diff
    assert diff.count("\n ") == 6 and "-line 500\n+LINE\n" in diff


def test_a_trusted_model_is_the_validated_one():
    from pydantic import ValidationError

    from superqode_ls.models import Finding, Patch, Range, Severity
    from superqode_ls.qe.roles._patches import trusted

    values = {"role": "lint_tester", "tool": "ruff", "rule_id": "F401", "title": "t", "message": "m",
              "severity": Severity.low, "confidence": 0.9, "file": "a.py", "tags": ["ruff"],
              "range": {"start_line": 2, "start_col": 1, "end_line": 2, "end_col": 5}}
    made = trusted(Finding, {**values, "range": trusted(Range, values["range"])})
    checked = Finding(**values)
    assert made == checked and made.model_dump_json() == checked.model_dump_json()
    assert made.model_fields_set == checked.model_fields_set
    assert made.range.model_fields_set == checked.range.model_fields_set
    # Defaults made by a factory are the model's own, never shared.
    other = trusted(Finding, {**values, "range": None})
    made.evidence.append("x")
    assert other.evidence == [] and Finding.model_fields["evidence"].default_factory() == []
    made.id = "f401-1"  # assignment works as on a validated model
    assert "id" in made.model_fields_set
    # A required field missing: validated as usual, and refused.
    with pytest.raises(ValidationError):
        trusted(Patch, {"id": "fix-1", "description": "d"})
