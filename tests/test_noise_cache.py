"""The noise filter's results kept between runs (qe/noise_cache.py): the
same findings, settings and tree give the filter's own result without the
filter; any change of a file under the tree (one no finding names
included), of the findings or of the settings runs it again; what cannot be
trusted is read as nothing."""

from __future__ import annotations

import os
from pathlib import Path

from superqode_ls.models import Finding, Range, Severity
from superqode_ls.qe import noise_cache
from superqode_ls.qe.noise import FileLines, filter_findings

FILES = {
    "app/views.py": "import os\nimport sys\n\ndef run(cmd):\n    os.system(cmd)  # noqa: S605\n"
                    "    eval(cmd)\n",
    "tests/test_views.py": "def test_run():\n    assert True\n",
    "pyproject.toml": "[project]\nname = 'x'\n",
    ".git": "gitdir: /somewhere/worktrees/one\n",
}


def _tree(tmp_path: Path, files: dict[str, str] = FILES, name: str = "tree") -> Path:
    root = tmp_path / name
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _finding(rule: str, file: str, line: int, tool: str = "bandit", confidence: float = 0.9) -> Finding:
    return Finding(role="security_tester", tool=tool, rule_id=rule, title=rule, message=f"{rule} here",
                   severity=Severity.high, confidence=confidence, file=file,
                   range=Range(start_line=line, end_line=line)).with_stable_id()


FINDINGS = [
    _finding("B605", "app/views.py", 5),  # suppressed inline
    _finding("B307", "app/views.py", 6),
    _finding("B101", "tests/test_views.py", 2),  # test code: noise
    _finding("F401", "app/views.py", 2, tool="ruff", confidence=0.5),  # below the threshold
]
SETTINGS = {"threshold": 0.7, "path_classes": None, "baseline": None}


class Runs:
    """The filter, counted."""

    def __init__(self, root: Path, on_run=None):
        self.root, self.n, self.on_run = root, 0, on_run

    def __call__(self, findings: list[Finding]):
        self.n += 1
        result = filter_findings(findings, read_line=FileLines(self.root), threshold=0.7)
        if self.on_run is not None:
            self.on_run()
        return result


def _same(a, b) -> None:
    assert [f.model_dump() for f in a.findings] == [f.model_dump() for f in b.findings]
    assert [f.model_dump() for f in a.before_baseline] == [f.model_dump() for f in b.before_baseline]
    for k in noise_cache._COUNTS:
        assert getattr(a, k) == getattr(b, k), k


def _cached(project: Path, root: Path, runs: Runs, findings=FINDINGS, settings=SETTINGS):
    return noise_cache.cached(project, root, list(findings), settings, runs, files=10)


def test_an_unchanged_tree_gives_the_filters_own_result_without_the_filter(tmp_path):
    root = _tree(tmp_path)
    runs = Runs(root)
    first = _cached(tmp_path, root, runs)
    assert runs.n == 1 and first.suppressed == 1 and first.below_threshold == 1
    assert any(f.noise for f in first.findings)  # the test file's finding
    again = _cached(tmp_path, root, runs)
    assert runs.n == 1
    _same(again, first)
    # another sandbox of the same tree (git's line naming its own folder aside)
    other = _tree(tmp_path, {**FILES, ".git": "gitdir: /elsewhere/worktrees/two\n"}, name="other")
    _same(_cached(tmp_path, other, Runs(other)), first)


def test_any_change_runs_the_filter_again(tmp_path):
    root = _tree(tmp_path)
    runs = Runs(root)
    _cached(tmp_path, root, runs)
    (root / "pyproject.toml").write_text("[project]\nname = 'y'\n")  # named by no finding
    _cached(tmp_path, root, runs)
    assert runs.n == 2
    (root / "app" / "new.py").write_text("")
    _cached(tmp_path, root, runs)
    assert runs.n == 3
    (root / "app" / "new.py").unlink()
    (root / "app" / "pkg").mkdir()  # an empty folder is part of the tree
    _cached(tmp_path, root, runs)
    assert runs.n == 4
    (root / "app" / "pkg").rmdir()
    os.chmod(root / "app" / "views.py", 0o755)
    _cached(tmp_path, root, runs)
    assert runs.n == 5
    os.chmod(root / "app" / "views.py", 0o644)
    (root / "link").symlink_to("app")
    _cached(tmp_path, root, runs)
    assert runs.n == 6
    (root / "link").unlink()
    (root / ".git").write_text("not git's line\n")
    _cached(tmp_path, root, runs)
    assert runs.n == 7
    _cached(tmp_path, root, runs)  # this tree's result is kept
    assert runs.n == 7
    _cached(tmp_path, root, runs, findings=FINDINGS[:3])
    assert runs.n == 8
    _cached(tmp_path, root, runs, findings=[FINDINGS[0].model_copy(update={"confidence": 0.3}), *FINDINGS[1:]])
    assert runs.n == 9
    _cached(tmp_path, root, runs, settings={**SETTINGS, "threshold": 0.8})
    assert runs.n == 10
    _cached(tmp_path, root, runs, settings={**SETTINGS, "baseline": [("x", 1)]})
    assert runs.n == 11
    assert len(noise_cache._read(noise_cache.cache_file(tmp_path))) == noise_cache.MAX_ENTRIES


def test_a_file_changed_while_the_filter_read_it_is_never_kept(tmp_path):
    root = _tree(tmp_path)
    target = root / "app" / "views.py"
    original = target.read_bytes()
    stat = target.stat()

    def change_and_put_back() -> None:
        # the same bytes and times again: only the change time tells
        target.write_text("print('other')\n")
        target.write_bytes(original)
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    runs = Runs(root, on_run=change_and_put_back)
    _cached(tmp_path, root, runs)
    assert not noise_cache.cache_file(tmp_path).exists()
    _cached(tmp_path, root, runs)
    assert runs.n == 2


def test_a_stopped_filter_is_never_kept(tmp_path):
    root = _tree(tmp_path)

    def stopped(findings):
        result = filter_findings(findings, read_line=FileLines(root), threshold=0.7)
        result.unfiltered = 1
        return result

    noise_cache.cached(tmp_path, root, list(FINDINGS), SETTINGS, stopped, files=10)
    assert not noise_cache.cache_file(tmp_path).exists()


def test_what_cannot_be_trusted_is_read_as_nothing(tmp_path):
    root = _tree(tmp_path)
    runs = Runs(root)
    first = _cached(tmp_path, root, runs)
    path = noise_cache.cache_file(tmp_path)
    kept = path.read_text()
    for bad in ("", "{", "[]", '{"version": 1}', kept.replace(noise_cache.CODE, "0" * 64),
                kept.replace('"suppressed":1', '"suppressed":-1'),
                kept.replace('"findings":[', '"findings":[{"role": 1},', 1)):
        path.write_text(bad)
        n = runs.n
        _same(_cached(tmp_path, root, runs), first)
        assert runs.n == n + 1, bad[:40]
    # a link in place of the file is not followed
    planted = tmp_path / "planted.json"
    planted.write_text(kept)
    path.unlink()
    path.symlink_to(planted)
    n = runs.n
    _cached(tmp_path, root, runs)
    assert runs.n == n + 1


def test_a_fifo_or_a_tree_past_the_bounds_is_not_read(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    os.mkfifo(root / "pipe")  # listed by its kind, never opened
    runs = Runs(root)
    _cached(tmp_path, root, runs)
    _cached(tmp_path, root, runs)
    assert runs.n == 1
    assert not noise_cache.worth_it(4, None)  # the tree's size not known
    assert not noise_cache.worth_it(4, 33)  # a large tree for few findings: the walk would cost more
    assert noise_cache.worth_it(4, 32)
    monkeypatch.setattr(noise_cache, "MAX_FILES", 3)
    assert noise_cache.tree_state(root, contents=True) is None
    n = runs.n
    _cached(tmp_path, root, runs)
    assert runs.n == n + 1


def test_a_tree_too_large_for_its_findings_is_never_walked_whole(tmp_path):
    """At most ``FILES_A_FINDING`` entries a finding are read: past that the
    walk stops and the filter runs, so few findings in a large tree (the
    editor's file in a large repository) never pay a whole tree's read."""
    root = _tree(tmp_path)
    for n in range(20):
        (root / f"extra{n}.txt").write_text("x")
    one = FINDINGS[1:2]
    runs = Runs(root)
    for _ in range(2):
        noise_cache.cached(tmp_path, root, list(one), SETTINGS, runs, files=1)
    assert runs.n == 2 and not noise_cache.cache_file(tmp_path).exists()
    assert noise_cache.tree_state(root, contents=True, limit=8) is None
    assert noise_cache.tree_state(root, contents=True, limit=100) is not None
