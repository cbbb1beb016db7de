"""A session cannot plant noise filter results that SuperQode takes as its
own.

SuperQode keeps the noise filter's results between runs
(``qe/noise_cache.py``) and answers a later run over an unchanged tree from
them: a result planted by a hostile branch's tests (every finding marked
noise, or none at all) would hide a flaw from every later session of the
checkout. Only SuperQode's own process writes that folder; a session's
processes see SuperQode's home read-only. And a session that changes a file
while the filter reads it (then puts it back) gets nothing kept."""

from __future__ import annotations

import pytest

from superqode_ls.config import superqode_home
from superqode_ls.models import Finding, Range, Severity
from superqode_ls.qe import noise_cache
from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.workspace import landlock
from tests.redteam.cache_attacks import session_cannot_plant

APP = "import subprocess\n\ndef run(cmd):\n    subprocess.call(cmd, shell=True)\n"


def _findings() -> list[Finding]:
    return [Finding(role="security_tester", tool="bandit", rule_id="B602", title="shell",
                    message="subprocess call with shell=True", severity=Severity.high, confidence=0.9,
                    file="app.py", range=Range(start_line=4, end_line=4)).with_stable_id()]


@pytest.mark.skipif(landlock.abi() is None,
                    reason="no Landlock barrier (this kernel, or SUPERQODE_LANDLOCK=off): "
                    "a session can write any folder")
def test_a_session_cannot_write_the_noise_results_superqode_keeps(make_repo):
    repo = make_repo({"app.py": APP})
    path = noise_cache.cache_file(repo)
    assert not path.is_relative_to(superqode_home() / "cache")

    # the tree the filter reads (a sandbox's: the repository's files, no git folder)
    tree = repo.parent / "tree"
    tree.mkdir()
    (tree / "app.py").write_text(APP)

    def run(found):
        return filter_findings(found, read_line=FileLines(tree), threshold=0.7)

    settings = {"threshold": 0.7, "path_classes": None, "baseline": None}
    first = noise_cache.cached(repo, tree, _findings(), settings, run, files=1)
    assert first.findings and first.findings[0].noise is None
    kept = path.read_bytes()
    # what a forged file would say: the flaw is noise
    forged = kept.replace(b'"noise":null', b'"noise":"planted"')
    assert forged != kept
    session_cannot_plant(repo, path, forged)
    assert path.read_bytes() == kept
    calls = []
    again = noise_cache.cached(repo, tree, _findings(), settings,
                               lambda found: calls.append(1) or run(found), files=1)
    assert not calls and again.findings[0].noise is None


def test_a_file_changed_and_put_back_during_the_filter_is_not_kept(tmp_path):
    """A session's process racing the filter: the filter reads another text
    than the one the tree's digest was taken of; put back byte for byte with
    its times, only its change time says so."""
    root = tmp_path / "tree"
    root.mkdir()
    app = root / "app.py"
    app.write_text(APP)
    st = app.stat()
    seen = []

    def run(found):
        app.write_text("import subprocess\n\ndef run(cmd):\n"
                       "    subprocess.call(cmd, shell=True)  # noqa: S602\n")
        result = filter_findings(found, read_line=FileLines(root), threshold=0.7)
        seen.append(result.suppressed)
        app.write_text(APP)
        import os

        os.utime(app, ns=(st.st_atime_ns, st.st_mtime_ns))
        return result

    settings = {"threshold": 0.7, "path_classes": None, "baseline": None}
    noise_cache.cached(tmp_path, root, _findings(), settings, run, files=1)
    assert seen == [1]  # the filter saw the suppression the session planted
    assert not noise_cache.cache_file(tmp_path).exists()
    calls = []
    result = noise_cache.cached(
        tmp_path, root, _findings(), settings,
        lambda found: calls.append(1) or filter_findings(found, read_line=FileLines(root), threshold=0.7),
        files=1)
    assert calls and result.suppressed == 0 and result.findings
