"""security_tester's shortcuts give exactly what the long way gives: the
secrets scan's line hints, the pattern scan's skip of sources that cannot
match, and bandit split among several processes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from superqode_ls.config import Config
from superqode_ls.qe.roles import _common, _patterns, _secrets
from superqode_ls.qe.roles._bandit_cache import cache_dir
from superqode_ls.qe.roles._common import MAX_SHARDS, MIN_SHARD_BYTES, shard_count
from superqode_ls.qe.roles.security import SecurityTester
from superqode_ls.runtime import Runtime
from tests.role_helpers import make_ctx, run_role

ROOT = Path(__file__).resolve().parents[1]

# Lines that sit on every edge the hints must not miss: CRLF ends, a key at
# a line's start and end, upper case, letters IGNORECASE folds outside ASCII
# (U+017F is "s", U+212A is "K"), a provider token beside a generic name, an
# opt-out comment, a name that is about a secret, a value too short.
EDGES = "\n".join([
    "AKIAABCDEFGHIJKLMNOP",
    'x = "AKIAABCDEFGHIJKLMNOP"\r',
    'DB_PASSWORD = "hunter2hunter2xyz"',
    'paſſword = "Zq8#kLm2pW9vT4rX"',
    'api_\u212aey = "Zq8#kLm2pW9vT4rX"',
    'github_token = "ghp_' + "a" * 36 + '"',
    'slack = "xoxb-1234567890-abcdefghij"\r',
    'stripe = "sk_live_' + "b" * 24 + '"  # nosec',
    'token_env = "MY_TOKEN_VARIABLE"',
    'secret = "short"',
    'AWS_SECRET = "' + "c" * 40 + '"',
    "-----BEGIN RSA PRIVATE KEY-----",
    'url = "https://hooks.slack.com/services/T000/B000/XXXXXXXX"',
    'google = "AIza' + "d" * 35 + '"',
    "no secret on this line",
    "",
])


def _every_line(text: str, lines: list[str]) -> dict[int, list[_secrets.SecretRule]]:
    """The long way: every rule tried on every line."""
    lines[:] = text.split("\n")
    every = [*_secrets.RULES, _secrets.GENERIC]
    return {n: list(every) for n in range(1, len(lines) + 1)}


def _corpus() -> list[str]:
    texts = [EDGES, EDGES.replace("\n", "\r\n"), EDGES.upper(), EDGES.lower()]
    for pattern in ("superqode_ls/**/*.py", "docs/**/*.md", "tests/**/*.py", "examples/**/*"):
        for path in sorted(ROOT.glob(pattern)):
            if path.is_file() and path.stat().st_size < _secrets.MAX_BYTES:
                try:
                    texts.append(path.read_text(encoding="utf-8"))
                except (UnicodeDecodeError, OSError):
                    continue
    return texts


def test_secret_hints_find_what_every_line_finds(monkeypatch):
    corpus = _corpus()
    assert len(corpus) > 100
    quick = [_secrets.scan_text(t) for t in corpus]
    monkeypatch.setattr(_secrets, "_candidates", _every_line)
    slow = [_secrets.scan_text(t) for t in corpus]
    assert quick == slow
    # the edges are found at all (the comparison is not of two empty lists)
    rules = {h.rule.id for h in slow[0]}
    assert {"secret-aws-access-key-id", "secret-generic", "secret-github-token",
            "secret-slack-token", "secret-private-key", "secret-google-api-key",
            "secret-slack-webhook"} <= rules
    folded = [h for h in slow[0] if h.line in (4, 5)]
    assert len(folded) == 2 and quick[0] == slow[0]
    assert sum(len(h) for h in quick) > 10


def test_pattern_scan_skips_only_sources_that_cannot_match():
    hits = {
        "import yaml\nyaml.unsafe_load(s)\n": "yaml-unsafe-load",
        "import jwt\njwt.decode(t, options={'verify_signature': False})\n": "jwt-no-verify",
        "import ssl\nctx = ssl.create_default_context()\nctx.check_hostname = False\n":
            "tls-no-hostname-check",
    }
    import ast

    for source, rule in hits.items():
        assert _patterns.may_match(source)
        assert [r for _, r, *_ in _patterns.patterns(ast.parse(source))] == [rule]
    assert not _patterns.may_match("import yaml\nyaml.safe_load(s)\n")
    # NFKC: the parser reads a fullwidth letter as ASCII; the text proves nothing
    odd = "import yaml\nyaml.\uff55nsafe_load(s)\n"
    assert _patterns.may_match(odd)
    assert [r for _, r, *_ in _patterns.patterns(ast.parse(odd))] == ["yaml-unsafe-load"]
    for text in _corpus():
        if not _patterns.may_match(text):
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError):
                continue
            assert list(_patterns.patterns(tree)) == []


def _project(root: Path, n: int = 64) -> Path:
    """Enough source for bandit to be split: modules of ~3 KB with findings."""
    root.mkdir()
    body = "\n".join(f"def helper_{i}(x):\n    return x * {i}\n" for i in range(80))
    for i in range(n):
        (root / f"pkg{i % 3}").mkdir(exist_ok=True)
        (root / f"pkg{i % 3}" / f"mod{i:02d}.py").write_text(
            "import hashlib\nimport subprocess\n\n"
            f"def run_{i}(cmd):\n    return subprocess.run(cmd, shell=True)\n\n"
            f"def key_{i}(s):\n    return hashlib.md5(s.encode()).hexdigest()\n\n" + body)
    (root / "pkg0" / "plain.pyw").write_text("import pickle\npickle.loads(b'')\n")
    return root


def test_shard_count_pays_its_starts():
    mb = 1_000_000
    assert shard_count(10 * mb, 1000, 1) == 1
    assert shard_count(10 * mb, 1000, 2) == 2
    # Beyond two CPUs, half of them: the roles beside bandit need the rest.
    assert shard_count(10 * mb, 1000, 4) == 2
    assert shard_count(10 * mb, 1000, 16) == 8
    assert shard_count(10 * mb, 1000, 64) == MAX_SHARDS
    # Each shard carries enough source (and files) to repay its start.
    assert shard_count(3 * MIN_SHARD_BYTES, 1000, 16) == 3
    assert shard_count(10 * mb, 20, 16) == 2
    assert shard_count(MIN_SHARD_BYTES - 1, 1000, 16) == 1


@pytest.mark.parametrize("whole", [True, False])
def test_bandit_split_gives_what_one_bandit_gives(tmp_path, monkeypatch, whole):
    root = _project(tmp_path / "proj")
    (root.parent / "proj-project").mkdir()
    files = None if whole else sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*.py*"))
    calls: list[dict] = []
    # Small shards, so that a forced 16 workers on this machine make 8 of them.
    monkeypatch.setattr(_common, "MIN_SHARD_BYTES", 5_000)

    def run(workers: int):
        cfg = Config()
        cfg.execution.workers = workers  # forced: not this machine's CPU count
        calls.clear()
        shutil.rmtree(cache_dir(root.parent / "proj-project"), ignore_errors=True)  # bandit runs each time
        ctx = make_ctx(root, root.parent / "proj-project", files=files, config=cfg)
        ctx.emit = lambda kind, **data: calls.append({"kind": kind, **data})  # type: ignore[method-assign]
        out = run_role(SecurityTester(), ctx)
        assert out.status == "ok", out.reason
        return out, [c.get("shard") for c in calls if c["kind"] == "tool_call"]

    def key(f):
        return (f.id, f.rule_id, f.file, f.range, f.message, f.severity, f.fix_patch_id)

    one, shards = run(1)
    assert shards == [None]
    assert len({f.file for f in one.findings if f.rule_id == "B602"}) == 64
    assert any(f.file == "pkg0/plain.pyw" for f in one.findings)  # bandit's own .pyw
    for workers, n in ((2, 2), (4, 2), (16, 8)):
        split, shards = run(workers)
        assert shards == [f"{k}/{n}" for k in range(1, n + 1)], (workers, shards)
        assert [key(f) for f in split.findings] == [key(f) for f in one.findings]
        assert [p.diff for p in split.patches] == [p.diff for p in one.patches]


@pytest.fixture
def warm_bandit():
    from superqode_ls.qe.roles import _bandit_warm

    warm = _bandit_warm.start(Runtime.background())
    assert warm is not None, "bandit is in SuperQode's environment"
    yield warm
    warm.stop()
    assert warm._proc is None


def test_warm_bandit_gives_what_the_command_gives(tmp_path, warm_bandit):
    from superqode_ls.workspace import landlock

    if landlock.abi() is None:
        pytest.skip("no Landlock (this kernel, or SUPERQODE_LANDLOCK=off): the warm bandit "
                    "serves no run, the command runs each")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "app.py").write_text("import subprocess\n\n\ndef run(c):\n    return subprocess.call(c, shell=True)\n")
    (root / "keys.py").write_text("import hashlib\nh = hashlib.md5(b'x')\n")
    (tmp_path / "proj-project").mkdir()
    calls: list[dict] = []

    def run(files):
        shutil.rmtree(cache_dir(tmp_path / "proj-project"), ignore_errors=True)  # bandit runs each time
        ctx = make_ctx(root, tmp_path / "proj-project", files=files)
        # A session's run names its folders: the warm bandit serves no other.
        ctx.env["SUPERQODE_BARRIER_ALLOW"] = f'["{root}"]'
        ctx.runtime = Runtime.background(analyzer=analyzer)
        ctx.emit = lambda kind, **data: calls.append({"kind": kind, **data})  # type: ignore[method-assign]
        return run_role(SecurityTester(), ctx)

    analyzer = warm_bandit
    warm = run(None), run(["app.py"])
    assert [c.get("warm") for c in calls if c["kind"] == "tool_call"] == [True, True]
    analyzer = None  # a runtime without one: the command runs
    calls.clear()
    cold = run(None), run(["app.py"])
    assert [c.get("warm") for c in calls if c["kind"] == "tool_call"] == [None, None]
    for w, c in zip(warm, cold):
        assert [(f.id, f.rule_id, f.file, f.range) for f in w.findings] == \
            [(f.id, f.rule_id, f.file, f.range) for f in c.findings]
    assert {f.rule_id for f in warm[0].findings} >= {"B602", "B324"}
    assert {f.file for f in warm[1].findings} == {"app.py"}


def test_warm_bandit_runs_behind_the_session_barrier(make_repo, warm_bandit):
    import asyncio

    from superqode_ls.workspace import landlock, namespaces
    from superqode_ls.workspace.session import IsolatedSession

    if landlock.abi() is None:
        pytest.skip("no Landlock on this kernel: the barrier is tested where it exists")
    repo = make_repo({"app.py": "import os\n"})
    outside = repo / "written-by-bandit.json"
    s = IsolatedSession.create_sync(repo)
    try:
        res = asyncio.run(warm_bandit.run(["-f", "json", "-o", str(outside), "app.py"],
                                          s.sandbox, s.env(), 30))
        assert res is not None and res.returncode != 0
        # Landlock's refusal, or the read-only root of the server's own
        # namespace sandbox where there is one.
        assert ("Permission denied" in res.stderr or "Read-only file system" in res.stderr)
        assert not outside.exists()
        inside = s.sandbox / "report.json"
        res = asyncio.run(warm_bandit.run(["-f", "json", "-o", str(inside), "app.py"],
                                          s.sandbox, s.env(), 30))
        # Its own sandbox: behind Landlock alone, writable; in the server's
        # namespace sandbox nothing is (a run's report comes on the pipe).
        assert res is not None and (res.returncode == 0) == inside.exists()
        assert inside.exists() != namespaces.active()
    finally:
        v = s.close_sync()
    assert v.verified and not outside.exists()
