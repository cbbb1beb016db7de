""""Ignore on this line" writes the comment the rule's own tool reads, so the
tool itself (ruff, bandit, mypy in CI) stays quiet, never a comment that
breaks the line length (then the baseline), and never an action that is the
default. The real tools judge the edited files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.server import ignore
from superqode_ls.server.ignore import FolderLimits, comment_change, comment_limit, line_change

BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    exe = BIN / name
    if not exe.exists():
        pytest.skip(f"{name} is not installed beside the interpreter")
    return str(exe)


def apply(lines: list[str], row: int, tool_name: str, rule: str, limit: int | None = 88) -> list[str]:
    change = comment_change(lines, row, tool_name, rule, limit)
    assert change is not None, f"no comment for {rule}"
    start, end, new = change
    out = list(lines)
    out[row] = lines[row][:start] + new + lines[row][end:]
    return out


def ruff_codes(tmp_path: Path, lines: list[str], *select: str) -> list[tuple[str, int]]:
    f = tmp_path / "mod.py"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = subprocess.run([tool("ruff"), "check", "--isolated", "--output-format=json",
                          "--select", ",".join(select), str(f)],
                         capture_output=True, text=True, check=False, cwd=tmp_path)
    return [(d["code"], d["location"]["row"]) for d in json.loads(res.stdout)]


def bandit_codes(tmp_path: Path, lines: list[str]) -> list[tuple[str, int]]:
    f = tmp_path / "mod.py"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = subprocess.run([tool("bandit"), "-q", "-f", "json", str(f)],
                         capture_output=True, text=True, check=False, cwd=tmp_path)
    return [(r["test_id"], r["line_number"]) for r in json.loads(res.stdout)["results"]]


def test_f401_gets_noqa_that_ruff_honours_and_no_e501(tmp_path: Path):
    lines = ["import os", "import sys  # noqa: E402", "import re  # kept for plugins", "print(1)"]
    assert ruff_codes(tmp_path, lines, "F401", "E501") == [("F401", 1), ("F401", 2), ("F401", 3)]
    edited = apply(apply(apply(lines, 0, "ruff", "F401"), 1, "ruff", "F401"), 2, "ruff", "F401")
    assert edited[:3] == ["import os  # noqa: F401", "import sys  # noqa: E402, F401",
                          "import re  # kept for plugins  # noqa: F401"]
    assert ruff_codes(tmp_path, edited, "F401", "E501") == []


def test_a_comment_that_would_overflow_goes_nowhere(tmp_path: Path):
    long = "import os" + " " * 0 + "  # " + "x" * 70  # 83 columns: fits, a noqa would not
    assert comment_change([long], 0, "ruff", "F401", 88) is None
    assert comment_change([long], 0, "ruff", "F401", 120) is not None
    # A line that is already too long takes the one comment made for it.
    assert comment_change(["x = '" + "y" * 100 + "'"], 0, "ruff", "E501", 88) is not None


def test_only_checkers_that_count_comments_set_a_limit(tmp_path: Path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    f = tmp_path / "pkg" / "sub" / "m.py"
    f.write_text("x = 1\n")
    assert comment_limit(tmp_path, f) is None  # nothing configured
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    assert comment_limit(tmp_path, f) is None  # ruff leaves pragma comments out
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n[tool.black]\n")
    assert comment_limit(tmp_path, f) == 88  # black counts them, at its default
    (tmp_path / "pkg" / "setup.cfg").write_text("[flake8]\nmax-line-length = 120\n")
    assert comment_limit(tmp_path, f) == 88  # the shortest of those configured
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert comment_limit(tmp_path, f) == 120
    (tmp_path / "pkg" / "sub" / "tox.ini").write_text("[pycodestyle]\n")
    assert comment_limit(tmp_path, f) == 79  # pycodestyle's default
    (tmp_path / "pkg" / "sub" / "tox.ini").write_text("[pycodestyle\n")
    assert comment_limit(tmp_path, f) == 120  # a broken one is skipped


def test_the_limits_are_read_again_only_when_a_config_file_changes(tmp_path: Path, monkeypatch):
    # Editors ask for code actions at each cursor move: an unchanged
    # setup.cfg / pyproject.toml is not parsed again; any change is seen.
    reads: list[str] = []
    ini, pyproject = ignore._ini_limits, ignore._pyproject_limits
    monkeypatch.setattr(ignore, "_ini_limits", lambda p, s: reads.append(p.name) or ini(p, s))
    monkeypatch.setattr(ignore, "_pyproject_limits", lambda p: reads.append(p.name) or pyproject(p))
    (tmp_path / "pkg").mkdir()
    f = tmp_path / "pkg" / "m.py"
    f.write_text("x = 1\n")
    cfg = tmp_path / "setup.cfg"
    cfg.write_text("[flake8]\nmax-line-length = 120\n")
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    assert comment_limit(tmp_path, f) == 120
    assert sorted(reads) == ["pyproject.toml", "setup.cfg"]
    for _ in range(3):
        assert comment_limit(tmp_path, f) == 120
    assert len(reads) == 2  # nothing read again
    # The same size, a later save (set explicitly: two writes may share a clock tick).
    cfg.write_text("[flake8]\nmax-line-length = 110\n")
    st = cfg.stat()
    os.utime(cfg, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert comment_limit(tmp_path, f) == 110
    assert reads.count("setup.cfg") == 2  # its folder read once more
    cfg.write_text("[flake8]\nmax-line-length = 99\n")  # another size
    assert comment_limit(tmp_path, f) == 99
    # Replaced by a rename, as editors save: another inode, same size and time.
    new = tmp_path / "setup.new"
    new.write_text("[flake8]\nmax-line-length = 98\n")
    os.utime(new, ns=(cfg.stat().st_atime_ns, cfg.stat().st_mtime_ns))
    new.replace(cfg)
    assert comment_limit(tmp_path, f) == 98
    # A file that appears in a folder on the way, and one that goes.
    (tmp_path / "pkg" / "tox.ini").write_text("[pycodestyle]\n")
    assert comment_limit(tmp_path, f) == 79
    (tmp_path / "pkg" / "tox.ini").unlink()
    cfg.unlink()
    assert comment_limit(tmp_path, f) is None
    (tmp_path / "pyproject.toml").write_text("[tool.black]\n")
    assert comment_limit(tmp_path, f) == 88


def test_the_folder_limits_are_bounded(tmp_path: Path):
    held = FolderLimits(bound=2)
    for n in range(5):
        d = tmp_path / f"d{n}"
        d.mkdir()
        (d / "setup.cfg").write_text(f"[flake8]\nmax-line-length = {100 + n}\n")
        assert held.limits(d) == [100 + n]
    assert len(held._held) == 2
    assert held.limits(tmp_path / "d0") == [100]  # gone, read again


def test_a_long_line_under_ruff_takes_the_comment_and_ci_stays_quiet(tmp_path: Path):
    # 86 columns of code: a "# nosec B602" takes it to 100. ruff measures the
    # line without the pragma (no E501), and bandit in CI reads only the comment.
    code = '    return subprocess.run("ssh " + host + " deploy", shell=True, env={"PW": password})'
    lines = ["import subprocess", "", "", "def deploy(host, password):", code]
    assert len(code) == 86
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 88\n")
    limit = comment_limit(tmp_path, tmp_path / "mod.py")
    assert limit is None
    edited = apply(lines, 4, "bandit", "B602", limit)
    assert edited[4] == code + "  # nosec B602"
    assert [c for c, _ in bandit_codes(tmp_path, edited) if c == "B602"] == []
    assert ruff_codes(tmp_path, edited, "E501", "W505") == []
    # Where flake8 judges the length, the same comment would be its E501: the baseline.
    (tmp_path / ".flake8").write_text("[flake8]\nmax-line-length = 88\n")
    assert comment_change(lines, 4, "bandit", "B602", comment_limit(tmp_path, tmp_path / "mod.py")) is None


def test_b602_gets_nosec_that_bandit_honours(tmp_path: Path):
    lines = ["import subprocess", "", "def run(cmd):",
             "    subprocess.call(cmd, shell=True)",
             "    subprocess.Popen(cmd, shell=True)  # nosec B404",
             "    return 1  # keep"]
    assert {c for c, _ in bandit_codes(tmp_path, lines)} >= {"B602"}
    edited = apply(apply(lines, 3, "bandit", "B602"), 4, "bandit", "B602")
    assert edited[3] == "    subprocess.call(cmd, shell=True)  # nosec B602"
    assert edited[4] == "    subprocess.Popen(cmd, shell=True)  # nosec B404, B602"
    assert [c for c, _ in bandit_codes(tmp_path, edited) if c == "B602"] == []


def test_one_problem_two_tools_gets_both_comments(tmp_path: Path):
    # bandit's B105 and ruff's S105 on one line are kept as one finding (S105
    # in related_rules): both tools must go quiet, or CI still fails.
    lines = ["def login():", "    password = 'hunter2'  # demo", "    return password"]
    assert ("B105", 2) in bandit_codes(tmp_path, lines)
    assert ruff_codes(tmp_path, lines, "S105") == [("S105", 2)]
    start, end, new, shown = line_change(lines, 1, [("bandit", "B105"), ("ruff", "S105"),
                                                    ("superqode-secrets", "secret-generic")], 88)
    edited = [lines[0], lines[1][:start] + new + lines[1][end:], lines[2]]
    assert edited[1] == "    password = 'hunter2'  # demo  # nosec B105  # noqa: S105"
    assert shown == "# nosec B105  # noqa: S105"
    assert [c for c, _ in bandit_codes(tmp_path, edited) if c == "B105"] == []
    assert ruff_codes(tmp_path, edited, "S105", "E501") == []
    # One of them cannot fit: no comment at all (the baseline), never half an ignore.
    assert line_change(lines, 1, [("bandit", "B105"), ("ruff", "S105")], 50) is None


def test_mypy_comment_goes_first_on_the_line(tmp_path: Path):
    lines = ["x: int = 'a'  # the answer"]
    (edited,) = apply(lines, 0, "mypy", "assignment")
    assert edited == "x: int = 'a'  # type: ignore[assignment]  # the answer"
    f = tmp_path / "m.py"
    f.write_text(edited + "\n")
    res = subprocess.run([tool("mypy"), "--no-incremental", "--warn-unused-ignores", str(f)],
                         capture_output=True, text=True, check=False, cwd=tmp_path)
    assert res.returncode == 0, res.stdout
    assert apply(["y = f()  # type: ignore[attr-defined]"], 0, "mypy", "call-arg") == [
        "y = f()  # type: ignore[attr-defined, call-arg]"]


@pytest.mark.parametrize("lines,row,tool_name,rule", [
    (["password = 'hunter2'"], 0, "superqode-secrets", "secret-password"),  # no comment of its own
    (["def test_x():", "    assert 0"], 1, "pytest", "test-failure"),
    (["s = '''a", "b''' + os.sep"], 0, "ruff", "F821"),  # the comment would become text
    (["q = f'''select", "{x}'''"], 0, "bandit", "B608"),
    (["x = 1 + \\", "    2"], 0, "ruff", "F821"),  # after a backslash: a syntax error
    (["import os  # noqa"], 0, "ruff", "F401"),  # silenced already
    (["import os  # noqa: F401"], 0, "ruff", "F401"),
    (["x = 1"], 0, "mypy", "syntax"),
])
def test_no_comment_where_none_can_work(lines, row, tool_name, rule):
    assert comment_change(lines, row, tool_name, rule, 88) is None
