"""Password rules on values that name something rather than hold a secret
(judged by hand on a fitness web app and a metasearch engine): a dotted path
to the class a setting loads, and the name a token is stored under in a
key-value store. Each with the neighbour that must stay a finding: a real
token under a token's name, and the same constant once it is sent as a
credential. Real bandit and secrets-scan output on real files."""

from __future__ import annotations

from tests.test_noise_rules import _at, _kept, _security, needs_bandit

SETTINGS = """HEADLESS_CLIENTS = ('app',)
HEADLESS_TOKEN_STRATEGY = 'wger.utils.headless_auth.WgerJWTTokenStrategy'
HEADLESS_JWT_ALGORITHM = 'RS256'
HEADLESS_TOKEN_SECRET = 'Zq8pLm2vR5xT9wKe3Hs7Yb'
"""

LINK_TOKEN = '''"""Tokens a page must load before the search is answered."""
import secrets

TOKEN_LIVE_TIME = 600
TOKEN_KEY = 'SearXNG_limiter.token'
"""Key for which the current token is stored in the DB"""


def get_token(valkey_client) -> str:
    token = valkey_client.get(TOKEN_KEY)
    if token:
        return token.decode("utf-8")
    token = secrets.token_hex(16)
    valkey_client.set(TOKEN_KEY, token, ex=TOKEN_LIVE_TIME)
    return token
'''

# The same constant, but sent as the credential: a token after all.
SENT = '''import requests

API_TOKEN = 'SearXNG_limiter.token'


def fetch(cache, url):
    cache.set(API_TOKEN, url)
    return requests.get(url, headers={"Authorization": API_TOKEN}, timeout=5)
'''


def _noise_all(found, file, line, why):
    hits = _at(found, file, line)
    assert hits, (file, line, [(f.file, f.range and f.range.start_line, f.rule_id) for f in found])
    for f in hits:
        assert f.noise and why in f.noise, (f.rule_id, f.noise)


@needs_bandit
def test_a_dotted_class_path_is_noise_a_token_beside_it_stays(make_repo):
    found = _security(make_repo({"app/__init__.py": "", "app/settings_global.py": SETTINGS}))
    _noise_all(found, "app/settings_global.py", 2, "a dotted path to a class")
    _kept(found, "app/settings_global.py", 4, "B105")


@needs_bandit
def test_the_name_a_token_is_stored_under_is_noise_a_sent_one_stays(make_repo):
    found = _security(make_repo({"botdetection/__init__.py": "",
                                 "botdetection/link_token.py": LINK_TOKEN,
                                 "client.py": SENT}))
    _noise_all(found, "botdetection/link_token.py", 5, "the name a value is stored under")
    _kept(found, "client.py", 3)


# A chat bot's configuration template: the tokens' formats shown cut short.
TEMPLATE = '''BOT_IDENTITY = {
    ## Slack mode (comment the others above if using this mode)
    # "token": "xoxb-4426949411-aEM7...",
    ## Telegram mode (comment the others above if using this mode)
    # "token": "103419016:AAbcd1234...",
}
'''

REAL = '''BOT_IDENTITY = {
    "token": "xoxb-4426949411-aEM7Zq8pLm2vR5xT9wKe3Hs7",
    "api_token": "103419016:AAbcd1234Zq8pLm2vR5xT9wKe3",
}
'''


@needs_bandit
def test_a_token_cut_short_in_a_template_is_no_secret_a_whole_one_stays(make_repo):
    found = _security(make_repo({"bot/__init__.py": "", "bot/config-template.py": TEMPLATE,
                                 "bot/config.py": REAL}))
    assert not _at(found, "bot/config-template.py", 3)
    assert not _at(found, "bot/config-template.py", 5)
    _kept(found, "bot/config.py", 2)
    _kept(found, "bot/config.py", 3)


UTIL = '''import tarfile
from pathlib import Path


def safe_extractall(tar: tarfile.TarFile, path: Path) -> None:
    tar.extractall(path=str(path), filter="data")
'''

BUILDER = '''import tarfile
from pathlib import Path

from .util import safe_extractall


def unpack(sdist: Path, work_dir: Path) -> None:
    with tarfile.open(str(sdist), "r:gz") as tar:
        safe_extractall(tar, work_dir)


def unpack_raw(sdist: Path, work_dir: Path) -> None:
    with tarfile.open(str(sdist), "r:gz") as tar:
        tar.extractall(work_dir)
'''


@needs_bandit
def test_the_projects_own_safe_extractall_is_noise_tarfiles_method_stays(make_repo):
    found = _security(make_repo({"pkg/__init__.py": "", "pkg/util.py": UTIL,
                                 "pkg/builder.py": BUILDER}))
    _noise_all(found, "pkg/builder.py", 9, "not tarfile's extractall")
    _kept(found, "pkg/builder.py", 14, "B202")


CHECKED = '''import os
import tarfile


def safe_extract(path, tar_path):
    with tarfile.open(tar_path) as tar:
        for member in tar.getmembers():
            if not os.path.realpath(os.path.join(path, member.name)).startswith(path):
                raise RuntimeError("Attempted Path Traversal in Tar File")
        tar.extractall(path)


def logged_extract(path, tar_path, log):
    with tarfile.open(tar_path) as tar:
        for member in tar.getmembers():
            log(member.name)
        tar.extractall(path)
'''


@needs_bandit
def test_an_extraction_after_a_loop_that_raises_on_a_bad_member_is_noise(make_repo):
    """luigi's SafeExtractor checks every member's path first; a loop that
    only logs them checks nothing."""
    found = _security(make_repo({"pkg/__init__.py": "", "pkg/unpack.py": CHECKED}))
    _noise_all(found, "pkg/unpack.py", 10, "every member's path is checked first")
    _kept(found, "pkg/unpack.py", 17, "B202")


GIT = '''import subprocess
import sys

WINDOWS = sys.platform == "win32"


def executable() -> str:
    if WINDOWS:
        # Finding git via where.exe
        where = "%WINDIR%\\\\System32\\\\where.exe"
        paths = subprocess.check_output(
            [where, "git"], shell=True, encoding="oem"
        ).split("\\n")
        return paths[0]
    return "git"


def run_tool(tool: str) -> str:
    where = "%WINDIR%\\\\System32\\\\where.exe"
    return subprocess.check_output(
        [where, tool], shell=True, encoding="oem"
    )
'''


@needs_bandit
def test_a_fixed_command_that_needs_the_shell_is_noise_a_parameter_in_it_stays(make_repo):
    found = _security(make_repo({"vcs/__init__.py": "", "vcs/git.py": GIT}))
    _noise_all(found, "vcs/git.py", 12, "needs the shell (it expands %WINDIR%)")
    _kept(found, "vcs/git.py", 21, "B602")
