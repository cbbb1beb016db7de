"""A noise rule's bug costs only the findings it was judging (qe/noise_guard.py),
and the rule that recursed forever on a name rebound from itself
(``code = compile(code, ...)`` before ``exec(code)``, a web framework's
helper) now ends and keeps the finding."""

from __future__ import annotations

from superqode_ls.models import Finding, Range, Severity
from superqode_ls.qe.context import mark_noise
from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.noise_guard import guarded
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_idioms import needs_bandit
from tests.test_noise_project import _kept


def _finding(n: int) -> Finding:
    return Finding(id=f"f{n}", title="t", message="m", severity=Severity.medium, role="r",
                   tool="ruff", rule_id="F401", file=f"m{n}.py", range=Range(start_line=n))


def test_a_step_that_raises_on_one_finding_still_judges_the_others():
    findings = [_finding(n) for n in range(1, 10)]

    def step(some):
        if any(f.file == "m5.py" for f in some):
            raise RecursionError("maximum recursion depth exceeded")
        return [mark_noise(f, "judged") for f in some]

    failed: list[str] = []
    out = guarded("odd", step, findings, failed)
    assert [f.file for f in out] == [f.file for f in findings]  # one out for each in, in order
    assert [f.noise is None for f in out] == [n == 5 for n in range(1, 10)]
    assert failed == ["odd"]


def test_a_step_that_works_is_called_once_and_names_nothing():
    calls = []
    failed: list[str] = []
    out = guarded("fine", lambda some: calls.append(len(some)) or some, [_finding(1)] * 4, failed)
    assert calls == [4] and len(out) == 4 and failed == []


@needs_bandit
def test_exec_of_a_name_rebound_from_itself_ends_and_stays(make_repo):
    repo = make_repo({"pkg/__init__.py": "", "pkg/util.py": (
        "def exec_in(code, glob):\n"
        "    code = compile(code, '<string>', 'exec', dont_inherit=True)\n"
        "    exec(code, glob)\n")})
    raw = run_role(SecurityTester(), make_ctx(repo)).findings
    result = filter_findings(raw, read_line=FileLines(repo), threshold=0.0)
    assert result.failed_rules == ()  # the project rule raised RecursionError here
    _kept(result.findings, "pkg/util.py", 3, "B102")


def test_the_filter_reports_the_rule_that_failed(make_repo, monkeypatch):
    import superqode_ls.qe.noise as noise

    def broken(findings, *args):
        raise ValueError("a bug")

    monkeypatch.setattr(noise, "carried_noise", broken)
    repo = make_repo({"pkg/__init__.py": "import os\n"})
    f = _finding(1).model_copy(update={"file": "pkg/__init__.py"})
    result = filter_findings([f], read_line=FileLines(repo), threshold=0.0)
    assert result.failed_rules == ("carried",)
    assert [g.id for g in result.findings] == ["f1"]  # nothing lost
