"""What an ordinary web application's code around a pattern check's hit
proves (qe/roles/_web_quiet_guards.py), each rule both ways through the
real security role on real files: the harmless twin is low noise, the
neighbour an attacker can reach stays shown.

- a redirect back to the Referer: noise; to a ``next`` query value, or a
  Referer mixed with one: shown;
- debug on under ``if <debug flag>:``: noise; unconditional, under ``not``
  or in the ``else`` branch: shown;
- an unverified ``jwt.decode`` in a function that verifies the same token
  under ``if verify_signature:``: noise; one that never verifies, or
  verifies another token: shown;
- ``{"password": "LDAP", "auth_method": AuthMethod.LDAP}``: noise; the same
  record with a real password: shown;
- a connection URL as an environment lookup's default for a local host:
  noise; for a host with a domain, or written outside any lookup: shown.
"""

from __future__ import annotations

from superqode_ls.models import Severity
from tests.test_context_raise import found_by_security, needs_bandit
from tests.test_findings_context import _at
from tests.test_web_quiet import _noise

FLASK = "from flask import Flask, redirect, request, url_for\napp = Flask(__name__)\n"


def _shown(findings, file, line, rule):
    hits = _at(findings, file, line, rule)
    assert hits, f"{rule} at {file}:{line} not found"
    shown = [f for f in hits if f.noise is None]
    assert shown and all(f.severity.rank >= Severity.medium.rank for f in shown), (file, line)


@needs_bandit
def test_a_redirect_back_to_the_referer_is_noise_a_query_target_stays(make_repo):
    repo = make_repo({"views.py": FLASK + (
        "@app.route('/a', methods=['POST'])\n"
        "def add():\n"
        "    return redirect(request.referrer)\n"                                           # 5
        "@app.route('/b', methods=['POST'])\n"
        "def back():\n"
        "    if 'HTTP_REFERER' in request.environ:\n"
        "        return redirect(request.environ['HTTP_REFERER'])\n"                         # 9
        "    return redirect(url_for('index'))\n"
        "@app.route('/c')\n"
        "def came():\n"
        "    target = request.referrer or url_for('index')\n"
        "    return redirect(target)\n"                                                      # 14
        "@app.route('/n')\n"
        "def nxt():\n"
        "    return redirect(request.args.get('next'))\n"                                   # 17
        "@app.route('/m')\n"
        "def mixed():\n"
        "    target = request.args.get('next')\n"
        "    return redirect(target if target else request.referrer)\n"                                                      # 21
    )})
    found = found_by_security(repo)
    for line in (5, 9):
        _noise(found, "views.py", line, "open-redirect")
    for line in (17, 21):
        _shown(found, "views.py", line, "open-redirect")


@needs_bandit
def test_debug_under_the_configurations_debug_flag_is_noise_a_forced_one_stays(make_repo):
    repo = make_repo({"webapp.py": FLASK + (
        "import settings\n"
        "def run():\n"
        "    if settings.DEBUG:\n"
        "        app.run(debug=True, port=8888)\n"                                            # 6
        "    else:\n"
        "        app.run(debug=True, port=8889)\n"                                            # 8
        "def init():\n"
        "    if settings.sxng_debug or app.debug:\n"
        "        app.debug = True\n"                                                          # 11
        "    if not settings.DEBUG:\n"
        "        app.debug = True\n"                                                          # 13
        "def serve():\n"
        "    app.run(debug=True, port=8890)\n"                                                # 15
    )})
    found = found_by_security(repo)
    for line in (6, 11):
        _noise(found, "webapp.py", line, "debug-mode")
    for line in (8, 13, 15):
        _shown(found, "webapp.py", line, "debug-mode")


JWT = (
    "import jwt\n"
    "def _validate_jwt(token, jwks):\n"
    "    return jwt.decode(token, jwks, algorithms=['RS256'])\n"
    "class Manager:\n"
    "    def info(self, id_token, jwks):\n"
    "        me = jwt.decode(id_token, options={'verify_signature': False})\n"              # 6
    "        verify_signature = self.kwargs.get('verify_signature', True)\n"
    "        if verify_signature:\n"
    "            return _validate_jwt(id_token, jwks)\n"
    "        return me\n"
    "    def azure(self, id_token, keys):\n"
    "        if self.kwargs.get('verify_signature', False):\n"
    "            from authlib.jose import jwt as authlib_jwt\n"
    "            return authlib_jwt.decode(id_token, keys)\n"
    "        return jwt.decode(id_token, options={'verify_signature': False})\n"            # 15
    "    def peek(self, id_token):\n"
    "        return jwt.decode(id_token, options={'verify_signature': False})\n"            # 17
    "    def other(self, id_token, access_token, jwks):\n"
    "        me = jwt.decode(id_token, options={'verify_signature': False})\n"              # 19
    "        if self.verify:\n"
    "            _validate_jwt(access_token, jwks)\n"
    "        return me\n"
)


@needs_bandit
def test_an_unverified_decode_beside_a_verification_setting_is_noise(make_repo):
    repo = make_repo({"security.py": JWT})
    found = found_by_security(repo)
    for line in (6, 15):
        _noise(found, "security.py", line, "jwt-no-verify")
    for line in (17, 19):
        _shown(found, "security.py", line, "jwt-no-verify")


@needs_bandit
def test_a_sign_in_marker_and_a_local_default_url_are_noise_real_ones_stay(make_repo):
    repo = make_repo({"providers.py": (
        "import enum\n"
        "class AuthMethod(enum.Enum):\n"
        "    LDAP = 'LDAP'\n"
        "def create(users, name):\n"
        "    return users.create({\n"
        "        'username': name,\n"
        "        'password': 'LDAP',\n"                                                      # 7
        "        'auth_method': AuthMethod.LDAP,\n"
        "    })\n"
        "def seed(users):\n"
        "    return users.create({\n"
        "        'username': 'admin',\n"
        "        'password': 'Winter2024!',\n"                                               # 13
        "        'auth_method': AuthMethod.LDAP,\n"
        "    })\n"
    ), "settings/main.py": (
        "import environ\n"
        "env = environ.Env()\n"
        "PG_URI = env.str('PS_STORAGE_PG_URI', 'postgres://storage:storage_pw@db:5432/app')\n"  # 3
        "LOCAL = env.str('LOCAL_URI', 'postgres://app:app_pw@localhost/app')\n"                # 4
        "PROD = env.str('PROD_URI', 'postgres://app:Zq8pL2xw@db.example.com/app')\n"           # 5
        "FIXED = 'postgres://app:Zq8pL2xw@db:5432/app'\n"                                      # 6
    )})
    found = found_by_security(repo)
    _noise(found, "providers.py", 7, "hardcoded-db-password")
    _shown(found, "providers.py", 13, "hardcoded-db-password")
    for line in (3, 4):
        _noise(found, "settings/main.py", line, "hardcoded-db-password")
    for line in (5, 6):
        _shown(found, "settings/main.py", line, "hardcoded-db-password")


@needs_bandit
def test_self_path_of_a_class_that_sends_requests_is_noise_a_handlers_stays(make_repo):
    repo = make_repo({"client.py": (
        "import requests\n"
        "from http.server import BaseHTTPRequestHandler\n"
        "from goodreads.request import GoodreadsRequest\n"
        "class MyRequest(GoodreadsRequest):\n"
        "    def request(self):\n"
        "        return requests.get(self.host + self.path, params=self.params, timeout=5)\n"           # 6
        "class Proxy(BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        return requests.get('http://' + self.path[1:], timeout=5)\n"                           # 9
        "class Mixin(object):\n"
        "    def fetch(self):\n"
        "        return requests.get(self.path, timeout=5)\n"                                           # 12
        "class Served(Mixin, BaseHTTPRequestHandler):\n"
        "    pass\n"
    )})
    found = found_by_security(repo)
    _noise(found, "client.py", 6, "ssrf")
    for line in (9, 12):
        _shown(found, "client.py", line, "ssrf")


@needs_bandit
def test_a_command_helper_the_project_defines_without_a_process_is_noise(make_repo):
    repo = make_repo({"game/objects.py": (
        "class Object:\n"
        "    def execute_cmd(self, raw_string, session=None):\n"
        "        return self.cmdhandler(self, raw_string, session=session)\n"
    ), "game/commands.py": (
        "class Command:\n"
        "    def execute_cmd(self, raw_string, obj=None):\n"
        "        obj.execute_cmd(raw_string)\n"
    ), "game/npcs.py": (
        "from game.objects import Object\n"
        "class Npc(Object):\n"
        "    def attack(self, target):\n"
        "        self.execute_cmd(f'attack {target.key}')\n"                                 # 4
    ), "ops/tools.py": (
        "import subprocess\n"
        "def _sh(line):\n"
        "    return subprocess.check_output(line, shell=True)\n"
        "def run_cmd(line):\n"
        "    return _sh(line)\n"
        "def ping(host):\n"
        "    return run_cmd(f'ping -c1 {host}')\n"                                           # 7
    ), "ops/remote.py": (
        "def deploy(conn, tag):\n"
        "    return conn.run_command(f'deploy {tag}')\n"                                     # 2
    )})
    found = found_by_security(repo)
    _noise(found, "game/npcs.py", 4, "command-injection")
    _shown(found, "ops/tools.py", 7, "command-injection")
    _shown(found, "ops/remote.py", 2, "command-injection")


@needs_bandit
def test_a_password_finding_pattern_is_no_hardcoded_password(make_repo):
    repo = make_repo({"settings_default.py": (
        "AUDIT_MASKS = [\n"
        "    {'password': r'^[@\\\\s]*(?:password|passwd)\\\\s+(?P<secret>.*)$'},\n"             # 2
        "]\n"
        "DATABASES = {'default': {'password': 'Zq8pL2xw-prod'}}\n"                           # 4
    )})
    found = found_by_security(repo)
    assert not _at(found, "settings_default.py", 2, "hardcoded-db-password")
    _shown(found, "settings_default.py", 4, "hardcoded-db-password")
