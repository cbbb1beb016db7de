"""The noise filter within the session's budget: its context step runs one
file at a time, with the same results as one pass over all findings, and a
stop ends it between files; the findings it did not reach stay, unchecked
and tagged, and suppressions, the threshold and de-duplication still apply."""

from __future__ import annotations

import time

from superqode_ls.models import Severity
from superqode_ls.qe.context import apply_context
from superqode_ls.qe.conventions import apply_conventions
from superqode_ls.qe.noise import FileLines, canonical_rule, early_context, filter_findings
from superqode_ls.qe.noise_context import UNFILTERED, in_context
from tests.role_helpers import lint_finding
from tests.test_conventions import BARE

# BARE: a bare except that answers the error (line 7), one that swallows in a loop (16)
SERVER = 'import os\n\n\ndef main():\n    host = "0.0.0.0"\n    return host\n'

PY2 = 'print "hello"\nprint "again"\nx = 1  # noqa\n'


_finding = lint_finding


def _project(tmp_path):
    (tmp_path / "app.py").write_text(BARE)
    (tmp_path / "srv.py").write_text(SERVER)
    (tmp_path / "old.py").write_text(PY2)
    # Interleaved across files, as two roles' findings come.
    return [
        _finding("E722", "app.py", 7, severity=Severity.low),
        _finding("B104", "srv.py", 5, tool="bandit", category="security"),
        _finding("invalid-syntax", "old.py", 1, category="syntax"),
        _finding("E722", "app.py", 16, severity=Severity.low),
        _finding("invalid-syntax", "old.py", 2, category="syntax"),
        _finding("F401", "old.py", 3),
        _finding("F401", None, 1),
    ]


def test_file_by_file_is_one_pass(tmp_path):
    findings = _project(tmp_path)
    read = FileLines(tmp_path)
    one_pass = apply_conventions(
        apply_context(findings, read_line=read, lines=read.lines, canonical=canonical_rule), read.lines)
    got, unchecked = in_context(findings, FileLines(tmp_path), stop=None, canonical=canonical_rule)
    assert unchecked == 0
    assert got == one_pass
    # the checks did something here, so the comparison means something
    assert sum(1 for f in got if f.noise) == 2


def test_a_stop_before_the_first_file_leaves_every_finding_unchecked_and_tagged(tmp_path):
    findings = _project(tmp_path)
    out = filter_findings(findings, read_line=FileLines(tmp_path), stop_at=time.monotonic())
    # The inline noqa still hides old.py:3; every other finding stays, unchecked.
    assert out.suppressed == 1
    assert out.unfiltered == len(findings) - 1
    assert all(UNFILTERED in f.tags for f in out.findings)
    bare = [f for f in out.findings if f.rule_id == "E722"]
    assert len(bare) == 2 and all(f.noise is None for f in bare)  # the context would mark line 7


def test_a_stop_between_files_keeps_what_was_checked(tmp_path):
    findings = _project(tmp_path)
    asked = []

    def stop():
        asked.append(True)
        return len(asked) > 1  # app.py (the first file met) is checked, the rest not

    got, unchecked = in_context(findings, FileLines(tmp_path), stop=stop, canonical=canonical_rule)
    app = {f.range.start_line: f for f in got if f.file == "app.py"}
    assert app[7].noise and app[16].noise is None
    assert all(UNFILTERED not in f.tags for f in app.values())
    rest = [f for f in got if f.file != "app.py"]
    assert rest and all(UNFILTERED in f.tags for f in rest)
    assert unchecked == len(rest)
    assert [f.id for f in got] == [f.id for f in findings]  # the order kept


def test_time_enough_checks_every_file(tmp_path):
    findings = _project(tmp_path)
    out = filter_findings(findings, read_line=FileLines(tmp_path), stop_at=time.monotonic() + 3600)
    assert out.unfiltered == 0 and not any(UNFILTERED in f.tags for f in out.findings)


def _filtered(root, findings, early=None):
    out = filter_findings(findings, read_line=FileLines(root), early=early)
    return [f.model_dump() for f in out.findings], out.unfiltered


def test_checked_early_role_by_role_is_the_same_as_at_the_end(tmp_path):
    """The first role's findings checked while another runs (EarlyContext),
    the filter then takes those results: the same report as checking them
    all at the end, Python 2 syntax errors (judged per file together) too."""
    findings = _project(tmp_path)
    first, second = findings[::2], findings[1::2]  # two roles, files shared between them
    early = early_context(tmp_path)
    early.check(first)
    assert early.taken("app.py", [findings[0]], FileLines(tmp_path).lines)  # it did check early
    assert _filtered(tmp_path, first + second, early) == _filtered(tmp_path, first + second)


def test_a_file_changed_since_the_early_check_is_checked_again(tmp_path):
    findings = _project(tmp_path)
    early = early_context(tmp_path)
    early.check(findings)
    before, _ = in_context(findings, FileLines(tmp_path), None, canonical=canonical_rule)
    # line 7's bare except now swallows in a loop: no longer noise
    (tmp_path / "app.py").write_text(BARE.replace("def handler(data):\n    try:",
                                                  "def handler(data):\n  while True:\n    try:"))
    got, _ = in_context(findings, FileLines(tmp_path), None, early, canonical=canonical_rule)
    fresh, _ = in_context(findings, FileLines(tmp_path), None, canonical=canonical_rule)
    assert got == fresh and fresh != before  # the change matters, and was seen


def test_a_stopped_early_check_leaves_the_rest_to_the_filter(tmp_path):
    findings = _project(tmp_path)
    early = early_context(tmp_path)
    early.stop.set()
    early.check(findings)
    assert not early.taken("app.py", findings[:1], FileLines(tmp_path).lines)
    assert _filtered(tmp_path, findings, early) == _filtered(tmp_path, findings)


def test_an_early_check_past_its_time_checks_nothing(tmp_path):
    findings = _project(tmp_path)
    early = early_context(tmp_path, stop_at=time.monotonic())
    early.check(findings)
    assert not early.taken("app.py", findings[:1], FileLines(tmp_path).lines)


def test_the_library_and_project_rules_stop_with_the_context_step(tmp_path):
    """The library and project rules parse and walk whole modules (seconds
    on a large project): past the stop they are not run either; their
    findings stay unchecked and tagged, counted once."""
    from tests.test_noise_library import _SAFE_YAML, _sec

    (tmp_path / "safe.py").write_text(_SAFE_YAML)
    (tmp_path / "cfg.py").write_text('DB = {"password": "passwd"}\n')
    findings = [_sec("B506", "safe.py", 8, id="yaml"), _sec("B105", "cfg.py", 1, id="pw")]
    with_time = filter_findings(findings, read_line=FileLines(tmp_path),
                                stop_at=time.monotonic() + 3600)
    # with time, the library rule (yaml's safe loader) and the project rule
    # (a password setting's name) each mark theirs
    assert all(f.noise for f in with_time.findings) and with_time.unfiltered == 0
    late = filter_findings(findings, read_line=FileLines(tmp_path), stop_at=time.monotonic())
    assert late.unfiltered == 2
    assert all(f.noise is None and f.tags.count(UNFILTERED) == 1 for f in late.findings)


def test_a_quick_copy_is_the_copy_model_copy_makes():
    from superqode_ls.models import Patch
    from tests.role_helpers import lint_finding

    f = lint_finding("F401", "a.py", 3)
    for update in ({"tags": ["unfiltered"]}, {"noise": "why", "tags": []}):
        fast, slow = f.quick_copy(update), f.model_copy(update=update)
        assert type(fast) is type(slow) and fast == slow
        assert fast.model_fields_set == slow.model_fields_set
        assert fast.model_dump_json() == slow.model_dump_json()
        assert f.tags == [] or f.tags is not fast.tags  # the original is left as it was
    p = Patch(id="fix-1", description="d", role="lint_tester", tool="ruff", files=["a.py"], diff="")
    assert p.quick_copy({"verified": False}) == p.model_copy(update={"verified": False})


def test_a_packages_own_reexports_are_noise_even_when_the_budget_stops_the_filter(tmp_path):
    # sqlalchemy's quick run: the stop came before the project step, and the
    # package's re-exports were shown as unused imports
    pkg = tmp_path / "lib" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "ext.py").write_text("def to_tsquery():\n    pass\n")
    (pkg / "__init__.py").write_text("import json\nfrom .ext import (\n    to_tsquery,\n)\n"
                                     "from pkg.ext import to_tsquery as q\n")
    findings = [_finding("F401", "lib/pkg/__init__.py", line, severity=Severity.low)
                for line in (1, 3, 5)]
    out = filter_findings(findings, read_line=FileLines(tmp_path), stop_at=time.monotonic())
    by_line = {f.range.start_line: f for f in out.findings}
    assert "importable from the package" in (by_line[3].noise or "")
    assert "importable from the package" in (by_line[5].noise or "")
    assert by_line[1].noise is None  # another package's unused import stays shown


def test_a_module_made_only_of_its_packages_imports_is_a_reexport_one_that_does_more_stays(
        tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "ext.py").write_text("class Events:\n    pass\n")
    (pkg / "events.py").write_text('"""Event interfaces."""\n\nfrom __future__ import annotations\n\n'
                                   "from .ext import Events\n")
    (pkg / "helpers.py").write_text("from .ext import Events\n\n\ndef run():\n    return 1\n")
    findings = [_finding("F401", "pkg/events.py", 5, severity=Severity.low),
                _finding("F401", "pkg/helpers.py", 1, severity=Severity.low)]
    out = filter_findings(findings, read_line=FileLines(tmp_path), stop_at=time.monotonic())
    by_file = {f.file: f for f in out.findings}
    assert "made only of relative imports" in (by_file["pkg/events.py"].noise or "")
    assert by_file["pkg/helpers.py"].noise is None  # a dead import in working code stays
