"""What a secret's value looks like, whichever tool calls it one: bandit's
password rules (B105-B107) and the secrets scan's generic rule ask the same
question of the value (``_secrets_values.not_a_secret``). Values a blind
judge found shown as secrets on real projects, each paired with the secret
next to it that must stay shown."""

from __future__ import annotations

import pytest

from superqode_ls.models import Severity
from superqode_ls.qe.noise import deduplicate
from superqode_ls.qe.roles._secrets_values import not_a_secret
from tests.test_noise import mk
from tests.test_noise_rules import _at, _kept, _security, needs_bandit

# (value, the line it is on, what it is); each judged shown as a secret by
# old code on flask-security, django-oauth-toolkit, sentry-python, streamlink.
NOT_SECRETS = [
    ("security/reset_password.html",
     '    "RESET_PASSWORD_TEMPLATE": "security/reset_password.html",', "path"),
    ("security/email/reset_notice",
     '    "EMAIL_TEMPLATE_PASSWORD_RESET_NOTICE": "security/email/reset_notice",', "path"),
    ("36000", '    "ACCESS_TOKEN_EXPIRE_SECONDS": 36000,', "a number"),
    ("oauth2_provider.admin.IDTokenAdmin",
     '    "ID_TOKEN_ADMIN_CLASS": "oauth2_provider.admin.IDTokenAdmin",', "dotted path"),
    ("Optional[str]", '        secret_key: "Optional[str]" = None,', "type expression"),
    ("Optional[CompletionUsage]",
     '    streaming_message_total_token_usage: "Optional[CompletionUsage]",', "type expression"),
    ("https://api.tvp.pl/tokenizer/token/{token}",
     '    _URL_INFO_API_TOKEN = "https://api.tvp.pl/tokenizer/token/{token}"', "URL template"),
    ("Bearer:{access_token}", '    auth_token = "Bearer:{access_token}"', "format template"),
    ("argon2", '    "PASSWORD_HASH": "argon2",', "algorithm"),
    ("pbkdf2_sha512", '    "SECURITY_PASSWORD_HASH": "pbkdf2_sha512",', "algorithm"),
    # modoboa: Django REST framework's throttle rates and a form's visibility rules
    ("12/hour", '        "password_recovery_request": "12/hour",', "a rate"),
    ("100/minute", '    PASSWORD_RESET_LIMIT = "100/minute"', "a rate"),
    ("sms_provider=ovh", '        "sms_ovh_consumer_key": "sms_provider=ovh",', "a condition"),
    ("sms_password_recovery=true&sms_provider=ovh",
     '        "sms_ovh_application_secret": "sms_password_recovery=true&sms_provider=ovh",',
     "a condition"),
]

# The secrets beside them: the same shapes' neighbours that are credentials.
SECRETS = [
    ("Zq8pLm2vR5xT9wKe3Hs7Yb", '    "RESET_PASSWORD_SECRET": "Zq8pLm2vR5xT9wKe3Hs7Yb",'),
    ("12345678", '    password = "12345678"'),
    ("4421", '    if pin_code == "4421":'),
    ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8pLm2vR5",
     '    aws_secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8pLm2vR5"'),
    ("Zq8pLm2vR5.xT9wKe", '    API_TOKEN = "Zq8pLm2vR5.xT9wKe"'),
    ("https://admin:S3cretPw@db.example.com/{db}",
     '    DB_URL = "https://admin:S3cretPw@db.example.com/{db}"'),
    ("https://api.x.com/v1?token=Zq8pLm2vR5xT9wKe",
     '    token_endpoint = "https://api.x.com/v1?token=Zq8pLm2vR5xT9wKe"'),
    ("sk_live_9aF3{suffix}", '    api_key = "sk_live_9aF3{suffix}"'),
    ("bcrypt", '    db_password = "bcrypt"'),
    ("Hunter[2]Pass", '    admin_password = "Hunter[2]Pass"'),
    # the rate's and the condition's neighbours: a password given the shape,
    # a condition that carries a secret's value
    ("12/hour", '    password = "12/hour"'),
    ("Xq7/hour", '    "consumer_key": "Xq7/hour",'),
    ("db_password=hunter", '    "dsn_extra": "db_password=hunter",'),
    ("sms_provider=ovh7Kq", '    "sms_ovh_consumer_key": "sms_provider=ovh7Kq",'),
]


@pytest.mark.parametrize(("value", "line", "why"), NOT_SECRETS)
def test_values_shaped_like_no_secret(value, line, why):
    assert why in (not_a_secret(value, line) or ""), not_a_secret(value, line)


@pytest.mark.parametrize(("value", "line"), SECRETS)
def test_secrets_beside_them_stay(value, line):
    assert not_a_secret(value, line) is None


SETTINGS = '''_default_config = {
    "FORGOT_PASSWORD_TEMPLATE": "security/forgot_password.html",
    "EMAIL_TEMPLATE_PASSWORD_RESET": "security/email/reset_instructions",
    "ACCESS_TOKEN_EXPIRE_SECONDS": 36000,
    "ID_TOKEN_ADMIN_CLASS": "oauth2_provider.admin.IDTokenAdmin",
    "RESET_PASSWORD_SECRET": "Zq8pLm2vR5xT9wKe3Hs7Yb",
}
'''

# modoboa's throttle rates and an SMS backend's form rules, a real key beside them
RATES = '''REST_FRAMEWORK = {
    "DEFAULT_THROTTLE_RATES": {
        "password_recovery_request": "12/hour",
    },
}
visibility_rules = {
    "sms_ovh_application_secret": "sms_provider=ovh",
}
SMS_PASSWORD = "Kq7wZr2mXp9Lv4"
'''

CLIENT = '''from typing import Optional

_URL_INFO_API_TOKEN = "https://api.tvp.pl/tokenizer/token/{token}"
UPSTREAM = "https://svc:Zq8pLm2vR5xT9wKe@api.example.com/v1"


class Dsn:
    def __init__(self, host: str, secret_key: "Optional[str]" = None) -> None:
        self.host = host
        self.secret_key = secret_key


def connect(password="Kx9wQ2mZr7Lp"):
    return Dsn(password)
'''


@needs_bandit
def test_real_tools_drop_the_shapes_and_keep_the_secrets(make_repo):
    found = _security(make_repo({"app/__init__.py": "", "app/core.py": SETTINGS,
                                 "app/client.py": CLIENT}))
    for line in (2, 3, 4, 5):
        assert all(f.noise for f in _at(found, "app/core.py", line)), (
            line, [(f.rule_id, f.noise) for f in _at(found, "app/core.py", line)])
    _kept(found, "app/core.py", 6)
    for line in (3, 8):
        assert all(f.noise for f in _at(found, "app/client.py", line)), line
    _kept(found, "app/client.py", 4)
    _kept(found, "app/client.py", 13)


@needs_bandit
def test_real_tools_drop_rates_and_conditions_and_keep_the_password(make_repo):
    found = _security(make_repo({"app/__init__.py": "", "app/settings.py": RATES}))
    for line in (3, 7):
        assert _at(found, "app/settings.py", line), line  # the tools flag it...
        assert all(f.noise for f in _at(found, "app/settings.py", line)), (
            line, [(f.rule_id, f.noise) for f in _at(found, "app/settings.py", line)])
    _kept(found, "app/settings.py", 9)


def test_a_value_judged_no_secret_is_not_brought_back_by_the_generic_report():
    bandit = mk("B105", "bandit", 5, sev=Severity.info).model_copy(update={
        "noise": "not a secret: the value is a dotted path to a class"})
    generic = mk("secret-generic", "superqode-secrets", 5, sev=Severity.high)
    out, _ = deduplicate([bandit, generic])
    assert len(out) == 1 and out[0].noise and "dotted path" in out[0].noise
    assert "secret-generic" in out[0].related_rules or "B105" in out[0].related_rules


def test_a_provider_token_on_the_line_is_not_overruled():
    bandit = mk("B105", "bandit", 5, sev=Severity.info).model_copy(update={
        "noise": "not a secret: the value is an identifier"})
    token = mk("secret-github-token", "superqode-secrets", 5, sev=Severity.high)
    generic = mk("secret-generic", "superqode-secrets", 5, sev=Severity.high)
    out, _ = deduplicate([bandit, token, generic])
    assert all(f.noise is None for f in out if f.file == "a.py" and f.range.start_line == 5)


def test_a_judgement_of_the_name_does_not_hide_the_generic_report():
    # "pass_through_api_key": the name's "pass" is a verb, its api_key is a key
    bandit = mk("B105", "bandit", 5, sev=Severity.info).model_copy(update={
        "noise": "not a secret: the name says pass (the verb), not password"})
    generic = mk("secret-generic", "superqode-secrets", 5, sev=Severity.high)
    out, _ = deduplicate([bandit, generic])
    assert len(out) == 1 and out[0].noise is None


def test_another_check_of_the_line_keeps_its_own_say():
    # pygoat: ``sql_lab_table(id="jack", password="jack")``; bandit's B106
    # took the value for the id's; the patterns' check of the password stays
    bandit = mk("B106", "bandit", 5, sev=Severity.info).model_copy(update={
        "noise": "not a secret: the value is a plain word (a token type or mode, not a token)"})
    own = mk("hardcoded-db-password", "superqode-patterns", 5, sev=Severity.high)
    out, _ = deduplicate([bandit, own])
    assert len(out) == 1 and out[0].noise is None and out[0].severity == Severity.high
