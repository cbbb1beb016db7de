"""Keys that are no secret where they are written: a run of one character
is the format's placeholder; a GitHub App installation token expires an
hour after it is issued (recorded in test data it is long dead, in product
code it is still a leak); an AWS key's id inside a presigned URL is public
by design (the secret is not in the URL)."""

from __future__ import annotations

from superqode_ls.config import DEFAULT_PATH_CLASSES
from superqode_ls.models import Severity
from superqode_ls.qe.noise import classify_paths
from superqode_ls.qe.noise_paths import path_class
from superqode_ls.qe.roles._secrets import scan_text
from tests.role_helpers import lint_finding

APP = "ghs_1llwuELtXN5HDOB99XhpcTXdJxbOuF0ZlSmj"
PAT = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _rules(text: str, in_test: bool = False) -> list[str]:
    return [h.rule.id for h in scan_text(text, in_test=in_test)]


def test_an_installation_token_is_its_own_rule_a_personal_token_stays_critical():
    assert _rules(f'{{"token":"{APP}", "expires_at":"2024-11-25T01:00:02Z"}}') == [
        "secret-github-app-token"]
    (hit,) = scan_text(f'TOKEN = "{PAT}"\n')
    assert hit.rule.id == "secret-github-token" and hit.rule.severity is Severity.critical


def test_an_installation_token_in_test_data_is_noise_in_product_code_it_is_shown():
    def finding(rule, file):
        return lint_finding(rule, file, 10, role="security_tester", tool="superqode-secrets",
                            category="secrets", severity=Severity.high, id=f"{rule}{file}")
    assert path_class("tests/ReplayData/x.txt", DEFAULT_PATH_CLASSES)
    found = classify_paths([finding("secret-github-app-token", "tests/ReplayData/x.txt"),
                            finding("secret-github-token", "tests/ReplayData/y.txt"),
                            finding("secret-github-app-token", "app/client.py")],
                           DEFAULT_PATH_CLASSES)
    replay, pat, product = found
    assert "expires within hours" in replay.noise
    assert pat.noise is None  # a personal token does not expire by itself
    assert product.noise is None and product.severity is Severity.high


def test_a_presigned_urls_key_id_is_no_secret_a_bare_key_id_is():
    url = ("https://bucket.s3.amazonaws.com/a.tgz?X-Amz-Algorithm=AWS4-HMAC-SHA256"
           "&X-Amz-Credential=AKIAISTNZFOVBIJMK3TQ%2F20180913%2Fus-east-1%2Fs3%2Faws4_request"
           "&X-Amz-Signature=a0aeb638facd0c78")
    assert "secret-aws-access-key-id" not in _rules(f'URL = "{url}"\n')
    assert "secret-aws-access-key-id" in _rules('KEY_ID = "AKIAISTNZFOVBIJMK3TQ"\n')


def test_a_key_of_one_repeated_character_is_the_formats_placeholder():
    assert _rules('AWS_SECRET_KEY = "' + "X" * 40 + '"\n') == []
    assert _rules('aws_secret_key = "Zq8pLm2vR5xT9wKeA1b2C3d4E5f6G7h8I9j0K1l2"\n') == [
        "secret-aws-secret-key"]
