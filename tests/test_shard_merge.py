"""``superqe run --shard K/N`` and ``superqe merge``: shards 1/3..3/3 of a real
deep run (mutation testing with real pytest, bandit) merged equal the
unsharded run -- findings and every surviving mutant."""

from __future__ import annotations

import json
import shutil
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from superqode_ls.qe.roles.mutation import cache_dir
from superqode_ls.qe.shard import owner, parse_shard, selector

from .cli_helpers import superqe
from .deep_helpers import shared_pycache  # noqa: F401 (autouse fixture)


def _module(name: str, limit: int) -> str:
    return textwrap.dedent(f"""\
        def {name}_ok(x):
            return x >= {limit}


        def {name}_double(x):
            return x * 2
        """)


def _test(name: str) -> str:
    return textwrap.dedent(f"""\
        from {name} import {name}_double, {name}_ok


        def test_{name}():
            assert {name}_ok(1000)
            assert not {name}_ok(-1000)
            assert {name}_double(3) > 0
        """)


NAMES = ("alpha", "gamma", "omega")  # one module in each of the three shards
FILES = {f"{n}.py": _module(n, 10 + i) for i, n in enumerate(NAMES)}
FILES.update({f"tests/test_{n}.py": _test(n) for n in NAMES})
FILES["alpha.py"] += "\n\nimport subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"
FILES["alpha.py"] = "import subprocess\n\n" + FILES["alpha.py"].replace("\n\nimport subprocess\n", "")



def _run(capsys, repo: Path, *extra: str) -> Path:
    shutil.rmtree(cache_dir(), ignore_errors=True)  # each run computes its own verdicts
    code, out, err = superqe(capsys, "run", str(repo), "--mode", "deep", "-r", "mutation_tester",
                             "-r", "security_tester", "--jsonl", "--fail-on", "never", *extra)
    assert code == 0, err
    return Path(json.loads(out.splitlines()[-1])["data"]["report"])


def _shape(report: dict) -> Counter:
    """What must be equal: each finding with its evidence (one entry per
    surviving mutant), not the session it came from."""
    return Counter(
        json.dumps({k: f.get(k) for k in ("id", "rule_id", "file", "range", "severity", "title",
                                          "message", "evidence")}, sort_keys=True)
        for f in report["findings"]
    )


@pytest.mark.slow
@pytest.mark.timeout(900)  # four deep runs with real mutation testing
def test_three_shards_merged_equal_the_unsharded_deep_run(make_repo, capsys, tmp_path):
    repo = make_repo(FILES)
    # The split is real: each shard has a module to mutate.
    assert sorted(owner(f"{n}.py", 3) for n in NAMES) == [1, 2, 3]
    whole = json.loads(_run(capsys, repo).read_text())
    assert any(f["rule_id"] == "mutation-survived" for f in whole["findings"])
    assert any(f["tool"] == "bandit" for f in whole["findings"])

    shards = [_run(capsys, repo, "--shard", f"{k}/3") for k in (1, 2, 3)]
    docs = [json.loads(p.read_text()) for p in shards]
    assert [d["shard"] for d in docs] == ["1/3", "2/3", "3/3"]
    for d, k in zip(docs, (1, 2, 3)):  # each shard mutated only its own files
        mutated = {f["file"] for f in d["findings"] if f["rule_id"] == "mutation-survived"}
        assert all(owner(f, 3) == k for f in mutated)

    out_json, md, sarif = tmp_path / "merged.json", tmp_path / "merged.md", tmp_path / "merged.sarif"
    code, out, err = superqe(capsys, "merge", *map(str, reversed(shards)), "-o", str(out_json),
                             "--markdown", str(md), "--sarif", str(sarif), "--fail-on", "never")
    merged = json.loads(out_json.read_text())
    assert _shape(merged) == _shape(whole)
    assert merged["summary"] == whole["summary"] and merged["verdict"] == whole["verdict"]
    assert code == 0, err
    # --fail-on high decides the merged run as it would the whole one (bandit's
    # shell=True over a parameter is an advisory of the default view: it
    # stays reported and fails neither).
    high = any(f["noise"] is None and f["severity"] in ("high", "critical")
               for f in whole["findings"])
    assert any(f["rule_id"] == "B602" and f["noise"] for f in merged["findings"])
    assert superqe(capsys, "merge", *map(str, shards), "--fail-on", "high")[0] == int(high)
    assert f"{len(whole['findings'])} finding(s)" in out
    assert merged["merged_from"] == [d["session_id"] for d in docs]
    results = [r for run in json.loads(sarif.read_text())["runs"] for r in run["results"]]
    assert len(results) == len(whole["findings"])
    assert "mutation-survived" in md.read_text()


def test_merge_refuses_missing_repeated_or_unsharded_reports(make_repo, capsys, tmp_path):
    from superqode_ls.models import QualityReport, utcnow

    def qr(shard):
        p = tmp_path / f"qr-{shard or 'none'}.json".replace("/", "of")
        p.write_text(QualityReport(session_id=f"s{shard}", project="/p", mode="deep",
                                   isolation="worktree", started_at=utcnow(),
                                   shard=shard).model_dump_json())
        return str(p)

    cases = [
        ([qr("1/3"), qr("3/3")], "merge: shard(s) missing: 2/3"),
        ([qr("1/2"), qr("1/2"), qr("2/2")], "merge: shard(s) given twice: 1/2"),
        ([qr("1/2"), qr(None)], "merge: not a shard report (run with --shard K/N): sNone"),
        ([qr("1/2"), qr("2/3")], "merge: shards of different splits: 1/2, 2/3"),
    ]
    for argv, line in cases:
        out_file = tmp_path / "m.json"
        code, out, err = superqe(capsys, "merge", *argv, "-o", str(out_file))
        assert (code, out, err.strip()) == (2, "", f"superqe: {line}")
        assert not out_file.exists()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    code, _, err = superqe(capsys, "merge", str(bad))
    assert code == 2 and err.startswith(f"superqe: {bad}: not a SuperQode JSON report")


@pytest.mark.parametrize("text", ["3", "0/2", "3/2", "a/b", "1/0"])
def test_bad_shard_is_one_line(make_repo, capsys, text):
    repo = make_repo({"a.py": "A = 1\n"})
    code, out, err = superqe(capsys, "run", str(repo), "--shard", text)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--shard" in err


def test_shard_split_is_stable_and_complete():
    keys = [f"pkg/mod{i}.py" for i in range(60)]
    assert parse_shard("2/3") == (2, 3) and selector(None) is None and selector((1, 1)) is None
    chosen = [[k for k in keys if selector((k_, 3))(k)] for k_ in (1, 2, 3)]
    assert sorted(k for c in chosen for k in c) == sorted(keys)  # every file in exactly one shard
    assert all(chosen)  # and no shard empty on 60 files
    assert [owner(k, 3) for k in keys] == [owner(k, 3) for k in keys]


def test_merged_roles_take_the_worst_status_incomplete_and_ineffective_included():
    from superqode_ls.models import RoleRun
    from superqode_ls.qe.merge import _roles

    class _R:  # a shard report, as far as the roles' merge reads it
        shard = None

        def __init__(self, status):
            self.roles = [RoleRun(role="unit_tester", status=status)]

    # Before: "incomplete" (quick mode's test cap, the security role's
    # stop) was not in the order, and superqe merge raised ValueError.
    merged = _roles([_R("ok"), _R("incomplete"), _R("skipped")], Counter())
    assert [r.status for r in merged] == ["incomplete"]
    assert [r.status for r in _roles([_R("incomplete"), _R("timeout")], Counter())] == ["timeout"]
    assert [r.status for r in _roles([_R("ok"), _R("ineffective")], Counter())] == ["ineffective"]
