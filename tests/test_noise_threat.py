"""A library's threat model: in the shipped code of a library, a security
pattern with no outside input traced to it, and a literal every install
carries, are noise one level lower; a traced flow, a rule wrong whatever
the input and a provider's token stay; an application is not judged."""

from __future__ import annotations

from pathlib import Path

from superqode_ls.models import Severity
from superqode_ls.qe.noise import FileLines, filter_findings
from tests.role_helpers import lint_finding

_LIB = {"pyproject.toml": "[project]\nname = 'pipekit'\n", "pipekit/__init__.py": "",
        "pipekit/db.py": "x = 1\n" * 20, "tests/test_db.py": "x = 1\n" * 20}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _sec(rule, line, *, tool="bandit", category="security", file="pipekit/db.py", **kw):
    return lint_finding(rule, file, line, role="security_tester", tool=tool, category=category,
                        severity=kw.pop("severity", Severity.high), id=f"{rule}-{line}", **kw)


def _by_rule(root: Path, findings) -> dict:
    found = filter_findings(findings, read_line=FileLines(root), threshold=0.0).findings
    return {f.rule_id: f for f in found}


def test_a_librarys_patterns_without_a_flow_are_noise_one_level_lower(tmp_path):
    _write(tmp_path, _LIB)
    found = _by_rule(tmp_path, [
        _sec("B608", 1), _sec("B324", 2), _sec("B310", 3, severity=Severity.medium),
        _sec("sql-injection", 4, tool="superqode-patterns"),
        _sec("S602", 5, tool="ruff", category="lint")])
    for rule in ("B608", "B324", "B310", "sql-injection", "S602"):
        f = found[rule]
        assert f.noise and "no input traced to it" in f.noise, rule
        assert "threat:library" in f.tags
    assert found["B608"].severity is Severity.medium  # one level lower than high
    assert found["B310"].severity is Severity.low
    assert "shown one level lower than high" in found["B608"].severity_reason


def test_flows_and_rules_wrong_whatever_the_input_stay(tmp_path):
    _write(tmp_path, _LIB)
    found = _by_rule(tmp_path, [
        _sec("B307", 1), _sec("B501", 2), _sec("B506", 3), _sec("B113", 4),
        _sec("open-redirect", 5, tool="superqode-patterns"),
        _sec("reflected-xss", 6, tool="superqode-patterns"),
        _sec("B602", 7, tags=["data-flow"]),
        _sec("insecure-cookie", 8, tool="superqode-patterns")])
    assert len(found) == 8
    for rule, f in found.items():
        assert f.noise is None and f.severity is Severity.high, rule


def test_a_literal_every_install_carries_is_no_secret_a_providers_token_stays(tmp_path):
    _write(tmp_path, _LIB)
    found = _by_rule(tmp_path, [
        _sec("secret-generic", 1, tool="superqode-secrets", category="secrets"),
        _sec("B105", 2),
        _sec("secret-github-token", 3, tool="superqode-secrets", category="secrets"),
        _sec("secret-private-key", 4, tool="superqode-secrets", category="secrets")])
    for rule in ("secret-generic", "B105"):
        assert "every install of the library carries" in found[rule].noise, rule
    assert found["secret-github-token"].noise is None
    assert found["secret-private-key"].noise is None


def test_a_lint_rule_that_is_no_security_pattern_is_not_judged(tmp_path):
    _write(tmp_path, _LIB)
    found = _by_rule(tmp_path, [lint_finding("F821", "pipekit/db.py", 1),
                                lint_finding("B006", "pipekit/db.py", 2)])
    assert "threat:library" not in found["F821"].tags
    assert all("threat:library" not in f.tags for f in found.values())


def test_an_application_is_not_judged_by_a_librarys_threat_model(tmp_path):
    # a deployable project (manage.py) and one with no distribution at all
    site, bare = tmp_path / "site", tmp_path / "bare"
    _write(site, {**_LIB, "manage.py": "import django\n"})
    _write(bare, {k: v for k, v in _LIB.items() if k != "pyproject.toml"})
    for root in (site, bare):
        found = _by_rule(root, [_sec("B608", 1), _sec("secret-generic", 2,
                                                      tool="superqode-secrets",
                                                      category="secrets")])
        assert found["B608"].noise is None and found["B608"].severity is Severity.high
        assert found["secret-generic"].noise is None


def test_the_step_is_off_with_the_path_classes(tmp_path):
    _write(tmp_path, _LIB)
    found = filter_findings([_sec("B608", 1)], read_line=FileLines(tmp_path), threshold=0.0,
                            path_classes={}).findings
    assert found[0].noise is None


_SINKS = '''import subprocess


class Store:
    table = "events"

    def backup(self, directory):
        return subprocess.call("tar czf backup.tgz " + directory, shell=True)

    def purge(self, cur, day):
        sql = "DELETE FROM %s" % self.table
        sql += " WHERE day < '" + day + "'"
        cur.execute(sql)

    def count(self, cur, day):
        cur.execute(f"SELECT count(*) FROM {self.table} WHERE day = %s", (day,))

    def run(self, cmd):
        return subprocess.call(cmd, shell=True)
'''


def test_a_sink_built_from_the_callers_value_stays_the_librarys_own_names_do_not(tmp_path):
    _write(tmp_path, {**_LIB, "pipekit/db.py": _SINKS})
    found = filter_findings([_sec("B602", 8), _sec("B608", 12), _sec("B608", 16),
                             _sec("B602", 19)],
                            read_line=FileLines(tmp_path), threshold=0.0).findings
    at = {f.range.start_line: f for f in found}
    assert at[8].noise is None  # the caller's directory in a shell command
    assert at[12].noise is None  # the caller's day, through a local built with it
    # the class's own table name; the caller's value bound as a parameter
    assert "no input traced to it" in at[16].noise
    # the command the caller passes, run as asked (the API's contract)
    assert at[19].noise


def test_a_password_in_a_librarys_code_stays(tmp_path):
    _write(tmp_path, {**_LIB, "pipekit/db.py": 'DB_PASSWORD = "hunter2-prod-db"\n'
                                                'API_KEY = "3_abcdef0123456789"\n'})
    found = filter_findings([_sec("B105", 1, related_rules=["secret-generic"]),
                             _sec("secret-generic", 2, tool="superqode-secrets",
                                  category="secrets")],
                            read_line=FileLines(tmp_path), threshold=0.0).findings
    at = {f.range.start_line: f for f in found}
    assert at[1].noise is None and at[1].severity is Severity.high
    assert "every install" in at[2].noise


_PRIVATE = '''import subprocess


def _purge(cur, day):
    cur.execute("DELETE FROM t WHERE day < '" + day + "'")


def kill(pid: int):
    return subprocess.call("kill %d" % pid, shell=True)
'''


def test_a_private_helpers_or_a_numbers_argument_is_no_callers_text(tmp_path):
    _write(tmp_path, {**_LIB, "pipekit/db.py": _PRIVATE})
    found = filter_findings([_sec("B608", 5), _sec("B602", 9)],
                            read_line=FileLines(tmp_path), threshold=0.0).findings
    assert all(f.noise and "no input traced" in f.noise for f in found)


# redis-py's identity-provider token: the client is given the token, decodes
# it unverified for its expiry and hands it back raw to be sent to the server
# (which verifies it). A library function that decodes a token to decide who
# the user is, or a class that never hands the token on, stays.
_TOKEN = '''import jwt


class JWToken:
    def __init__(self, token: str):
        self._value = token
        self._decoded = jwt.decode(
            self._value,
            options={"verify_signature": False},
        )

    def get_value(self) -> str:
        return self._value

    def ttl(self):
        return self._decoded["exp"]


def current_user(token):
    claims = jwt.decode(token, options={"verify_signature": False})
    return claims["sub"]


class Session:
    def __init__(self, token):
        self.token = token
        self.claims = jwt.decode(token, options={"verify_signature": False})

    def user(self):
        return self.claims["sub"]
'''


def test_a_clients_own_token_decoded_for_its_claims_is_noise_a_verifier_stays(tmp_path):
    _write(tmp_path, {**_LIB, "pipekit/token.py": _TOKEN})
    found = filter_findings([
        _sec("jwt-no-verify", line, tool="superqode-patterns", file="pipekit/token.py")
        for line in (7, 20, 27)],
        read_line=FileLines(tmp_path), threshold=0.0).findings
    by_line = {f.range.start_line: f for f in found}
    assert by_line[7].noise and "the server it is presented to verifies" in by_line[7].noise
    assert by_line[20].noise is None and by_line[20].severity is Severity.high
    assert by_line[27].noise is None and by_line[27].severity is Severity.high
