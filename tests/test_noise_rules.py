"""Findings judged by hand on a clean, well-kept Django app (healthchecks):
placeholders in example files, a CI job's test database, a weak hash that
only makes a rate-limit or cache key, mark_safe of URL-encoded text. Each
case has a neighbour that must stay worth acting on."""

from __future__ import annotations

import pytest

from superqode_ls.models import Finding, Range, Severity
from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.noise_rules import example_file
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role

needs_bandit = pytest.mark.skipif(tool_path("bandit") is None, reason="bandit not installed")


def _security(repo):
    found = run_role(SecurityTester(), make_ctx(repo)).findings
    return filter_findings(found, read_line=FileLines(repo), threshold=0.7).findings


def _at(findings, file, line, rule=None):
    return [f for f in findings if f.file == file and f.range and f.range.start_line == line
            and (rule is None or f.rule_id == rule or rule in f.related_rules)]


def _kept(found, file, line, rule=None):
    hits = _at(found, file, line, rule)
    assert hits, (file, line, [(f.file, f.range and f.range.start_line, f.rule_id) for f in found])
    assert all(f.noise is None for f in hits), [f.noise for f in hits]
    return hits


def _noise(found, file, line, why, rule=None, lowered=True):
    hits = _at(found, file, line, rule)
    assert hits, (file, line, [(f.file, f.range and f.range.start_line, f.rule_id) for f in found])
    for f in hits:
        assert f.noise and why in f.noise, f.noise
        assert f.severity.rank <= Severity.low.rank or not lowered


def test_example_file_names():
    for name in (".env.example", "docker/.env.example", "config.sample.yml", "example.env",
                 "settings.ini.dist", "env-template", "app.conf.tmpl"):
        assert example_file(name), name
    for name in (".env", "config.yml", "example.py", "templates/base.html", "docs/example.md",
                 "exampleapp.cfg"):
        assert not example_file(name), name


AKIA = "AKIA" + "Q3HZKWDRNQ7Z2BKT"  # split: no key-shaped literal in the source


def test_a_placeholder_in_an_example_file_is_noise_a_real_key_there_stays(make_repo):
    repo = make_repo({
        "docker/.env.example": ("DB=postgres\nDB_PASSWORD=fixme-postgres-password\n"
                                f"AWS_ACCESS_KEY_ID={AKIA}\n"),
        "deploy/.env": "DB_PASSWORD=fixme-postgres-password\n",
    })
    found = _security(repo)
    _noise(found, "docker/.env.example", 2, "example or template file")
    (key,) = _kept(found, "docker/.env.example", 3)
    assert key.severity.at_least(Severity.high)
    _kept(found, "deploy/.env", 1)


TESTS_YML = """name: tests
on: [push]
jobs:
    test:
        runs-on: ubuntu-latest
        strategy:
            matrix:
                include:
                    - db: mysql
                      db_password: root
        services:
            postgres:
                image: postgres:16
                env:
                    POSTGRES_PASSWORD: hc-ci-password
        steps:
            - run: python manage.py test
            - uses: actions/upload-artifact@v4
"""
DEPLOY_YML = """name: ship
on: [push]
jobs:
    deploy:
        runs-on: ubuntu-latest
        env:
            DB_PASSWORD: Prod-db-Pa55word
        steps:
            - run: ./deploy.sh
"""


def test_a_ci_test_database_password_is_noise_a_deploy_secret_stays(make_repo):
    repo = make_repo({".github/workflows/tests.yml": TESTS_YML,
                      ".github/workflows/deploy.yml": DEPLOY_YML})
    found = _security(repo)
    _noise(found, ".github/workflows/tests.yml", 10, "test database")
    _noise(found, ".github/workflows/tests.yml", 15, "test database")
    _kept(found, ".github/workflows/deploy.yml", 7)


MODELS = """import hashlib

from django.conf import settings
from django.core.cache import cache


class Check:
    @property
    def unique_key(self):
        code_half = self.code.hex[:16]
        return hashlib.sha1(code_half.encode()).hexdigest()


def authorize_login_email(email):
    salted_encoded = (email + settings.SECRET_KEY).encode()
    hashed = hashlib.sha1(salted_encoded).hexdigest()
    return TokenBucket.authorize(f"em-{hashed}", 10, 3600)


def cached_page(url):
    key = hashlib.md5(url.encode()).hexdigest()
    return cache.get("page:" + key)


def webhook_ok(request, body):
    hashed = hashlib.sha1((settings.SECRET_KEY + body).encode()).hexdigest()
    return hashed == request.headers["X-Signature"]


def sign(data):
    return hashlib.sha1((settings.SECRET_KEY + data).encode()).hexdigest()


def store(user, password):
    user.key = hashlib.md5(password.encode()).hexdigest()
"""


@needs_bandit
def test_a_hash_that_only_makes_a_key_is_noise_a_signature_or_password_stays(make_repo):
    repo = make_repo({"hc/api/models.py": MODELS})
    found = _security(repo)
    for line in (11, 16, 21):
        _noise(found, "hc/api/models.py", line, "identifier", "B324")
    for line in (26, 31, 35):
        _kept(found, "hc/api/models.py", line, "B324")


TAGS = """import json
import shlex
from urllib.parse import quote

from django.utils.safestring import mark_safe


def sort_url(context, sort):
    q = context["request"].GET.copy()
    q["sort"] = sort
    urlencoded = q.urlencode()
    return mark_safe("?" + urlencoded)


def link(name):
    return mark_safe(f'<a href="/u/{quote(name)}">x</a>')


def data(obj):
    return mark_safe(json.dumps(obj))


def cmd(name):
    return mark_safe(shlex.quote(name))


def loose(name):
    return mark_safe(quote(name, safe="<>"))
"""


@needs_bandit
def test_mark_safe_of_url_encoded_text_is_noise_json_or_shell_quoting_stays(make_repo):
    repo = make_repo({"hc/front/templatetags/hc_extras.py": TAGS})
    found = _security(repo)
    path = "hc/front/templatetags/hc_extras.py"
    _noise(found, path, 12, "Markup on safe text")
    _noise(found, path, 16, "Markup on safe text")
    for line in (20, 24, 28):
        _kept(found, path, line)


@needs_bandit
def test_a_password_status_word_is_noise_a_password_in_a_subscript_stays(make_repo):
    repo = make_repo({"hc/accounts/views.py": (
        "def profile(request, ctx):\n"
        "    if request.session.pop('changed_password', False):\n"
        "        ctx['email_password_status'] = 'success'\n"
        "    ctx['email_password'] = 'Xk29-prod!db'\n"
        "    return ctx\n")})
    found = _security(repo)
    _noise(found, "hc/accounts/views.py", 3, "not a secret", "B105")
    _kept(found, "hc/accounts/views.py", 4, "B105")


def test_self_read_again_under_a_lock_is_noise_self_replaced_stays(tmp_path):
    (tmp_path / "m.py").write_text(
        "class Check:\n"
        "    def ping(self):\n"
        "        self = Check.objects.select_for_update().get(id=self.id)\n"
        "        return self\n\n"
        "    def swap(self, other):\n"
        "        self = other\n"
        "        return self\n")
    found = [Finding(role="lint_tester", tool="ruff", rule_id="PLW0642", title="t",
                     message="Reassigned `self` variable in instance method",
                     severity=Severity.medium, confidence=0.9, category="lint", file="m.py",
                     range=Range(start_line=n, start_col=9, end_line=n, end_col=13))
             for n in (3, 7)]
    out = {f.range.start_line: f for f in filter_findings(
        found, read_line=FileLines(tmp_path), threshold=0.7).findings}
    assert out[3].noise and "own identity" in out[3].noise
    assert out[7].noise is None and out[7].severity is Severity.medium


@needs_bandit
def test_a_password_compared_after_a_username_with_the_same_word_stays(make_repo):
    # secDevLabs a8: the first "admin" is the username's, the second the password's
    repo = make_repo({"app/app.py": (
        "def login(request):\n"
        "    username = request.values.get('username')\n"
        "    password = request.values.get('password')\n"
        "    if username == 'admin' and password == 'admin':\n"
        "        return True\n"
        "    if password == '-':\n"
        "        return None\n")})
    found = _security(repo)
    (f,) = _kept(found, "app/app.py", 4, "B105")
    assert f.severity.at_least(Severity.high)


def test_a_signing_keys_fallback_literal_is_shown_in_the_product_noise_in_tests(make_repo):
    # microblog's config.py; mdn's locallibrary wraps the call over two lines
    config = ("import os\n\n\nclass Config:\n"
              "    SECRET_KEY = os.environ.get('SECRET_KEY') or 'you-will-never-guess'\n"
              "    MAIL_PASSWORD = os.environ.get('MAIL_PASSWORD')\n"
              "    OTHER_KEY = os.environ['SECRET_KEY']\n")
    settings = ("import os\n# SECRET_KEY = 'django-insecure-&psk#na5l=p3q8_a+-$4w1'\n"
                "SECRET_KEY = os.environ.get(\n"
                "    'DJANGO_SECRET_KEY', 'django-insecure-&psk#na5l=p3q8_a+-$4w1')\n")
    repo = make_repo({"config.py": config, "site/settings.py": settings,
                      "tests/settings.py": settings})
    found = _security(repo)
    (f,) = _kept(found, "config.py", 5, "secret-signing-key-default")
    assert f.severity.at_least(Severity.high)
    assert "you-will" not in " ".join(e.snippet or "" for e in f.evidence)  # masked
    _kept(found, "site/settings.py", 4, "secret-signing-key-default")
    assert not _at(found, "site/settings.py", 2)  # its commented-out copy: one finding
    _noise(found, "tests/settings.py", 4, "tests", "secret-signing-key-default", lowered=False)
    assert not [g for g in found if g.file == "config.py" and g.range.start_line in (6, 7)]


PROD_OK = ("import os\nimport random\nimport string\n\nfrom .base import *  # noqa\n\n"
           "if 'DJANGO_SECRET_KEY' in os.environ:\n"
           "    SECRET_KEY = os.environ['DJANGO_SECRET_KEY']\n"
           "else:\n"
           "    SECRET_KEY = ''.join(\n"
           "        [random.SystemRandom().choice(string.printable) for i in range(50)]\n"
           "    )\n")
PROD_FALLS_BACK = ("import os\n\nfrom .base import *  # noqa\n\n"
                   "SECRET_KEY = os.environ.get('DJANGO_SECRET_KEY', SECRET_KEY)\n")
BASE = "DEBUG = True\nSECRET_KEY = 'c6u0-9c!7nilj_ysatsda0(f@e_2mws2f!6m0n^o*4#*q#kzp)'\n"


@needs_bandit
def test_a_dev_settings_key_that_production_replaces_is_noise_one_it_falls_back_to_stays(
        make_repo):
    # wagtail's bakerydemo: settings/base.py and settings/production.py
    repo = make_repo({"bakery/settings/base.py": BASE, "bakery/settings/production.py": PROD_OK,
                      "shop/settings/base.py": BASE, "shop/settings/production.py": PROD_FALLS_BACK,
                      "solo/settings/base.py": BASE})
    found = _security(repo)
    _noise(found, "bakery/settings/base.py", 2, "development key")
    _kept(found, "shop/settings/base.py", 2)
    _kept(found, "solo/settings/base.py", 2)
