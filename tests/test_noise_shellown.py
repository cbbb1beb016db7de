"""A shell command made only of the application's own values is noise;
the same command with a parameter, request data or a value the rule does
not follow stays worth acting on (qe/noise_shellown.py). Real files, real
bandit, the whole noise filter."""

from __future__ import annotations

from superqode_ls.models import Severity
from tests.test_noise_idioms import needs_bandit
from tests.test_noise_operator import _filtered, _hits

_SHELL = {"B605", "B602", "B604", "command-injection"}

SETTINGS = '''import os
from pathlib import Path

DATA_DIR = Path(os.environ.get("DATA_DIR", os.getcwd())).resolve()
'''


# ArchiveBox's pattern: ints of the service account and the data directory.
OWN = SETTINGS + '''from .permissions import APP_USER, APP_GROUP
import subprocess

CONFIG_FILE = DATA_DIR / "supervisord.conf"


def fix_owner():
    uid, gid = os.geteuid(), os.getegid()
    os.system(f'chown {APP_USER}:{APP_GROUP} "{DATA_DIR}" 2>/dev/null')
    os.system(f'chown {os.getuid()} "{DATA_DIR}"/* 2>/dev/null')


def start():
    conf = CONFIG_FILE
    subprocess.Popen(f"supervisord --configuration={conf}", shell=True)
'''

# The same commands whose path is a public function's parameter, request
# data, a value another call returns, a global a function rebinds, a CGI
# request's variable, or a closure's variable that a view chose (while a
# module constant of the same name is the app's own).
OUTSIDE = SETTINGS + '''from .permissions import APP_USER
import subprocess
from .models import Archive

TARGET = DATA_DIR
CONFIG_FILE = DATA_DIR / "supervisord.conf"


def chown_dir(dir_path):
    os.system(f'chown {APP_USER} "{dir_path}"')


def view(request):
    os.system(f'chown {APP_USER} "{DATA_DIR}/{request.GET["name"]}"')


def from_row():
    path = Archive.objects.first().path
    os.system(f'chown {APP_USER} "{path}"')


def retarget(new):
    global TARGET
    TARGET = new


def chown_target():
    subprocess.call(f"chown {APP_USER} {TARGET}", shell=True)


QUERY = os.environ.get("QUERY_STRING", "")


def cgi():
    os.system(f"grep {QUERY} {DATA_DIR}/index.txt")


def handler(request):
    CONFIG_FILE = request.GET["conf"]

    def start():
        os.system(f"supervisord -c {CONFIG_FILE}")
    return start
'''


@needs_bandit
def test_a_shell_command_of_the_apps_own_values_is_noise_outside_values_stay(make_repo):
    repo = make_repo({"app/__init__.py": "", "app/permissions.py": "APP_USER = 1000\n",
                      "app/own.py": OWN, "app/outside.py": OUTSIDE})
    kept = _filtered(repo)
    own = _hits(kept, "app/own.py", _SHELL)
    assert len(own) == 3, [(f.rule_id, f.range.start_line) for f in own]
    for f in own:
        assert f.noise and "application's own values" in f.noise, (f.rule_id, f.noise)
        assert f.severity is Severity.low
    outside = _hits(kept, "app/outside.py", _SHELL)
    assert sorted(f.range.start_line for f in outside) == [14, 18, 23, 32, 39, 46]
    assert all(f.noise is None for f in outside), [(f.range.start_line, f.noise)
                                                   for f in outside]
