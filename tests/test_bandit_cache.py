"""bandit's results kept per file by SuperQode (``_bandit_cache``): a second
run of an unchanged project scans nothing again, a changed file is scanned
again, and an entry that does not hold what it claims is never used."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from superqode_ls.config import Config
from superqode_ls.qe.roles import _bandit_cache
from superqode_ls.qe.roles._bandit_cache import cache_dir, open_cache
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx

pytestmark = pytest.mark.skipif(tool_path("bandit") is None, reason="bandit is not installed")

SHELL = "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"
CLEAN = "def add(a, b):\n    return a + b\n"
PICKLE = "import pickle\n\n\ndef load(raw):\n    return pickle.loads(raw)\n"


def _run(ctx):
    """The role's findings and the files each bandit process it started was given."""
    out, calls = _bandit_calls(ctx)
    scanned = sorted(a.removeprefix("./") for argv in calls for a in argv[argv.index("--") + 1:])
    return out, scanned


def _bandit_keys(out):
    return sorted((f.id, f.file, f.range.start_line, f.severity) for f in out.findings
                  if f.tool == "bandit")


def _entries(project):
    return sorted(p for p in cache_dir(project).rglob("*.json"))


def test_a_second_run_scans_only_the_changed_file(make_repo):
    repo = make_repo({"a.py": SHELL, "b.py": CLEAN, "c.py": CLEAN})
    files = ["a.py", "b.py", "c.py"]
    first, scanned = _run(make_ctx(repo, files=files))
    assert scanned == files
    assert any(f.rule_id == "B602" and f.file == "a.py" for f in first.findings)
    project = make_ctx(repo).project
    assert len(_entries(project)) == 3

    again, scanned = _run(make_ctx(repo, files=files))
    assert scanned == []  # every file answered from the cache
    assert _bandit_keys(again) == _bandit_keys(first)

    (repo / "b.py").write_text(PICKLE)
    third, scanned = _run(make_ctx(repo, files=files))
    assert scanned == ["b.py"]
    assert any(f.rule_id == "B301" and f.file == "b.py" for f in third.findings)
    assert any(f.rule_id == "B602" and f.file == "a.py" for f in third.findings)


def test_a_whole_tree_in_batches_is_kept_batch_by_batch(make_repo):
    # Two bandit processes over a tree large enough for batches: the next
    # run of the whole tree starts none.
    body = "".join(f"value_{i} = {i} * 2\n" for i in range(1400))
    tree = {f"pkg/m{i:02d}.py": body for i in range(16)}
    tree["pkg/shell.py"] = SHELL
    repo = make_repo(tree)
    config = Config.model_validate({"execution": {"workers": 2}})
    first, scanned = _run(make_ctx(repo, config=config))
    assert len(scanned) == 17
    again, scanned = _run(make_ctx(repo, config=config))
    assert scanned == []
    assert _bandit_keys(again) == _bandit_keys(first)
    assert any(f.rule_id == "B602" for f in again.findings)


def test_an_entry_is_used_only_for_the_bytes_it_was_made_from(make_repo):
    repo = make_repo({"a.py": SHELL, "b.py": CLEAN})
    _run(make_ctx(repo, files=["a.py", "b.py"]))
    project = make_ctx(repo).project
    # An entry rewritten to say a.py is clean (as a planted one would) no
    # longer names what it was made from: a miss, and bandit runs again.
    for path in _entries(project):
        entry = json.loads(path.read_text())
        if entry["file"] == "a.py":
            entry["results"] = []
            entry["digest"] = "0" * 64
            path.write_text(json.dumps(entry))
    out, scanned = _run(make_ctx(repo, files=["a.py", "b.py"]))
    assert scanned == ["a.py"]
    assert any(f.rule_id == "B602" for f in out.findings)
    # Results of another file's, or not of bandit's shape: misses too.
    for path in _entries(project):
        entry = json.loads(path.read_text())
        if entry["file"] == "a.py":
            entry["results"] = [{**entry["results"][0], "filename": "./b.py"}]
        else:
            entry["results"] = [{"filename": "./b.py", "line_number": "1"}]
        path.write_text(json.dumps(entry))
    _, scanned = _run(make_ctx(repo, files=["a.py", "b.py"]))
    assert scanned == ["a.py", "b.py"]


def test_a_file_changed_while_bandit_reads_it_is_not_kept(make_repo):
    # A session's tests run beside bandit and may rewrite a file while it
    # is read: what bandit said is then kept under no digest.
    repo = make_repo({"a.py": SHELL, "b.py": CLEAN})
    bandit = tool_path("bandit")
    cache = open_cache(repo, repo, bandit, ["-f", "json", "-q"])
    assert cache is not None
    kept, todo = cache.split(["a.py", "b.py"])
    assert kept == [] and todo == ["a.py", "b.py"]
    (repo / "a.py").write_text(CLEAN)  # benign while "scanned"...
    data = {"results": [], "errors": [], "metrics": {"./a.py": {}, "./b.py": {}, "_totals": {}}}
    (repo / "a.py").write_text(SHELL)  # ...and back, the same bytes as digested
    cache.store(["a.py", "b.py"], data)
    assert cache.written == 1  # b.py only
    again = open_cache(repo, repo, bandit, ["-f", "json", "-q"])
    _, todo = again.split(["a.py", "b.py"])
    assert todo == ["a.py"]


def test_entries_are_bounded(make_repo, monkeypatch):
    monkeypatch.setattr(_bandit_cache, "MAX_ENTRIES", 2)
    repo = make_repo({"a.py": SHELL, "b.py": CLEAN, "c.py": PICKLE})
    _run(make_ctx(repo, files=["a.py", "b.py", "c.py"]))
    assert len(_entries(make_ctx(repo).project)) == 2
    shutil.rmtree(cache_dir(make_ctx(repo).project))
    _, scanned = _run(make_ctx(repo, files=["a.py"]))
    assert scanned == ["a.py"]


def test_asserts_in_tests_are_not_kept(make_repo):
    """bandit's ``assert`` results in test files make no finding: they are
    dropped as its output is read, so the cache holds none of them (on
    sqlalchemy they were most of its bytes, read back on every later run);
    an assert in product code is kept, and a second run reports the same."""
    checks = "def check(x):\n    assert x > 0\n    return x\n"
    tests = "def test_a():\n    assert 1 + 1 == 2\n    assert 2 * 2 == 4\n"
    repo = make_repo({"app.py": checks, "tests/test_app.py": tests})
    files = ["app.py", "tests/test_app.py"]
    first, scanned = _run(make_ctx(repo, files=files))
    assert scanned == files
    project = make_ctx(repo).project
    kept = {json.loads(p.read_text())["file"]: json.loads(p.read_text())["results"]
            for p in _entries(project)}
    assert set(kept) == set(files)
    assert kept["tests/test_app.py"] == []
    assert [r["test_id"] for r in kept["app.py"]] == ["B101"]
    again, scanned = _run(make_ctx(repo, files=files))
    assert scanned == []
    assert _bandit_keys(again) == _bandit_keys(first)
    assert [f.file for f in first.findings if f.rule_id == "B101"] == ["app.py"]


def _bandit_calls(ctx):
    """The role's output and the argv of each bandit process it started."""
    calls: list[list[str]] = []

    def emit(kind, **data):
        if kind == "tool_call" and data.get("tool") == "bandit":
            calls.append(data["argv"])

    ctx.emit = emit
    out = asyncio.run(SecurityTester().run(ctx))
    assert out.status == "ok", out.reason
    return out, calls


def test_a_whole_small_tree_is_kept_and_its_next_run_starts_no_bandit(make_repo):
    # A small tree goes to bandit's own walk (``-r .``), whose results were
    # never kept: every run of an unchanged project started bandit again.
    repo = make_repo({"a.py": SHELL, "pkg/b.py": CLEAN, "pkg/c.py": PICKLE})
    first, calls = _bandit_calls(make_ctx(repo))
    assert len(calls) == 1 and calls[0][-2:] == ["-r", "."]
    assert len(_entries(make_ctx(repo).project)) == 3
    again, calls = _bandit_calls(make_ctx(repo))
    assert calls == []
    assert _bandit_keys(again) == _bandit_keys(first)
    assert [f.message for f in again.findings] == [f.message for f in first.findings]
    (repo / "pkg" / "b.py").write_text(SHELL)
    third, calls = _bandit_calls(make_ctx(repo))
    assert [argv[argv.index("--") + 1:] for argv in calls] == [["pkg/b.py"]]
    assert {f.file for f in third.findings if f.rule_id == "B602"} == {"a.py", "pkg/b.py"}


def test_a_small_tree_in_a_large_one_is_not_walked_to_its_end(make_repo, monkeypatch):
    # The walks for ``.bandit`` files are bounded: a few Python files beside
    # a large folder (node_modules) keep the old behaviour, nothing kept.
    repo = make_repo({"a.py": SHELL, **{f"node_modules/m{i}.js": "x" for i in range(30)}})
    monkeypatch.setattr(_bandit_cache, "MAX_WALK", 20)
    assert _bandit_cache.tree_folders(repo) is None
    _, calls = _bandit_calls(make_ctx(repo))
    assert len(calls) == 1
    assert _entries(make_ctx(repo).project) == []
    monkeypatch.setattr(_bandit_cache, "MAX_WALK", 1000)
    assert _bandit_cache.tree_folders(repo) is not None


def test_a_tree_with_a_bandit_file_is_never_kept(make_repo):
    # bandit's walk takes its options from a ``.bandit`` file anywhere in the
    # tree, which the cache's key does not hold: such a run is not kept (a
    # later run without the file must not get results it skipped).
    repo = make_repo({"a.py": SHELL, "b.py": CLEAN, "conf/.bandit": "[bandit]\nskips = B602\n"})
    first, calls = _bandit_calls(make_ctx(repo))
    assert len(calls) == 1
    assert not any(f.rule_id == "B602" for f in first.findings)  # the file was read
    assert _entries(make_ctx(repo).project) == []
    (repo / "conf" / ".bandit").unlink()
    second, calls = _bandit_calls(make_ctx(repo))
    assert len(calls) == 1
    assert any(f.rule_id == "B602" for f in second.findings)


def test_a_walk_is_kept_only_as_a_run_over_the_role_s_files(make_repo):
    # What ``bandit -r .`` said is kept only where it equals a run over the
    # role's own list: no ``.bandit`` in the tree, none that came and went
    # while bandit walked (a session's process beside it could add one for
    # bandit's walk and remove it before SuperQode looks again), and the
    # same files scanned.
    repo = make_repo({"a.py": SHELL, "b.py": CLEAN, "sub/c.py": CLEAN})
    bandit = tool_path("bandit")
    data = {"results": [], "errors": [],
            "metrics": {"./a.py": {}, "./b.py": {}, "./sub/c.py": {}, "_totals": {}}}
    files = ["a.py", "b.py", "sub/c.py"]

    def kept(files, during=None):
        cache = open_cache(repo, repo, bandit, ["-f", "json", "-q"])
        cache.split(files)
        before = _bandit_cache.tree_folders(repo)
        if during is not None:
            during()
        _bandit_cache.store_walk(cache, files, data, before)
        return cache.written

    def came_and_went():
        (repo / "sub" / ".bandit").write_text("[bandit]\nskips = B602\n")
        (repo / "sub" / ".bandit").unlink()

    assert kept(files, came_and_went) == 0
    assert kept(["a.py", "b.py"]) == 0  # bandit scanned a file the role did not list
    (repo / "sub" / ".bandit").write_text("[bandit]\n")
    assert _bandit_cache.tree_folders(repo) is None
    assert kept(files) == 0
    (repo / "sub" / ".bandit").unlink()
    assert kept(files) == 3
