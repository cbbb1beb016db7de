"""The pattern and web checks' hits kept between runs (qe/roles/_web_cache.py)
give the findings a run without them gives: on an unchanged tree, after a
module changes, after a module two imports away changes (a flow through it),
after a template changes; a corrupt or foreign file is read as nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from superqode_ls.qe.roles import _web_cache
from superqode_ls.qe.roles._common import SourceCache
from superqode_ls.qe.roles._security_scan import scan_files
from superqode_ls.qe.roles._web_cache import cache_file, open_cache
from superqode_ls.qe.roles._web_calls import _MODULES

FLASK = "from flask import Flask, request, render_template\napp = Flask(__name__)\n"
LOW = "def save_file(name, text):\n    with open('/srv/up/' + name, 'w') as f:\n        f.write(text)\n"
LOW_SAFE = ("import os\ndef save_file(name, text):\n"
            "    with open('/srv/up/' + os.path.basename(name), 'w') as f:\n        f.write(text)\n")
FILES = {
    "core/low.py": LOW,
    "core/mid.py": "from core.low import save_file\ndef store(n, d):\n    return save_file(n, d)\n",
    # api.py reads mid.py first: views.py's check then finds mid's summary
    # made (with low.py read) in memory and reads low.py no more itself
    "core/api.py": FLASK + "from core import mid\n@app.route('/a')\ndef a():\n"
                   "    mid.store(request.form['n'], 'y')\n",
    "core/views.py": FLASK + "from core import mid\n@app.route('/u')\ndef u():\n"
                     "    mid.store(request.args['n'], 'x')\n"
                     "@app.route('/p')\ndef p():\n"
                     "    return render_template('page.html', name=request.args['n'])\n",
    "core/templates/page.html": "<p>{{ name }}</p>\n",
    "settings.py": "DEBUG = True\nSESSION_COOKIE_HTTPONLY = False\n",
    "loader.py": "import yaml\ndef load(s):\n    return yaml.load(s)\n",
}
PY = sorted(f for f in FILES if f.endswith(".py"))


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _scan(root: Path, cached: bool) -> tuple[list[dict], _web_cache.WebCache | None]:
    # as in a new process: the flow checks' own summaries of imported modules
    # (kept in memory, by module) would otherwise answer for a changed import
    _MODULES._items.clear()
    cache = open_cache(root) if cached else None
    found = scan_files("security_tester", root, SourceCache(root), PY, [], cache=cache)
    return [f.model_dump() for f in found], cache


def _same_both_ways(root: Path) -> _web_cache.WebCache:
    plain, _ = _scan(root, cached=False)
    kept, cache = _scan(root, cached=True)
    assert kept == plain
    return cache


@pytest.fixture
def root(tmp_path: Path) -> Path:
    _write(tmp_path, FILES)
    return tmp_path


def test_an_unchanged_tree_is_answered_from_the_cache_with_the_same_findings(root):
    plain, _ = _scan(root, cached=False)
    rules = {f["rule_id"] for f in plain}
    # the case needs findings of both kinds: one module's own, and a flow
    # through two imports (read from other modules)
    assert {"debug-mode", "insecure-cookie", "path-traversal"} <= rules, rules
    first = _same_both_ways(root)
    assert first.computed == len(PY) and first.hits == 0
    assert cache_file(root).is_file()
    again = _same_both_ways(root)
    assert again.computed == 0 and again.hits == len(PY)


def test_a_module_two_imports_away_changing_makes_the_flow_new(root):
    _same_both_ways(root)
    before, _ = _scan(root, cached=True)
    assert any(f["rule_id"] == "path-traversal" and f["file"] == "core/views.py" for f in before)
    (root / "core/low.py").write_text(LOW_SAFE)  # views.py itself is unchanged
    cache = _same_both_ways(root)
    after, _ = _scan(root, cached=True)
    assert not any(f["rule_id"] == "path-traversal" and f["file"] in ("core/views.py", "core/api.py")
                   for f in after)
    assert cache.computed >= 1
    # settings.py reads no other module: still answered from its own entry
    assert "settings.py" in cache.local


def test_a_changed_module_is_checked_anew_and_the_others_kept(root):
    _same_both_ways(root)
    (root / "settings.py").write_text("DEBUG = False\n")
    cache = _same_both_ways(root)
    after, _ = _scan(root, cached=True)
    assert not any(f["file"] == "settings.py" for f in after)
    assert cache.computed >= 1 and cache.hits >= 1


def test_a_template_read_by_a_view_is_part_of_the_key(root):
    _same_both_ways(root)
    (root / "core/templates/page.html").write_text("<p>{{ name|safe }}</p>\n")
    _same_both_ways(root)
    (root / "core/templates/page.html").unlink()
    _same_both_ways(root)


def test_other_checks_code_is_a_miss(root, monkeypatch):
    _same_both_ways(root)
    monkeypatch.setattr(_web_cache, "CHECKS", "0" * 64)
    cache = _same_both_ways(root)
    assert cache.hits == 0 and cache.computed == len(PY)


@pytest.mark.parametrize("forge", [
    lambda d: "not json",
    lambda d: {**d, "version": 999},
    # a hit of the wrong shape: the whole file is read as nothing
    lambda d: {**d, "local": {**d["local"], "settings.py": [d["local"]["settings.py"][0],
                                                             [[1, 0, None, None, "x"]]]}},
    lambda d: {**d, "local": {**d["local"], "settings.py": [d["local"]["settings.py"][0],
                                                             [[1, 0, 1, 4, "r", "t", "m", "no"]]]}},
    # a read outside the project
    lambda d: {**d, "tree": {**d["tree"], "reads": {"../../etc/passwd": None}}},
    lambda d: {**d, "tree": {**d["tree"], "hits": {"elsewhere.py": []}}},
])
def test_a_corrupt_or_foreign_file_is_read_as_nothing(root, forge):
    _same_both_ways(root)
    path = cache_file(root)
    data = json.loads(path.read_text())
    forged = forge(data)
    path.write_text(forged if isinstance(forged, str) else json.dumps(forged))
    cache = _same_both_ways(root)
    assert cache.hits == 0 and cache.computed == len(PY)


def test_a_link_in_place_of_the_file_is_not_followed(root, tmp_path_factory):
    _same_both_ways(root)
    path = cache_file(root)
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "hits.json"
    elsewhere.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(elsewhere)
    assert open_cache(root).local == {}


def test_a_run_over_a_few_files_keeps_the_whole_trees_hits(root):
    _same_both_ways(root)
    _MODULES._items.clear()
    few = open_cache(root)
    scan_files("security_tester", root, SourceCache(root), ["core/views.py"], [], cache=few)
    (root / "core/views.py").write_text(FILES["core/views.py"] + "\n")  # a fix's check changed it
    _MODULES._items.clear()
    scan_files("security_tester", root, SourceCache(root), ["core/views.py"], [], cache=open_cache(root))
    (root / "core/views.py").write_text(FILES["core/views.py"])
    cache = _same_both_ways(root)
    assert cache.computed == 0 and cache.hits == len(PY)


def test_the_security_role_reports_the_same_from_the_cache(root):
    from superqode_ls.qe.roles.security import SecurityTester
    from tests.role_helpers import make_ctx, run_role

    def findings(ctx) -> list[dict]:
        _MODULES._items.clear()
        out = run_role(SecurityTester(), ctx)
        return sorted((f.model_dump() for f in out.findings), key=lambda f: json.dumps(f, default=str))

    ctx = make_ctx(root)
    first = findings(ctx)
    assert any(f["tool"] == "superqode-patterns" for f in first)
    assert "settings.py" in open_cache(ctx.project).local  # the role kept its hits
    assert findings(make_ctx(root, project=ctx.project)) == first
