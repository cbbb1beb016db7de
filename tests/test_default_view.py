"""The default view by evidence (qe/default_view.py, noise.py's step after
the path classes): a static finding with strong evidence stays shown; one
without becomes noise whose reason starts ``advisory:`` and says what is
missing; ``qe.default_view: all`` shows them; an advisory never fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from superqode_ls.config import ConfigError, load_config
from superqode_ls.models import Finding, Range, Severity
from superqode_ls.qe.default_view import default_view
from superqode_ls.qe.display import noise_line
from superqode_ls.qe.noise import FileLines, canonical_rule, filter_findings
from superqode_ls.qe.report.verdict import compute_verdict
from tests.cli_helpers import superqe


def mk(rule, tool="bandit", category="security", line=1, file="app.py", sev=Severity.high,
       **kw) -> Finding:
    return Finding(
        role="lint_tester" if category == "lint" else "security_tester", tool=tool,
        rule_id=rule, title=f"{rule} title", message="m", severity=sev, confidence=0.9,
        category=category, file=file, range=Range(start_line=line, end_line=line),
        snippet=f"{rule} at {line}", **kw).with_stable_id()


def lint(rule, sev=Severity.high, **kw) -> Finding:
    return mk(rule, tool="ruff", category="lint", sev=sev, **kw)


def view(tmp_path: Path, findings: list[Finding], mode="evidence") -> list[Finding]:
    return filter_findings(findings, read_line=FileLines(tmp_path), threshold=0.7, view=mode,
                           path_classes={}).findings


KEPT = [
    # code that fails when it runs
    lint("F821"), lint("PLE1205"), lint("F507", Severity.medium), lint("F524", Severity.medium),
    lint("B016", Severity.medium), lint("B023", Severity.medium), lint("F601", Severity.medium),
    lint("F841", Severity.low), lint("PLW0133", Severity.medium),
    lint("T100", Severity.medium), lint("E999"),
    # security with evidence of its own
    mk("B608", tags=["data-flow"]),
    mk("sql-injection", tool="superqode-patterns"),
    mk("B608", related_rules=["sql-injection"]),
    mk("B324", tags=["also:superqode-patterns"]),
    mk("secret-aws-access-key-id", tool="superqode-secrets", category="secrets"),
    mk("secret-private-key", tool="superqode-secrets", category="secrets", sev=Severity.critical),
    mk("B105", related_rules=["secret-config-password"]),
    # two checks agree: bandit's password name and the scan's judgement of the value
    mk("B105", related_rules=["secret-generic"], tags=["also:superqode-secrets:secret-generic"]),
    mk("B308", related_rules=["B703"], sev=Severity.medium),
    mk("B501"), mk("B502"), mk("B504"), mk("B507"), mk("B201"), lint("S501"),
    mk("B701", related_rules=["template-autoescape-off"]),
    # evidence of their own kind: not judged by this step
    mk("test-failure", tool="pytest", category="tests"),
    mk("union-attr", tool="mypy", category="types"),
    # another tool's security finding (an agent's review, a plugin role)
    mk("TOY1", tool="toy"), mk("B602", tool="security-agent"),
]

ADVISORIES = [
    (lint("F401", Severity.low), "advisory: unused import (seldom a bug)"),
    (mk("B602"), "advisory: a subprocess call, no input traced to it"),
    (mk("B605", sev=Severity.medium), "advisory: a subprocess call, no input traced to it"),
    (lint("S602"), "advisory: a subprocess call, no input traced to it"),
    (mk("B608", sev=Severity.medium), "advisory: SQL built from values, no input traced to it"),
    (mk("B301", sev=Severity.medium), "advisory: deserialisation, no untrusted input traced to it"),
    (mk("B506", sev=Severity.medium), "advisory: an unsafe YAML load, no untrusted input "
                                      "traced to it"),
    (mk("B307", sev=Severity.medium), "advisory: eval/exec, no input traced to it"),
    (mk("B105", sev=Severity.low), "advisory: a password-like name, the secrets scan confirms "
                                   "no secret"),
    (mk("secret-generic", tool="superqode-secrets", category="secrets"),
     "advisory: a secret-looking name, no provider's format or password rule confirms it"),
    (mk("B104", sev=Severity.medium), "advisory: binds all interfaces, a deployment choice"),
    (mk("B108", sev=Severity.medium), "advisory: a temporary path, no input traced to it"),
    (mk("B113", sev=Severity.medium), "advisory: a request without a timeout, a robustness note"),
    (mk("B704", sev=Severity.medium), "advisory: Markup over text, no input traced to it"),
    (mk("B701", sev=Severity.high), "advisory: a template engine at its default escaping, "
                                    "no request in the function"),
    (mk("B202", sev=Severity.high), "advisory: an archive extraction, no untrusted archive "
                                    "traced to it"),
    (mk("B314", sev=Severity.medium), "advisory: an XML parser or import, no input traced to it"),
    (lint("B006", Severity.medium), "advisory: a lint rule's opinion, not a definite bug"),
    (lint("B904", Severity.medium), "advisory: a lint rule's opinion, not a definite bug"),
    (lint("F522", Severity.medium), "advisory: a lint rule's opinion, not a definite bug"),
    (lint("PLW0128", Severity.medium), "advisory: a lint rule's opinion, not a definite bug"),
    (lint("F811", Severity.low), "advisory: a lint rule's opinion, not a definite bug"),
    (lint("PLW1508", Severity.medium), "advisory: a lint rule's opinion, not a definite bug"),
]


@pytest.mark.parametrize("finding", KEPT, ids=lambda f: f"{f.rule_id}-{f.tool}")
def test_a_finding_with_strong_evidence_stays_shown(tmp_path, finding):
    (out,) = view(tmp_path, [finding])
    assert out.noise is None and out.severity is finding.severity


@pytest.mark.parametrize(("finding", "why"), ADVISORIES, ids=lambda x: getattr(x, "rule_id", ""))
def test_a_pattern_without_evidence_is_an_advisory_still_reported(tmp_path, finding, why):
    (out,) = view(tmp_path, [finding])
    assert out.noise == why and out.id == finding.id
    assert out.severity is finding.severity and out.tags == finding.tags
    # the old view shows it, unchanged
    assert view(tmp_path, [finding], mode="all") == [finding]


def test_noise_keeps_its_first_reason(tmp_path):
    f = mk("B602", noise="in tests code")
    (out,) = view(tmp_path, [f])
    assert out.noise == "in tests code"


HANDLER = (
    "from flask import request\n"
    "\n"
    "def search(db):\n"
    "    q = request.args.get('q')\n"
    "    return db.execute(\"SELECT * FROM t WHERE n = '%s'\" % q)\n"
    "\n"
    "def report(db, table):\n"
    "    return db.execute(\"SELECT * FROM %s\" % table)\n"
)


def test_a_sink_pattern_in_a_function_that_reads_the_request_stays(tmp_path):
    (tmp_path / "app.py").write_text(HANDLER)
    handler, helper = mk("B608", line=5, sev=Severity.medium), mk("B608", line=8,
                                                                  sev=Severity.medium)
    out = {f.range.start_line: f for f in view(tmp_path, [handler, helper])}
    assert out[5].noise is None
    # the twin: the same pattern in a function that reads no request
    assert out[8].noise == "advisory: SQL built from values, no input traced to it"


def test_a_request_parameter_is_the_request_in_reach(tmp_path):
    (tmp_path / "views.py").write_text(
        "import subprocess\n\n\ndef ping(request, host):\n"
        "    return subprocess.check_output('ping -c1 ' + host, shell=True)\n")
    (out,) = view(tmp_path, [mk("B602", file="views.py", line=5)])
    assert out.noise is None


def test_the_verdict_never_fails_on_an_advisory(tmp_path):
    found = [mk("B602", sev=Severity.critical), mk("B105", sev=Severity.high)]
    shown = view(tmp_path, found)
    assert all(f.noise for f in shown) and compute_verdict(shown) == "pass"
    assert compute_verdict(view(tmp_path, found, mode="all")) == "fail"
    # a kept class beside them still fails the run
    assert compute_verdict(view(tmp_path, [*found, lint("F821")])) == "fail"


def test_the_noise_line_counts_the_advisories_as_one_kind(tmp_path):
    shown = view(tmp_path, [mk("B602", line=1), mk("B108", line=2),
                            lint("F401", Severity.low, line=3),
                            mk("B101", noise="in tests code", line=4)])
    shown.append(mk("B110", line=5, noise="an advisory (bandit asks for a check, found no flaw)"))
    line = noise_line(shown)
    assert line.startswith("5 more (noise): 4 advisories, 1 in tests code"), line
    (one,) = view(tmp_path, [mk("B602")])
    assert noise_line([one]).startswith("1 more (noise): 1 advisory ("), noise_line([one])


def test_the_noise_line_names_each_reason_by_its_lead_clause(tmp_path):
    # a rule's proof can run to a paragraph: the count line names its lead,
    # grouping the reasons that share it; --show-noise keeps each whole
    long = ("every value formatted into this SQL is checked or owned by the code where "
            "the query runs (a whitelist check before it, a quote-doubling helper)")
    shown = [mk("B608", line=1, noise=long),
             mk("B105", line=2, noise="not a secret: the value is an environment variable"),
             mk("B105", line=3, noise="not a secret: a placeholder"),
             mk("B101", line=4, noise="in tests code: pytest's testpaths (t/unit)")]
    line = noise_line(shown)
    assert line.startswith("4 more (noise): 2 not a secret, "), line
    assert "1 in tests code" in line and "whitelist" not in line, line
    assert "1 every value formatted into this SQL is checked or owned by…" in line, line
    assert shown[0].noise == long  # the finding keeps its whole reason


def test_the_setting_defaults_to_evidence_and_refuses_other_values(tmp_path):
    assert load_config(tmp_path).qe.default_view == "evidence"
    (tmp_path / "superqode.yaml").write_text("qe:\n  default_view: all\n")
    assert load_config(tmp_path).qe.default_view == "all"
    (tmp_path / "superqode.yaml").write_text("qe:\n  default_view: some\n")
    with pytest.raises(ConfigError):
        load_config(tmp_path)


SHELL = (
    "import subprocess\n\n\n"
    "def backup(directory):\n"
    "    return subprocess.call('tar czf b.tgz ' + directory, shell=True)\n"
)


def _run(capsys, repo: Path) -> tuple[int, dict, str]:
    code, out, _ = superqe(capsys, "run", str(repo), "-r", "security_tester", "--jsonl")
    events = [json.loads(line) for line in out.splitlines()]
    report = json.loads(Path(events[-1]["data"]["report"]).read_text())
    return code, report, out


def test_a_session_shows_the_evidence_view_and_all_restores_the_old_one(make_repo, capsys):
    repo = make_repo({"tool.py": SHELL})
    code, report, _ = _run(capsys, repo)
    (b602,) = [f for f in report["findings"] if f["rule_id"] == "B602"]
    assert b602["noise"] == "advisory: a subprocess call, no input traced to it"
    assert b602["severity"] == "high" and code == 0 and report["verdict"] != "fail"
    (repo / "superqode.yaml").write_text("qe:\n  default_view: all\n")
    code, report, _ = _run(capsys, repo)
    (b602,) = [f for f in report["findings"] if f["rule_id"] == "B602"]
    assert b602["noise"] is None and code == 1 and report["verdict"] == "fail"


def test_a_helper_the_handler_calls_is_in_reach_one_it_does_not_call_is_not(tmp_path):
    (tmp_path / "mitre.py").write_text(
        "import subprocess\n\n\n"
        "def command_out(command):\n"
        "    return subprocess.Popen(command, shell=True)\n\n\n"
        "def lab(request):\n"
        "    return command_out(request.POST.get('ip'))\n\n\n"
        "def unused(command):\n"
        "    return subprocess.Popen(command, shell=True)\n")
    out = {f.range.start_line: f for f in view(
        tmp_path, [mk("B602", file="mitre.py", line=5), mk("B602", file="mitre.py", line=13)])}
    assert out[5].noise is None
    assert out[13].noise == "advisory: a subprocess call, no input traced to it"


def test_a_password_in_a_login_handler_stays(tmp_path):
    (tmp_path / "views.py").write_text(
        "def login(request):\n"
        "    name, password = request.POST['name'], request.POST['password']\n"
        "    if name == 'jack' and password == 'jacktheripper':\n"
        "        return 'ok'\n\n\n"
        "DEFAULT_PASSWORD = 'changeme-later'\n")
    out = {f.range.start_line: f for f in view(
        tmp_path, [mk("B105", file="views.py", line=3), mk("B105", file="views.py", line=7)])}
    assert out[3].noise is None
    assert out[7].noise.startswith("advisory: a password-like name")


@pytest.mark.parametrize(("module", "shown"), [
    ("from flask import Flask\n\napp = Flask('vulpy')\n"
     "app.config['SECRET_KEY'] = 'aaaaaaa'\n", True),
    # the same line in a settings template that builds no application
    ("app = object()\napp.config = {}\napp.config['X'] = 1\napp.config['SECRET_KEY'] = 'aaaaaaa'\n",
     False),
])
def test_a_literal_signing_key_in_the_module_that_builds_the_app_stays(tmp_path, module, shown):
    (tmp_path / "vulpy.py").write_text(module)
    (out,) = view(tmp_path, [mk("B105", file="vulpy.py", line=4)])
    assert (out.noise is None) is shown, out.noise


def test_pseudo_random_numbers_that_make_a_key_stay(tmp_path):
    (tmp_path / "dice.py").write_text("damage_value = randint(15, 25)\n")
    (tmp_path / "libapi.py").write_text(
        "import random\n"
        "key = str(random.getrandbits(2048))\n"
        "delay = random.random()\n")
    out = {f.range.start_line: f for f in view(
        tmp_path, [mk("B311", file="libapi.py", line=2, sev=Severity.low),
                   mk("B311", file="libapi.py", line=3, sev=Severity.low)])}
    assert out[2].noise is None
    # the twin: a number that makes no secret (a game's dice roll)
    assert out[3].noise
    (roll,) = default_view([mk("B311", file="dice.py", line=1, sev=Severity.low)],
                           canonical_rule, FileLines(tmp_path).lines)
    assert roll.noise == "advisory: pseudo-random numbers, no secret use on the line"
