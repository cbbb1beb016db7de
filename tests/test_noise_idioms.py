"""Noise rules judged on web apps and libraries none of the other rules were
tuned on (a Flask RealWorld app, a forms library, a one-file web
framework): each rule with the finding that must become noise and the
neighbour that must stay worth acting on, on real files and real bandit /
ruff / pattern output."""

from __future__ import annotations

import pytest

from superqode_ls.models import Finding, Range, Severity
from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.lint import LintTester
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role

needs_bandit = pytest.mark.skipif(tool_path("bandit") is None, reason="bandit not installed")
needs_ruff = pytest.mark.skipif(tool_path("ruff") is None, reason="ruff not installed")


def _filtered(repo, findings):
    return filter_findings(findings, read_line=FileLines(repo), threshold=0.7).findings


def _at(findings, file, line, rule):
    hits = [f for f in findings if f.file == file and f.range and f.range.start_line == line
            and (f.rule_id == rule or rule in f.related_rules)]
    assert hits, (file, line, rule, [(f.file, f.range and f.range.start_line, f.rule_id)
                                     for f in findings])
    return hits


def _noise(findings, file, line, rule, why):
    for f in _at(findings, file, line, rule):
        assert f.noise and why in f.noise, f.noise
        assert f.severity.rank <= Severity.low.rank


def _kept(findings, file, line, rule, at_least=Severity.medium):
    for f in _at(findings, file, line, rule):
        assert f.noise is None, f.noise
        assert f.severity.at_least(at_least), f.severity


HASHES = """import hashlib
import hmac
import os
import uuid
from hashlib import sha1


def new_csrf(session):
    session["csrf"] = sha1(os.urandom(64)).hexdigest()


def new_nonce():
    return hashlib.md5(str(uuid.uuid4()).encode()).hexdigest()


def hash_password(password):
    return hashlib.sha1(password.encode()).hexdigest()


def salted(user_id):
    return hashlib.sha1(os.urandom(8) + user_id.encode()).hexdigest()


def _lazy_sha1(string=b""):
    return hashlib.sha1(string)


class Signer:
    digest_method = staticmethod(_lazy_sha1)


def _lazy_md5(string=b""):
    return hashlib.md5(string)


class OldSigner:
    digest_method = staticmethod(_lazy_md5)


def _sha1_too(data=b""):
    return hashlib.sha1(data)


def sign(key, msg):
    return hmac.new(key, msg, _sha1_too).hexdigest(), _sha1_too(msg).hexdigest()
"""


@needs_bandit
def test_a_weak_hash_of_randomness_or_as_an_hmac_digest_is_noise_others_stay(make_repo):
    repo = make_repo({"app/crypto.py": HASHES})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    _noise(found, "app/crypto.py", 9, "B324", "randomness")  # sha1(os.urandom(64))
    _noise(found, "app/crypto.py", 13, "B324", "randomness")  # md5(str(uuid4()))
    _noise(found, "app/crypto.py", 25, "B324", "HMAC")  # digest_method = staticmethod(f)
    _kept(found, "app/crypto.py", 17, "B324", Severity.high)  # a password
    _kept(found, "app/crypto.py", 21, "B324")  # randomness and a user id
    _kept(found, "app/crypto.py", 33, "B324")  # MD5, even as an HMAC's digest
    _kept(found, "app/crypto.py", 41, "B324")  # also called for a hash of its own


LINT_CONFIG = '[tool.ruff.lint]\nselect = ["B006", "PLW0127"]\n'

DEFAULTS = """from sqlalchemy.orm import relationship

relationship = relationship


def prepare(env, filters=None, globals={}, **kwargs):
    if globals:
        env.globals.update(globals)
    for k in globals:
        print(k, globals[k], globals.get(k))
    return len(globals)


def remember(item, seen=[]):
    seen.append(item)
    return seen


def hand_out(options={}):
    return options


def helper():
    value = 1
    value = value
    return value


def nested(key, table={"a": []}):
    table[key].append(1)
    return len(table)
"""


@needs_ruff
def test_a_default_only_read_and_a_module_reexport_are_noise_mutation_stays(make_repo):
    repo = make_repo({"pyproject.toml": LINT_CONFIG, "lib/db.py": DEFAULTS})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    _noise(found, "lib/db.py", 3, "PLW0127", "re-exports")
    _noise(found, "lib/db.py", 6, "B006", "only read")
    _kept(found, "lib/db.py", 14, "B006", Severity.low)  # appended to: the classic bug
    _kept(found, "lib/db.py", 19, "B006", Severity.low)  # returned: callers may change it
    _kept(found, "lib/db.py", 25, "PLW0127", Severity.low)  # a local self-assignment
    _kept(found, "lib/db.py", 29, "B006", Severity.low)  # a list inside it is changed


FLASK_SETTINGS = """import os


class Config(object):
    SECRET_KEY = os.environ.get('APP_SECRET', 'secret-key')


class ProdConfig(Config):
    DEBUG = False


class DevConfig(Config):
    DEBUG = True


class TestConfig(Config):
    TESTING = True
    DEBUG = True
"""

LEAKY_SETTINGS = """class Config:
    DEBUG = True


class DevConfig(Config):
    DEBUG = True


class ProductionConfig(Config):
    SECRET_KEY = None
"""


def test_debug_on_in_a_dev_config_is_noise_when_production_has_it_off(make_repo):
    repo = make_repo({"conduit/settings.py": FLASK_SETTINGS, "other/settings.py": LEAKY_SETTINGS})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    _noise(found, "conduit/settings.py", 13, "debug-mode", "development or test")
    _noise(found, "conduit/settings.py", 18, "debug-mode", "development or test")
    # the production class inherits debug on: both stay
    _kept(found, "other/settings.py", 2, "debug-mode")
    _kept(found, "other/settings.py", 6, "debug-mode")


def _debug_finding(file: str) -> Finding:
    return Finding(role="security_tester", tool="superqode-patterns", rule_id="debug-mode",
                   title="Debug mode on in the settings", message="DEBUG = True",
                   severity=Severity.medium, confidence=0.9, category="security", file=file,
                   range=Range(start_line=1, start_col=1, end_line=1, end_col=13))


def test_debug_in_django_dev_settings_is_noise_unless_production_turns_it_on(tmp_path):
    good = tmp_path / "site/settings"
    good.mkdir(parents=True)
    (good / "dev.py").write_text("DEBUG = True\n")
    (good / "base.py").write_text("DEBUG = False\n")
    (good / "production.py").write_text("from .base import *\nALLOWED_HOSTS = ['x']\n")
    bad = tmp_path / "leak/settings"
    bad.mkdir(parents=True)
    (bad / "local.py").write_text("DEBUG = True\n")
    (bad / "base.py").write_text("DEBUG = True\n")
    (bad / "production.py").write_text("from .base import *\n")
    (tmp_path / "solo").mkdir()
    (tmp_path / "solo/settings.py").write_text("DEBUG = True\n")
    out = {f.file: f for f in _filtered(tmp_path, [
        _debug_finding(p) for p in ("site/settings/dev.py", "leak/settings/local.py",
                                    "solo/settings.py")])}
    assert out["site/settings/dev.py"].noise and "production settings" in out[
        "site/settings/dev.py"].noise
    assert out["leak/settings/local.py"].noise is None
    assert out["solo/settings.py"].noise is None
    assert out["solo/settings.py"].severity is Severity.medium


WALRUS = "import os\n\nif cmd := os.getenv('CMD'):\n    print(cmd)\n"


@needs_ruff
def test_newer_syntax_in_a_dev_script_is_noise_in_the_package_it_stays(make_repo):
    # httpie's extras/profiling/benchmarks.py: a walrus in a project for 3.7.
    repo = make_repo({
        "pyproject.toml": ('[project]\nname = "pkg"\nversion = "1"\nrequires-python = ">=3.7"\n'
                           '[tool.ruff]\ntarget-version = "py37"\n'),
        "extras/profiling/bench.py": WALRUS,
        "pkg/__init__.py": "", "pkg/cli.py": WALRUS,
    })
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    _noise(found, "extras/profiling/bench.py", 3, "invalid-syntax", "development script")
    _kept(found, "pkg/cli.py", 3, "invalid-syntax", Severity.high)


TAGS = """from markupsafe import Markup


class TagMarkup:
    def to_json(self, value):
        return str(value.__html__())

    def to_python(self, value):
        return Markup(value)


class TagText:
    def to_json(self, value):
        return str(value)

    def to_python(self, value):
        return Markup(value)
"""


@needs_bandit
def test_markup_restoring_what_html_serialised_is_noise_markup_of_plain_text_stays(make_repo):
    # flask's json/tag.py: the session serialiser's tag for Markup.
    repo = make_repo({"app/tag.py": TAGS})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    _noise(found, "app/tag.py", 9, "B704", "round trip")
    _kept(found, "app/tag.py", 17, "B704")


HOSTS = """ALLOWED_HOSTS = ["localhost", "0.0.0.0", "127.0.0.1"]
CSRF_TRUSTED_ORIGINS = ("0.0.0.0",)
LISTEN = ["0.0.0.0", "::"]
"""


@needs_bandit
def test_all_interfaces_in_allowed_hosts_is_noise_a_listen_list_stays(make_repo):
    # djangox's settings: ALLOWED_HOSTS is checked against the Host header.
    repo = make_repo({"site/settings.py": HOSTS})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    for line in (1, 2):
        assert all(f.noise and "compared" in f.noise for f in _at(found, "site/settings.py",
                                                                   line, "B104"))
    _kept(found, "site/settings.py", 3, "B104")


ESCAPED_KEY = r"""from flask import Flask

app = Flask(__name__)
app.secret_key = 'F12Zr47j\3yX R~X@H!jmM]Lwf/,?KT'
app.secret_word = 'F12Zr47j\3yX R~X@H!jmM]Lwf/,?KT'
"""


@needs_bandit
def test_a_signing_key_literal_with_an_escape_is_still_raised_a_secret_word_is_not(make_repo):
    # Flask's documented example key has an escape (\3): the source spells
    # the value otherwise than bandit reports it.
    repo = make_repo({"app/app.py": ESCAPED_KEY})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    _kept(found, "app/app.py", 4, "B105", Severity.high)
    assert all(f.severity.rank < Severity.high.rank for f in _at(found, "app/app.py", 5, "B105"))


ZWSP = "\u200b"
LOCALE = f'''DAYS = ["ວັນ{ZWSP}ສຸກ", "ວັນເສົາ"]
ADMIN = "admin{ZWSP}"
'''

MANAGE = """import sys

try:
    from django.core.management import execute_from_command_line
except ImportError:
    try:
        import django
    except ImportError:
        raise ImportError("Couldn't import Django.")
    raise
import os
"""

NOTEBOOK = ('{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, '
            '"outputs": [], "source": ["import os\\n", "\\n", "# your code here\\n", "os."]}], '
            '"metadata": {}, "nbformat": 4, "nbformat_minor": 4}\n')


@needs_ruff
def test_text_zwsp_availability_import_and_demo_notebook_are_noise_neighbours_stay(make_repo):
    # arrow's Lao day names, Django's manage.py, tqdm's DEMO.ipynb exercise cell.
    config = '[project]\nname = "lib"\nversion = "1"\n[tool.ruff.lint]\nselect = ["F", "PLE"]\n'
    repo = make_repo({"pyproject.toml": config, "lib/__init__.py": "",
                      "lib/locales.py": LOCALE, "manage.py": MANAGE, "DEMO.ipynb": NOTEBOOK})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    _noise(found, "lib/locales.py", 1, "PLE2515", "natural-language text")
    _kept(found, "lib/locales.py", 2, "PLE2515", Severity.high)
    _noise(found, "manage.py", 7, "F401", "installed")
    _kept(found, "manage.py", 11, "F401", Severity.low)
    notebook = [f for f in found if f.file == "DEMO.ipynb" and f.category == "syntax"]
    assert notebook and all(f.noise and "notebook" in f.noise for f in notebook)
    # a notebook that is the project itself (its helpers beside it, no package)
    bare = make_repo({"analysis.ipynb": NOTEBOOK, "helpers.py": "X = 1\n"})
    kept = [f for f in _filtered(bare, run_role(LintTester(), make_ctx(bare)).findings)
            if f.category == "syntax"]
    assert kept and all(f.noise is None for f in kept)


def test_vendored_code_is_noise_the_projects_own_code_stays(make_repo):
    # bleach's _vendor/html5lib: another project's code copied in.
    code = "def f(data):\n    data = data\n    return data\n"
    config = '[tool.ruff.lint]\nselect = ["PLW0127"]\n'
    repo = make_repo({"pyproject.toml": config, "pkg/__init__.py": "",
                      "pkg/_vendor/html5lib/base.py": code, "pkg/base.py": code,
                      "pkg/vendor/models.py": code})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    assert all(f.noise and "vendored" in f.noise
               for f in _at(found, "pkg/_vendor/html5lib/base.py", 2, "PLW0127"))
    _kept(found, "pkg/base.py", 2, "PLW0127", Severity.low)
    _kept(found, "pkg/vendor/models.py", 2, "PLW0127", Severity.low)  # a shop's sellers app


def test_a_missing_build_generated_version_module_is_a_setup_problem(make_repo):
    # hatch-vcs writes src/humanize/_version.py at build time.
    repo = make_repo({
        "pyproject.toml": 'build.hooks.vcs.version-file = "src/lib/_version.py"\n',
        "src/lib/__init__.py": "from ._version import __version__\nfrom ._helpers import x\n",
    })

    def error(line):
        return Finding(id=f"collect-{line}", role="unit_tester", tool="pytest",
                       rule_id="collection-error", title="Tests cannot be collected", message="ImportError while importing "
                       "test module 'tests/test_x.py'.", severity=Severity.high, confidence=0.95,
                       category="tests", file="src/lib/__init__.py",
                       range=Range(start_line=line, start_col=1, end_line=line, end_col=30))
    out = {f.range.start_line: f for f in _filtered(repo, [error(1), error(2)])}
    assert out[1].noise and "built" in out[1].noise and out[1].severity is Severity.info
    assert out[2].noise is None and out[2].severity is Severity.high  # a module the code lacks


COOKIES = """from bottle import response


def logout():
    response.set_cookie('session_id', '', expires=0)


def login(sid):
    response.set_cookie('session_id', sid)
"""


def test_deleting_a_session_cookie_is_not_an_insecure_cookie_setting_one_is(make_repo):
    repo = make_repo({"config/login.py": COOKIES})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    assert not [f for f in found if f.rule_id == "insecure-cookie" and f.range
                and f.range.start_line == 5]
    _kept(found, "config/login.py", 9, "insecure-cookie")


@needs_ruff
def test_a_missing_copyright_notice_under_an_spdx_header_is_noise(make_repo):
    spdx = "# SPDX-License-Identifier: MIT OR Apache-2.0\n\nX = 1\n"
    config = '[tool.ruff.lint]\nselect = ["CPY001"]\npreview = true\n'
    repo = make_repo({"pyproject.toml": config, "pkg/a.py": spdx, "pkg/b.py": "X = 1\n" * 40})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    _noise(found, "pkg/a.py", 1, "CPY001", "SPDX")
    # a missing notice the project's selection asks for: its taste, counted one click away
    _noise(found, "pkg/b.py", 1, "CPY001", "style")


ADMIN = """import os

from flask import Flask, abort, render_template_string, request

app = Flask(__name__)


@app.route("/admin/plugins/<plugin>")
def plugin(plugin):
    plugins_path = os.path.join(app.root_path, "plugins")
    known = [n for n in os.listdir(plugins_path)]
    if plugin in known:
        config_html = open(os.path.join(app.root_path, "plugins", plugin, "config.html")).read()
        return render_template_string(config_html)
    abort(404)


@app.route("/admin/raw/<name>")
def raw(name):
    html = open(os.path.join(app.root_path, "plugins", name, "config.html")).read()
    return render_template_string(html)


if __name__ == "__main__":
    app.run(debug=True, threaded=True, host="127.0.0.1", port=4000)
"""

EXPOSED = """from flask import Flask

app = Flask(__name__)
app.run(debug=True, host="0.0.0.0")
"""


def test_allow_listed_values_and_a_loopback_debug_server_are_noise_neighbours_stay(make_repo):
    # CTFd's admin plugin page and its serve.py / wsgi.py runners.
    repo = make_repo({"ctf/admin.py": ADMIN, "ctf/exposed.py": EXPOSED})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    for line in (13, 14):
        assert all(f.noise and "list the server made" in f.noise for f in found
                   if f.file == "ctf/admin.py" and f.range and f.range.start_line == line)
    assert [f for f in found if f.file == "ctf/admin.py" and f.range
            and f.range.start_line == 13], "the guarded path is still reported (as noise)"
    unguarded = [f for f in found if f.file == "ctf/admin.py" and f.range
                 and f.range.start_line in (20, 21)]
    assert unguarded and all(f.noise is None for f in unguarded)
    _noise(found, "ctf/admin.py", 25, "B201", "loopback")
    _kept(found, "ctf/exposed.py", 4, "B201", Severity.high)


EXAMPLE_KEYS = """name: tests
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - run: make test
        env:
          AWS_ACCESS_KEY_ID: AKIAIOSFODNN7EXAMPLE
          AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
          OTHER_KEY_ID: {real}
"""


def test_aws_documentation_example_keys_are_noise_a_real_shaped_key_stays(make_repo):
    real = "AKIA" + "Q3HZKWDRNQ7Z2BKT"  # split: no key-shaped literal in the source
    repo = make_repo({".github/workflows/tests.yml": EXAMPLE_KEYS.format(real=real),
                      "tests/test_s3.py": ('def test_s3(app):\n    app.config["AWS_SECRET_ACCESS_'
                                           'KEY"] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"\n')})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    for file, line in ((".github/workflows/tests.yml", 9), ("tests/test_s3.py", 2)):
        hits = [f for f in found if f.file == file and f.range and f.range.start_line == line]
        assert hits and all(f.noise and "documentation example" in f.noise for f in hits), (
            file, line, [(f.file, f.range and f.range.start_line, f.rule_id) for f in found])
    real_hits = [f for f in found if f.file == ".github/workflows/tests.yml" and f.range
                 and f.range.start_line == 11]
    assert real_hits and all(f.noise is None and f.severity.at_least(Severity.high)
                             for f in real_hits)


POSTGRES = """class Backend:
    def destroy(self, cursor):
        for table in ['alerts', 'blackouts', 'customers']:
            cursor.execute(f'DROP TABLE IF EXISTS {table}')

    def get_status(self, cursor, alert):
        select = '''
            SELECT status FROM alerts WHERE resource=%(resource)s AND {customer}
            '''.format(customer='customer=%(customer)s' if alert.customer else 'customer IS NULL')
        cursor.execute(select, vars(alert))

    def find(self, cursor, name):
        select = "SELECT * FROM alerts WHERE {where}".format(where=name)
        cursor.execute(select)

    def drop(self, cursor, tables):
        for table in tables:
            cursor.execute(f'DROP TABLE IF EXISTS {table}')
"""


def test_sql_formatted_from_the_codes_own_text_is_noise_a_parameter_stays(make_repo):
    # alerta's postgres backend: psycopg placeholders plus a choice of literals.
    repo = make_repo({"db/base.py": POSTGRES})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    for line in (4, 7):
        hits = [f for f in found if f.file == "db/base.py" and f.range
                and f.range.start_line == line and f.category == "security"]
        assert hits and all(f.noise and "own text" in f.noise for f in hits), (line, hits)
    for line in (13, 18):
        hits = [f for f in found if f.file == "db/base.py" and f.range
                and f.range.start_line == line and f.category == "security"]
        assert hits and any(f.noise is None for f in hits), (line, hits)


URLS = """def sync_token(etag):
    token = "http://radicale.org/ns/sync/%s" % etag.strip('"')
    return token


token_endpoint = 'https://github.com/login/oauth/access_token'
api_token = "Zx8fK2pQ9vL4mN7rT3wY"
"""


def test_a_url_held_by_a_token_name_is_not_a_secret_a_token_value_is(make_repo):
    # Radicale's sync tokens and alerta's OAuth token endpoint.
    repo = make_repo({"app/sync.py": URLS})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    for line in (2, 6):
        assert all(f.noise for f in found if f.file == "app/sync.py" and f.range
                   and f.range.start_line == line and f.category in ("security", "secrets"))
    kept = [f for f in found if f.file == "app/sync.py" and f.range and f.range.start_line == 7]
    assert kept and any(f.noise is None and f.severity.at_least(Severity.high) for f in kept)


def test_a_token_that_says_it_is_fake_is_noise_a_real_shaped_one_stays(make_repo):
    # a demo platform's canary tokens: ghp_FAKE..., ...DoNotUse...
    real = "ghp_" + "9dK2mQ7vL3pX8rT4wY6zA1bC5eF0gH2jK4lM"  # split: no token in the source
    fake = "ghp_" + "FAKEdvapCanaryGithubToken000000000000"
    repo = make_repo({"seeds/synthetic.env": f"GITHUB_CANARY_TOKEN={fake}\nGITHUB_TOKEN={real}\n"})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    fakes = [f for f in found if f.range and f.range.start_line == 1]
    assert fakes and all(f.noise and "fake" in f.noise for f in fakes)
    reals = [f for f in found if f.range and f.range.start_line == 2]
    assert reals and all(f.noise is None and f.severity.at_least(Severity.high) for f in reals)


TAGS_DJANGO = """from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe


def login_link(request, login_url):
    snippet = format_html("<a href='{href}?next={next}'>log in</a>", href=login_url,
                          next=escape(request.path))
    return mark_safe(snippet)


def code(value):
    return mark_safe('<code>%s</code>' % {True: 'true', False: 'false', None: 'null'}[value])


def pre(value):
    return mark_safe('<pre>%s</pre>' % escape(value))


def mail(value):
    return mark_safe('<a href="mailto:{value}">{value}</a>'.format(value=escape(value)))


def link(value, name):
    return mark_safe('<a href=%s>%s</a>' % (value, escape(name)))
"""


@needs_bandit
def test_mark_safe_of_format_html_or_escaped_fills_is_noise_a_raw_value_stays(make_repo):
    # django-rest-framework's template tags.
    repo = make_repo({"app/templatetags/tags.py": TAGS_DJANGO})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    for line in (8, 12, 16, 20):
        hits = [f for f in found if f.range and f.range.start_line == line
                and f.category == "security"]
        assert hits and all(f.noise and "safe" in f.noise for f in hits), (line, hits)
    raw = [f for f in found if f.range and f.range.start_line == 24 and f.category == "security"]
    assert raw and any(f.noise is None for f in raw)


@needs_bandit
def test_markup_of_a_call_inside_a_lambda_is_judged_not_crashed(make_repo):
    # flaskbb: the filter raised TypeError (a lambda's body is no list) and the
    # whole run ended with no findings.
    repo = make_repo({"app/filters.py": ("from markupsafe import Markup\n\n"
                                         "render = lambda text: Markup(to_html(text))\n")})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    hits = [f for f in found if f.file == "app/filters.py" and f.rule_id == "B704"]
    assert hits and all(f.noise is None for f in hits)


def test_a_provider_prefix_followed_by_xs_is_a_placeholder_a_real_shaped_key_stays(make_repo):
    # a teaching app's config: "stripe": "sk_live_xxxxxxxxxxxxxxxxxxxxx" shown critical.
    real = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"  # split: no key-shaped literal in the source
    repo = make_repo({"api/app.py": ('KEYS = {\n    "stripe": "sk_live_xxxxxxxxxxxxxxxxxxxxx",\n'
                                     f'    "live": "{real}",\n}}\n')})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    placeholders = [f for f in found if f.range and f.range.start_line == 2
                    and f.category in ("security", "secrets")]
    assert all(f.noise and "placeholder" in f.noise for f in placeholders)
    reals = [f for f in found if f.range and f.range.start_line == 3]
    assert reals and all(f.noise is None and f.severity.at_least(Severity.high) for f in reals)


PASSED_DEFAULTS = """class Builder:
    def __init__(self, keep=False, paths=None):
        self.keep = keep
        self.paths = paths or []

    def find(self, name):
        for p in self.paths + [name]:
            print(p)
        return Builder(self.keep, self.paths)


class Grower:
    def __init__(self, paths=None):
        self.grown = paths or []

    def add(self, p):
        self.grown.append(p)


def imports(grammar, paths=[]):
    return Builder(False, paths).find(grammar)


def grown(grammar, paths=[]):
    return Grower(paths).add(grammar)


class Key:
    def __init__(self, key=None, domains=[]):
        self.domains = []
        self.domains[:] = domains


def add_zone(name, ns=[],
             masters=[]):
    ns = [n + "." for n in ns]
    masters.append(name)
    return {"name": name, "nameservers": ns}


def execute(options={},
            args=[]):
    if not args:
        print("usage")
        return False
    options["file"] = args.pop(0)
    return options


def execute_late(options={},
                 args=[]):
    print(len(args))
    options["file"] = args.pop(0)
    return options


class Visitor:
    def __init__(self, single=False):
        self.single = single

    def visit(self, node):
        handler = getattr(self, "visit_node", None)
        if self.single and node:
            return handler
        return self.visit_leaf(node)

    def visit_leaf(self, node):
        return node


class Summer(Visitor):
    def visit_node(self, node):
        node.total = 1


class Counting(Visitor):
    def visit_node(self, node):
        self.count = node


class Walker:
    def __init__(self, prioritizer=Summer(),
                 counter=Counting()):
        self.prioritizer = prioritizer
        self.counter = counter
"""


@needs_ruff
def test_a_default_passed_to_the_modules_own_reader_copied_or_rebound_is_noise_changes_stay(
        make_repo):
    repo = make_repo({"pyproject.toml": '[tool.ruff.lint]\nselect = ["B006", "B008"]\n',
                      "lib/grammar.py": PASSED_DEFAULTS})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    # handed to a class of the module that keeps it in an attribute it only reads
    _noise(found, "lib/grammar.py", 20, "B006", "only read")
    # the same, to a class that appends to the attribute: the real bug
    _kept(found, "lib/grammar.py", 24, "B006", Severity.low)
    # copied into another list (self.domains[:] = domains)
    _noise(found, "lib/grammar.py", 29, "B006", "only read")
    # rebound to a new list before any other use; its neighbour is appended to
    _noise(found, "lib/grammar.py", 34, "B006", "only read")
    _kept(found, "lib/grammar.py", 35, "B006", Severity.low)
    # empty default left on at once (``if not args: return``); ``options``
    # is changed whenever args are given: stays
    _noise(found, "lib/grammar.py", 42, "B006", "returns at once")
    _kept(found, "lib/grammar.py", 41, "B006", Severity.low)
    # read before a guard: stays (no guard at all here)
    _kept(found, "lib/grammar.py", 51, "B006", Severity.low)
    # a stateless visitor's instance as a default; one whose method sets state stays
    _noise(found, "lib/grammar.py", 82, "B008", "keeps no state")
    _kept(found, "lib/grammar.py", 83, "B008", Severity.low)
