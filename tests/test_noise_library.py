"""The default view of an ordinary, well-kept library: what its maintainer
acts on is shown, the project's taste and what the module itself proves
harmless is counted as noise. Tuned on loguru, tenacity, paramiko and mkdocs
(judged by hand); each rule has a case that must be quiet and a neighbour
that must stay shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from superqode_ls.models import Range, Severity
from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.noise_jinja import kind_by_name
from superqode_ls.qe.noise_library import _not_html
from superqode_ls.qe.noise_style import STYLE_REASON, is_style
from superqode_ls.qe.roles._secrets import scan_text
from superqode_ls.qe.roles._secrets_values import not_a_secret
from tests.role_helpers import lint_finding


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _filtered(root: Path, findings):
    return filter_findings(findings, read_line=FileLines(root), threshold=0.7).findings


def _sec(rule, file, line, **kw):
    return lint_finding(rule, file, line, role="security_tester", tool="bandit",
                        category="security", **kw)


def _by_id(found):
    return {f.id: f for f in found}


# --- style, complexity and modernisation rules: the project's taste -------------

@pytest.mark.parametrize("rule,severity", [
    ("RUF036", Severity.low),    # `None` not at the end of a union (tenacity selects RUF)
    ("PLC0415", Severity.low),   # an import inside a function (mkdocs selects PLC)
    ("CPY001", Severity.low),    # no copyright header (`select = ["ALL"]`)
    ("PLR0917", Severity.low),   # too many positional arguments
    ("D209", Severity.info),     # docstring layout
])
def test_a_style_rule_the_project_selects_is_noise_with_its_severity_kept(tmp_path, rule, severity):
    _write(tmp_path, {"pkg/mod.py": "import os\nx = 1\n"})
    (f,) = _filtered(tmp_path, [lint_finding(rule, "pkg/mod.py", 2, severity=severity)])
    assert f.noise == STYLE_REASON
    assert f.severity is severity


@pytest.mark.parametrize("rule,severity", [
    ("F401", Severity.low),      # a dead import: true of the code whoever selected it
    ("F841", Severity.low),      # a dead local variable
    ("T100", Severity.low),      # a debugger call left in
    ("B006", Severity.medium),   # a mutable default the function changes
    ("PLW0127", Severity.medium),
    ("F821", Severity.high),
])
def test_a_rule_about_what_the_code_does_stays_shown(tmp_path, rule, severity):
    _write(tmp_path, {"pkg/mod.py": "import os\nx = 1\n"})
    (f,) = _filtered(tmp_path, [lint_finding(rule, "pkg/mod.py", 2, severity=severity)])
    assert f.noise is None, f.noise
    assert f.severity is severity


def test_style_is_only_the_linters_a_security_low_finding_is_not_style():
    assert not is_style(_sec("B311", "a.py", 1, severity=Severity.low))
    assert is_style(lint_finding("SIM108", "a.py", 1, severity=Severity.low))


def test_a_style_finding_ranks_after_every_finding_worth_acting_on(tmp_path):
    _write(tmp_path, {"a.py": "import os\n" * 5})
    found = _filtered(tmp_path, [lint_finding("RUF036", "a.py", 1, severity=Severity.low),
                                 lint_finding("F401", "a.py", 3, severity=Severity.low)])
    assert [f.rule_id for f in found] == ["F401", "RUF036"]


# --- a regular expression held by a name with "token" in it ---------------------

def test_a_lexers_token_regex_is_no_secret_a_token_with_a_bar_still_is():
    regex = r"H{1,2}|h{1,2}|m{1,2}|s{1,2}|S+|YYYY|YY|M{1,4}|D{1,4}|Z{1,2}|zz|A|X|x|E|Q|dddd"
    line = f'tokens = r"{regex}"'
    assert not_a_secret(regex, line).startswith("a regular expression")
    assert scan_text(line + "\n") == []
    assert not_a_secret("Zq8|xW3pL9rT2mK7v", 'token = "Zq8|xW3pL9rT2mK7v"') is None
    assert [h.rule.id for h in scan_text('token = "Zq8|xW3pL9rT2mK7vB4nQ"\n')] == ["secret-generic"]


# --- what the module proves harmless ---------------------------------------------

def test_an_empty_hash_objects_size_hashes_nothing_a_digest_of_data_stays(tmp_path):
    _write(tmp_path, {"hostkeys.py": (
        "from hashlib import sha1\n"
        "import os\n"
        "salt = os.urandom(sha1().digest_size)\n"
        "digest = sha1(salt + b'host').hexdigest()\n")})
    found = _by_id(_filtered(tmp_path, [_sec("B324", "hostkeys.py", 3, id="size"),
                                        _sec("B324", "hostkeys.py", 4, id="data")]))
    assert "nothing is hashed" in found["size"].noise
    assert found["size"].severity is Severity.info
    assert found["data"].noise is None


def test_an_ssh_key_exchange_hash_is_the_protocols_a_password_hash_is_not(tmp_path):
    _write(tmp_path, {"kex.py": (
        "from hashlib import sha1\n"
        "def _parse_kexgss_complete(self, m):\n"
        "    H = sha1(hm.asbytes()).digest()\n"
        "def check(self, password):\n"
        "    H = sha1(password.encode()).digest()\n")})
    found = _by_id(_filtered(tmp_path, [_sec("B324", "kex.py", 3, id="kex"),
                                        _sec("B324", "kex.py", 5, id="pw")]))
    assert "key exchange" in found["kex"].noise
    assert found["pw"].noise is None


_SAFE_YAML = (
    "import yaml\n"
    "def get_yaml_loader():\n"
    "    class Loader(yaml.SafeLoader):\n"
    "        pass\n"
    "    return Loader\n"
    "def yaml_load(source, loader=None):\n"
    "    loader = loader or get_yaml_loader()\n"
    "    return yaml.load(source, Loader=loader)\n"
)


def test_yaml_load_with_the_modules_own_safe_loader_is_noise_an_unsafe_one_stays(tmp_path):
    _write(tmp_path, {
        "safe.py": _SAFE_YAML,
        # the same module, but the default loader is yaml's full one
        "full.py": _SAFE_YAML.replace("get_yaml_loader()", "yaml.FullLoader"),
        "bare.py": "import yaml\nclass L(yaml.SafeLoader):\n    pass\nyaml.load(open('c'))\n",
    })
    found = _by_id(_filtered(tmp_path, [_sec("B506", "safe.py", 8, id="safe"),
                                        _sec("B506", "full.py", 8, id="full"),
                                        _sec("B506", "bare.py", 4, id="bare")]))
    assert "SafeLoader" in found["safe"].noise
    assert found["full"].noise is None
    assert found["bare"].noise is None


def test_names_a_script_defines_through_globals_are_not_undefined(tmp_path):
    body = "def main():\n    print(ktype)\n"
    _write(tmp_path, {
        "keygen.py": "def setup(options):\n    for o in options:\n"
                     "        globals()[o] = options[o]\n" + body,
        "plain.py": "options = {}\n\n\n" + body,
    })
    found = _by_id(_filtered(tmp_path, [
        lint_finding("F821", "keygen.py", 5, id="dyn", severity=Severity.high),
        lint_finding("F821", "plain.py", 5, id="typo", severity=Severity.high)]))
    assert "globals()" in found["dyn"].noise
    assert found["typo"].noise is None and found["typo"].severity is Severity.high


def test_the_reconstructor_reduce_returns_unpickles_its_own_bytes(tmp_path):
    _write(tmp_path, {"rec.py": (
        "import pickle\n"
        "class RecordException:\n"
        "    def __reduce__(self):\n"
        "        return (RecordException._from_pickled_value, (pickle.dumps(self.value),))\n"
        "    @classmethod\n"
        "    def _from_pickled_value(cls, pickled_value):\n"
        "        return cls(pickle.loads(pickled_value))\n"
        "    @classmethod\n"
        "    def from_wire(cls, data):\n"
        "        return cls(pickle.loads(data))\n")})
    found = _by_id(_filtered(tmp_path, [_sec("B301", "rec.py", 7, id="own"),
                                        _sec("B301", "rec.py", 10, id="wire")]))
    assert "reconstructor" in found["own"].noise
    assert found["wire"].noise is None


def test_demo_scripts_are_examples_their_keys_are_shown_lower(tmp_path):
    _write(tmp_path, {"demos/demo.py": "client.set_missing_host_key_policy(AutoAddPolicy())\n",
                      "pkg/demos.py": "client.set_missing_host_key_policy(AutoAddPolicy())\n"})
    found = _by_id(_filtered(tmp_path, [
        _sec("B507", "demos/demo.py", 1, id="demo", severity=Severity.high),
        _sec("B507", "pkg/demos.py", 1, id="product", severity=Severity.high)]))
    assert found["demo"].noise and found["demo"].severity is Severity.medium
    assert found["product"].noise is None and found["product"].severity is Severity.high


def test_an_import_tried_for_its_availability_is_no_dead_import(tmp_path):
    _write(tmp_path, {"eco.py": (
        "import codecs\n"
        "HAVE_READLINE = True\n"
        "try:\n"
        "    import readline\n"
        "except Exception:\n"
        "    HAVE_READLINE = False\n"
        "try:\n"
        "    import json\n"
        "    x = {}['k']\n"
        "except KeyError:\n"
        "    pass\n")})
    found = _by_id(_filtered(tmp_path, [
        lint_finding("F401", "eco.py", 4, id="probe", severity=Severity.low),
        lint_finding("F401", "eco.py", 1, id="dead", severity=Severity.low),
        lint_finding("F401", "eco.py", 8, id="dead-in-try", severity=Severity.low)]))
    assert "availability" in found["probe"].noise
    assert found["dead"].noise is None
    assert found["dead-in-try"].noise is None


_RUNNER = (
    "from subprocess import Popen\n"
    "class Local:\n"
    "    def start(self, command, shell, env):\n"
    "        self.process = Popen(command, shell=True, executable=shell, env=env)\n"
    "    def log(self, ref):\n"
    "        Popen(f'git log {ref}', shell=True)\n"
    "    def wrapped(self, command):\n"
    "        command = 'sudo ' + command\n"
    "        Popen(command, shell=True)\n"
)


def _shell(file, line, id):
    return _sec("B602", file, line, id=id, severity=Severity.high)


def test_a_librarys_command_running_api_is_noise_a_built_command_stays(tmp_path):
    _write(tmp_path, {"invoke/runners.py": _RUNNER})
    found = _by_id(_filtered(tmp_path, [_shell("invoke/runners.py", 4, "api"),
                                        _shell("invoke/runners.py", 6, "built"),
                                        _shell("invoke/runners.py", 9, "rebound")]))
    assert "command-running API" in found["api"].noise
    assert found["api"].severity is Severity.low
    assert found["built"].noise is None and found["built"].severity is Severity.high
    assert found["rebound"].noise is None


def test_the_same_helper_in_a_web_application_stays_shown(tmp_path):
    _write(tmp_path, {"core/runner.py": _RUNNER,
                      "core/helpers.py": "import os\ndef run_cmd(cmd):\n    return os.popen(cmd).read()\n",
                      "app.py": "from flask import Flask\napp = Flask(__name__)\n"})
    found = _filtered(tmp_path, [_shell("core/runner.py", 4, "method")])
    assert found[0].noise is None and found[0].severity is Severity.high


def test_a_modules_shell_helper_stays_shown_in_a_library_too(tmp_path):
    _write(tmp_path, {"core/helpers.py": "import os\ndef run_cmd(cmd):\n    return os.popen(cmd).read()\n"})
    (f,) = _filtered(tmp_path, [_sec("B605", "core/helpers.py", 3, severity=Severity.high)])
    assert f.noise is None and f.severity is Severity.high


def test_a_document_generators_templates_are_no_xss_a_web_apps_are(tmp_path):
    code = ("import jinja2\ndef get_env(dirs):\n"
            "    return jinja2.Environment(loader=jinja2.FileSystemLoader(dirs))\n")
    lib, web = tmp_path / "lib", tmp_path / "web"
    _write(lib, {"site/theme.py": code})
    _write(web, {"site/theme.py": code, "site/server.py": "from aiohttp import web\n"})
    _write(lib, {"site/off.py": "import jinja2\nenv = jinja2.Environment(autoescape=False)\n"})
    (quiet,) = _filtered(lib, [_sec("B701", "site/theme.py", 3, severity=Severity.high)])
    (shown,) = _filtered(web, [_sec("B701", "site/theme.py", 3, severity=Severity.high)])
    (off,) = _filtered(lib, [_sec("B701", "site/off.py", 2, severity=Severity.high)])
    assert "no web framework" in quiet.noise and quiet.severity is Severity.low
    assert shown.noise is None and shown.severity is Severity.high
    assert off.noise is None and off.severity is Severity.high  # turned off on purpose


def test_mako_templates_of_code_or_escaped_are_noise_a_web_apps_html_stays(tmp_path):
    lib, web = tmp_path / "lib", tmp_path / "web"
    gen = ("from mako.template import Template\n"
           "def render(path, **kw):\n"
           "    return Template(filename=path).render(**kw)\n")
    _write(lib, {"tool/gen.py": gen})
    _write(web, {"site/gen.py": gen, "site/app.py": "from flask import Flask\n",
                 "site/script.py": ("from mako.template import Template\n"
                                    "t = Template(filename='script.py.mako')\n"),
                 "site/esc.py": ("from mako.template import Template\n"
                                 "t = Template(text, default_filters=['h'])\n"),
                 "site/page.py": ("from mako.template import Template\n"
                                  "t = Template(filename='templates/page.html')\n")})
    (quiet,) = _filtered(lib, [_sec("B702", "tool/gen.py", 3, severity=Severity.medium)])
    (code,) = _filtered(web, [_sec("B702", "site/script.py", 2, severity=Severity.medium)])
    (esc,) = _filtered(web, [_sec("B702", "site/esc.py", 2, severity=Severity.medium)])
    (html,) = _filtered(web, [_sec("B702", "site/page.py", 2, severity=Severity.medium)])
    (served,) = _filtered(web, [_sec("B702", "site/gen.py", 3, severity=Severity.medium)])
    assert "no web framework" in quiet.noise and quiet.severity is Severity.low
    assert "'script.py.mako', not HTML" in code.noise
    assert "default filters include `h`" in esc.noise
    assert html.noise is None and html.severity is Severity.medium
    assert served.noise is None  # a web app's template of unknown kind stays shown


@pytest.mark.parametrize("name,kind", [
    ("script.py.mako", "text"), ("tox.ini.j2", "text"), ("conf.py.jinja", "text"),
    ("nginx.conf.mako", "text"), ("setup.py.template", "text"), ("main.tf", "text"),
    ("page.html.mako", "html"), ("templates/page.html", "html"), ("feed.xml.jinja", "html"),
    ("icon.svg.j2", "html"), ("page.mako", None), ("mail.jinja", None), ("README", None),
])
def test_jinja_and_mako_templates_are_judged_by_one_reading_of_their_name(name, kind):
    assert kind_by_name(name) == kind
    assert _not_html(name) is (kind == "text")  # Mako's B702 step asks the same question


def test_a_mako_template_of_a_configuration_file_is_no_xss(tmp_path):
    _write(tmp_path, {"site/app.py": "from flask import Flask\n",
                      "site/conf.py": ("from mako.template import Template\n"
                                       "t = Template(filename='nginx.conf.mako')\n")})
    (f,) = _filtered(tmp_path, [_sec("B702", "site/conf.py", 2, severity=Severity.medium)])
    assert "'nginx.conf.mako', not HTML" in f.noise


def test_an_opinion_the_project_holds_in_many_places_is_tolerated_a_likely_bug_is_not(tmp_path):
    _write(tmp_path, {"pkg/mod.py": "x = 1\n" * 20})
    found = _filtered(tmp_path, [
        *(lint_finding("PLW0603", "pkg/mod.py", n, id=f"g{n}") for n in range(1, 6)),
        *(lint_finding("B006", "pkg/mod.py", n, id=f"b{n}") for n in range(6, 12)),
        *(lint_finding("B905", "pkg/mod.py", n, id=f"z{n}") for n in range(12, 16))])
    noise = {f.rule_id for f in found if f.noise}
    assert noise == {"PLW0603"}, [(f.rule_id, f.noise) for f in found]
    assert "fires in 5 places" in next(f.noise for f in found if f.rule_id == "PLW0603")


def test_a_preview_server_through_http_server_makes_a_web_project(tmp_path):
    from superqode_ls.qe.noise_library import is_web_project
    _write(tmp_path, {"site/server.py": "import ssl\nfrom http import server\n"})
    assert is_web_project(tmp_path)
    _write(tmp_path / "lib", {"pkg/cookies.py": "from http import cookies\n"})
    assert not is_web_project(tmp_path / "lib")


def test_markup_that_only_strips_tags_is_plain_text_rendered_markup_stays(tmp_path):
    _write(tmp_path, {"writers.py": (
        "from markupsafe import Markup\n"
        "title = Markup(item.title).striptags()\n"
        "body = Markup(item.body)\n")})
    found = _by_id(_filtered(tmp_path, [_sec("B704", "writers.py", 2, id="strip"),
                                        _sec("B704", "writers.py", 3, id="kept")]))
    assert "plain text" in found["strip"].noise
    assert found["kept"].noise is None


@pytest.mark.parametrize("mode,quiet", [("493", True), ("0o755", True), ("0o700", True),
                                        ("0o775", False), ("0o777", False), ("0o666", False)])
def test_a_mode_only_the_owner_can_write_is_not_permissive(tmp_path, mode, quiet):
    _write(tmp_path, {"themes.py": f"import os\nos.chmod(dname, {mode})\n"})
    (f,) = _filtered(tmp_path, [_sec("B103", "themes.py", 2)])
    assert (f.noise is not None) is quiet, f.noise


def test_a_command_fixed_but_for_the_interpreter_is_noise_a_filled_in_name_stays(tmp_path):
    _write(tmp_path, {"setup.py": (
        "import os, sys\n"
        'os.system("{} setup.py sdist bdist_wheel".format(sys.executable))\n'
        'os.system(f"{sys.executable} -m twine upload {dist}")\n')})
    found = _by_id(_filtered(tmp_path, [
        _sec("B605", "setup.py", 2, id="fixed", severity=Severity.high),
        _sec("B605", "setup.py", 3, id="filled", severity=Severity.high)]))
    assert "interpreter" in found["fixed"].noise
    assert found["filled"].noise is None and found["filled"].severity is Severity.high


# Round 2, tuned on set B (pexpect, archivy, linkding): not blind.
def test_a_python2_builtin_in_a_version_branch_is_noise_without_one_it_stays(tmp_path):
    _write(tmp_path, {
        "spawnbase.py": "import sys\nPY3 = (sys.version_info[0] >= 3)\n"
                        "text_type = str if PY3 else unicode\n",
        "old.py": "def name(x):\n    return unicode(x)\n",
    })
    def f821(file, line, id):
        return lint_finding("F821", file, line, id=id, severity=Severity.high,
                            message="Undefined name `unicode`")
    found = _by_id(_filtered(tmp_path, [f821("spawnbase.py", 3, "compat"), f821("old.py", 2, "bug")]))
    assert "Python 2 builtin" in found["compat"].noise
    assert found["bug"].noise is None and found["bug"].severity is Severity.high


def test_a_default_only_added_to_is_read(tmp_path):
    _write(tmp_path, {"index.py": (
        "def tree(node, ancestors=[]):\n"
        "    path = ancestors + [node]\n"
        "    return [tree(c, ancestors[:]) for c in node] + path\n"
        "def grow(node, seen=[]):\n"
        "    seen += [node]\n"
        "    return seen\n")})
    found = _by_id(_filtered(tmp_path, [
        lint_finding("B006", "index.py", 1, id="read", severity=Severity.medium,
                     range=Range(start_line=1, start_col=28)),
        lint_finding("B006", "index.py", 4, id="grown", severity=Severity.medium,
                     range=Range(start_line=4, start_col=20))]))
    assert "only read" in (found["read"].noise or "")
    assert found["grown"].noise is None


def test_sql_filled_with_placeholders_only_is_noise_a_value_filled_in_stays(tmp_path):
    _write(tmp_path, {"migrate.py": (
        "def clean(cursor, done, table):\n"
        "    placeholders = ', '.join('?' for _ in done)\n"
        "    sql = f'DELETE FROM background_task WHERE id IN ({placeholders})'\n"
        "    cursor.execute(sql, done)\n"
        "    cursor.execute(f'DELETE FROM {table} WHERE id IN ({placeholders})', done)\n"
        "    marks = ','.join(['%s'] * len(done))\n"
        "    cursor.execute('SELECT * FROM t WHERE id IN (%s)' % marks, done)\n")})
    sql = {"role": "security_tester", "tool": "superqode-patterns", "category": "security",
               "severity": Severity.high}
    found = _by_id(_filtered(tmp_path, [
        lint_finding("sql-injection", "migrate.py", 3, id="marks", **sql),
        lint_finding("sql-injection", "migrate.py", 5, id="table", **sql),
        lint_finding("B608", "migrate.py", 7, id="percent", **sql)]))
    assert "placeholders" in found["marks"].noise
    assert "placeholders" in found["percent"].noise
    assert found["table"].noise is None and found["table"].severity is Severity.high


def test_a_weak_hash_for_a_content_hash_or_a_file_name_is_noise_a_password_hash_stays(tmp_path):
    _write(tmp_path, {"models.py": (
        "import hashlib\n"
        "def save(self):\n"
        "    self.custom_css_hash = hashlib.md5(self.custom_css.encode()).hexdigest()\n"
        "def _url_to_filename(url):\n"
        "    return hashlib.md5(url.encode()).hexdigest()\n"
        "def store(user, pw):\n"
        "    user.password_hash = hashlib.md5(pw.encode()).hexdigest()\n")})
    found = _by_id(_filtered(tmp_path, [_sec("B324", "models.py", 3, id="css"),
                                        _sec("B324", "models.py", 5, id="name"),
                                        _sec("B324", "models.py", 7, id="pw")]))
    assert found["css"].noise and found["name"].noise
    assert found["pw"].noise is None


def test_a_test_environment_folder_is_test_code_a_testimonials_folder_is_not(tmp_path):
    _write(tmp_path, {"scripts/test-environments/oidc/configuration.yml": "a: 1\n",
                      "app/testimonials/views.py": "x = 1\n"})
    sec = {"role": "security_tester", "tool": "superqode-secrets", "category": "secrets",
               "severity": Severity.high}
    found = _by_id(_filtered(tmp_path, [
        lint_finding("secret-generic", "scripts/test-environments/oidc/configuration.yml", 1,
                     id="env", **sec),
        lint_finding("secret-generic", "app/testimonials/views.py", 1, id="app", **sec)]))
    assert found["env"].noise == "in tests code" and found["env"].severity is Severity.medium
    assert found["app"].noise is None and found["app"].severity is Severity.high


# Round 3, tuned on set C (toot, dateutil): not blind.
def test_returning_the_parents_init_is_harmless_returning_a_value_is_not(tmp_path):
    _write(tmp_path, {"widgets.py": (
        "class Button(Base):\n"
        "    def __init__(self, label):\n"
        "        return super().__init__(label, 'button')\n"
        "class Bad:\n"
        "    def __init__(self):\n"
        "        return 1\n")})
    found = _by_id(_filtered(tmp_path, [
        lint_finding("PLE0101", "widgets.py", 3, id="super", severity=Severity.high),
        lint_finding("PLE0101", "widgets.py", 6, id="value", severity=Severity.high)]))
    assert "None" in found["super"].noise
    assert found["value"].noise is None and found["value"].severity is Severity.high


def test_importing_a_docstring_sets_it_another_unused_name_stays(tmp_path):
    _write(tmp_path, {"pkg/__init__.py": "from ._parser import __doc__\nfrom warnings import warn\n"
                                         "__all__ = ['parse']\n"})
    found = _by_id(_filtered(tmp_path, [
        lint_finding("F401", "pkg/__init__.py", 1, id="doc", severity=Severity.low,
                     message="`._parser.__doc__` imported but unused"),
        lint_finding("F401", "pkg/__init__.py", 2, id="warn", severity=Severity.low,
                     message="`warnings.warn` imported but unused")]))
    assert "docstring" in found["doc"].noise
    assert found["warn"].noise is None


# --- a service's default local account in a library's default URL ----------------

def test_a_default_local_account_in_a_connection_string_is_noise_a_real_one_stays(tmp_path):
    _write(tmp_path, {"pkg/mgr.py": (
        "class Manager:\n"
        "    def __init__(self, url='amqp://guest:guest@localhost:5672//'):\n"
        "        self.url = url\n"
        "DB = 'postgres://admin:s3cret@localhost/app'\n"
        "BROKER = 'amqp://guest:guest@rabbit.internal:5672//'\n"
        "LOCAL = 'postgres://app:app@127.0.0.1/app'\n")})
    found = _by_id(_filtered(tmp_path, [
        _sec("hardcoded-db-password", "pkg/mgr.py", n, severity=Severity.high, confidence=0.9)
        for n in (2, 4, 5, 6)]))
    by_line = {f.range.start_line: f for f in found.values()}
    # python-socketio's kombu/aiopika managers: judged noise by hand.
    assert by_line[2].noise and "default local account" in by_line[2].noise
    assert by_line[6].noise  # app:app on this machine: the same shape
    # A password of its own, or the default account on another host: shown.
    assert by_line[4].noise is None and by_line[4].severity == Severity.high
    assert by_line[5].noise is None


def test_a_default_local_account_in_a_dict_is_noise_another_host_or_password_stays(tmp_path):
    # kombu's librabbitmq transport: default_connection_params
    _write(tmp_path, {"pkg/conn.py": (
        "def defaults():\n"
        "    return {\n"
        "        'userid': 'guest',\n"
        "        'password': 'guest',\n"
        "        'hostname': 'localhost',\n"
        "    }\n"
        "REMOTE = {'userid': 'guest', 'password': 'guest', 'hostname': 'mq.internal'}\n"
        "OWN = {'user': 'app', 'password': 's3cretPw9', 'host': 'localhost'}\n")})
    # (bandit's B105 is the finding kombu shows; the pattern's id the other name)
    found = _by_id(_filtered(tmp_path, [
        _sec(rule, "pkg/conn.py", n, severity=Severity.high, confidence=0.9)
        for n, rule in ((4, "B105"), (7, "hardcoded-db-password"), (8, "B105"))]))
    by_line = {f.range.start_line: f for f in found.values()}
    assert by_line[4].noise and "guest:guest@localhost" in by_line[4].noise
    assert by_line[7].noise is None and by_line[8].noise is None


def test_a_token_formatted_from_a_name_with_words_around_it_is_no_secret():
    # WeasyPrint's CSS token: f'string-set::{string_name}' (a property name
    # and the name of the string set); a key's written half stays found.
    src = ("def f(string_name, suffix, token):\n"
           "    css_token = f'string-set::{string_name}'\n"
           "    auth_token = f'Bearer {token}'\n"
           "    api_token = f'sk_live_9aF3kLm2Qx7Zp1Rt{suffix}'\n"
           "    raw_token = 'string-set::{string_name}9aF3kLm2'\n")
    lines = {h.line for h in scan_text(src, "weasyprint/formatting_structure/build.py")}
    assert 2 not in lines and 3 not in lines
    assert {4, 5} <= lines  # a literal run of a key's letters and digits; not an f-string
    assert not_a_secret("string-set::{string_name}",
                        "    css_token = f'string-set::{string_name}'").startswith("built at run")


def test_a_second_test_tree_is_test_code_a_tests_module_in_the_package_is_not(tmp_path):
    # dynaconf's tests_functional/: its Django apps' SECRET_KEYs led quick mode
    _write(tmp_path, {"tests_functional/django_app/settings.py": "SECRET_KEY = 'x'\n",
                      "integration_tests/app.py": "x = 1\n",
                      "app/tests_helpers.py": "x = 1\n"})
    sec = {"role": "security_tester", "tool": "bandit", "category": "security",
           "severity": Severity.high}
    found = _by_id(_filtered(tmp_path, [
        lint_finding("B105", "tests_functional/django_app/settings.py", 1, id="fn", **sec),
        lint_finding("B105", "integration_tests/app.py", 1, id="it", **sec),
        lint_finding("B105", "app/tests_helpers.py", 1, id="app", **sec)]))
    assert found["fn"].noise == "in tests code" and found["fn"].severity is Severity.medium
    assert found["it"].noise == "in tests code"
    assert found["app"].noise is None and found["app"].severity is Severity.high


def test_a_non_django_extra_and_a_sum_of_exception_tuples_are_noise_the_real_ones_stay(tmp_path):
    _write(tmp_path, {
        # anyio's typed attributes; a Django queryset's extra() stays
        "pkg/tls.py": ("class Stream:\n"
                       "    def version(self):\n"
                       "        return self.extra('tls_version')\n"),
        "app/views.py": ("from django.db import models\n\n\n"
                         "def rows(qs, where):\n"
                         "    return qs.extra(where=[where])\n"),
        # kombu: connection_errors + channel_errors; a call in except stays
        "pkg/retry.py": ("def go(conn, fn):\n"
                         "    try:\n"
                         "        fn()\n"
                         "    except conn.connection_errors + conn.channel_errors + (OSError,):\n"
                         "        pass\n"
                         "    try:\n"
                         "        fn()\n"
                         "    except conn.errors():\n"
                         "        pass\n"),
    })
    found = _filtered(tmp_path, [
        _sec("B610", "pkg/tls.py", 3), _sec("B610", "app/views.py", 5),
        lint_finding("B030", "pkg/retry.py", 4), lint_finding("B030", "pkg/retry.py", 8)])
    by = {(f.file, f.range.start_line): f for f in found}
    assert by[("pkg/tls.py", 3)].noise and "nothing of Django" in by[("pkg/tls.py", 3)].noise
    assert by[("app/views.py", 5)].noise is None
    assert by[("pkg/retry.py", 4)].noise and "concatenation" in by[("pkg/retry.py", 4)].noise
    assert by[("pkg/retry.py", 8)].noise is None


_ENV_MODULE = ("from pathlib import Path\nfrom jinja2 import Environment, FileSystemLoader\n"
               "HERE = Path(__file__).resolve().parent\n"
               "ENV = Environment(\n    loader=FileSystemLoader(HERE / 'templates'),\n)\n"
               "def main(out):\n    out.write_text(ENV.get_template({name!r}).render())\n")


@pytest.mark.parametrize("name,text,quiet", [
    ("tox.jinja", "[tox]\nrequires = pytest<7.0.0\n{{ envs }}\n", True),    # text by content
    ("conf.py.jinja", "DB = {{ db }}\n", True),                              # text by name
    ("page.html.jinja", "{{ title }}\n", False),                            # HTML by name
    ("mail.jinja", "<p>Hello {{ name }}</p>\n", False),                     # HTML by content
    ("absent.jinja", None, False),                                          # not found
])
def test_a_web_projects_jinja_templates_of_text_are_no_xss_html_ones_stay(
        tmp_path, name, text, quiet):
    files = {"app/server.py": "from flask import Flask\n",
             "scripts/gen.py": _ENV_MODULE.format(name=name)}
    if text is not None:
        files[f"scripts/templates/{name}"] = text
    _write(tmp_path, files)
    (f,) = _filtered(tmp_path, [_sec("B701", "scripts/gen.py", 4, severity=Severity.high)])
    if quiet:
        assert "text, not HTML" in f.noise and f.severity is Severity.low
    else:
        assert f.noise is None and f.severity is Severity.high


def test_a_loader_folder_of_only_text_templates_is_noise_one_html_file_keeps_it(tmp_path):
    code = ("import os\nimport jinja2\n"
            "TEMPLATE_DIRECTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "
            "'templates')\n"
            "JINJA_ENV = jinja2.Environment(\n"
            "    loader=jinja2.FileSystemLoader(searchpath=TEMPLATE_DIRECTORY),\n)\n"
            "def new(kind):\n    return JINJA_ENV.get_template(f'{kind}.jinja').render()\n")
    _write(tmp_path, {"app/server.py": "from flask import Flask\n", "gen/new.py": code,
                      "gen/templates/app.py.jinja": "x = {{ x }}\n",
                      "gen/templates/graph.dot.jinja": "digraph { a [label=<<B>x</B>>] }\n",
                      "other/new.py": code,
                      "other/templates/app.py.jinja": "x = {{ x }}\n",
                      "other/templates/index.html": "<html>{{ x }}</html>\n"})
    (gen,) = _filtered(tmp_path, [_sec("B701", "gen/new.py", 4, severity=Severity.high)])
    (other,) = _filtered(tmp_path, [_sec("B701", "other/new.py", 4, severity=Severity.high)])
    assert "text, not HTML" in gen.noise
    assert other.noise is None and other.severity is Severity.high


def test_a_loader_folder_outside_the_project_or_a_parameter_keeps_the_finding(tmp_path):
    outside = tmp_path / "elsewhere"
    _write(outside, {"t.py.jinja": "x\n"})
    code = ("import jinja2\nfrom pathlib import Path\n"
            f"ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "
            f"{'../../elsewhere'!r}))\n"
            "def go():\n    return ENV.get_template('t.py.jinja').render()\n")
    proj = tmp_path / "proj"
    _write(proj, {"app/server.py": "from flask import Flask\n", "pkg/mod.py": code})
    (f,) = _filtered(proj, [_sec("B701", "pkg/mod.py", 3, severity=Severity.high)])
    assert f.noise is None
    # a text-named template that is a link out of the folder proves nothing
    _write(proj, {"lnk/mod.py": code.replace("../../elsewhere", "templates"),
                  "lnk/templates/.keep": ""})
    (proj / "lnk/templates/t.py.jinja").symlink_to(outside / "t.py.jinja")
    (f,) = _filtered(proj, [_sec("B701", "lnk/mod.py", 3, severity=Severity.high)])
    assert f.noise is None
    (proj / "lnk/templates/t.py.jinja").unlink()
    _write(proj, {"lnk/templates/t.py.jinja": "x = {{ x }}\n"})
    (f,) = _filtered(proj, [_sec("B701", "lnk/mod.py", 3, severity=Severity.high)])
    assert "text, not HTML" in f.noise  # the same folder with the file itself
