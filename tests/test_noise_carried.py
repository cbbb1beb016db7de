"""An undefined name (F821) that a loop carries from one iteration to the
next is noise with the reason; a name nothing in the loop assigns stays."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from superqode_ls.models import Severity
from superqode_ls.qe.noise import FileLines, filter_findings
from tests.role_helpers import lint_finding

MODULE = """def merge(results):
    prev_ip = results[0][0]
    out = []
    for ip, when in results:
        if ip != prev_ip:
            out.append((prev_ip, prev_when))
            prev_ip = ip
        prev_when = when
    out.append((prev_ip, prev_when))
    return out


def typo(results):
    for ip, when in results:
        print(ip, whne)
"""


def _f821(line: int, name: str):
    return lint_finding("F821", "merge.py", line, severity=Severity.high,
                        message=f"Undefined name `{name}`")


@pytest.mark.skipif(shutil.which("ruff") is None and not (
    subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True).returncode
    == 0), reason="needs ruff")
def test_ruff_reports_the_carried_name_and_the_filter_calls_it_noise(tmp_path):
    (tmp_path / "merge.py").write_text(MODULE)
    ruff = shutil.which("ruff") or sys.executable
    args = [ruff] if ruff != sys.executable else [sys.executable, "-m", "ruff"]
    out = subprocess.run([*args, "check", "--select", "F821", "--output-format", "concise",
                          "--no-cache", "merge.py"], cwd=tmp_path, capture_output=True, text=True)
    assert "merge.py:6:" in out.stdout and "prev_when" in out.stdout, out.stdout
    found = filter_findings([_f821(6, "prev_when"), _f821(15, "whne")],
                            read_line=FileLines(tmp_path), threshold=0.0).findings
    at = {f.range.start_line: f for f in found}
    assert at[6].noise and "assigned later in the same loop (line 8)" in at[6].noise
    assert at[6].severity is Severity.low
    assert at[15].noise is None and at[15].severity is Severity.high
