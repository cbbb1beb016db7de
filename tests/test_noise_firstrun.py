"""A documented first-run default account and a development settings
module's key fallback are noise; the same account without the guard, in a
view, or a fallback in the settings production reads stay shown
(qe/noise_firstrun.py, qe/noise_settings.py). Real files, SuperQode's own
checks and bandit, the whole noise filter."""

from __future__ import annotations

from superqode_ls.models import Severity
from tests.test_noise_idioms import needs_bandit
from tests.test_noise_operator import _filtered, _hits

_ACCOUNT = {"hardcoded-db-password", "B106"}

# babybuddy's management/commands/migrate.py
MIGRATE = '''from django.contrib.auth import get_user_model
from django.core.management.commands import migrate


class Command(migrate.Command):
    help = "Creates an initial User (admin/admin)."

    def handle(self, *args, **kwargs):
        super().handle(*args, **kwargs)
        superusers = get_user_model().objects.filter(is_superuser=True)
        if len(superusers) == 0:
            user = get_user_model().objects.create_user("admin", password="admin")
            user.is_superuser = True
            user.save()
        if not get_user_model().objects.filter(is_superuser=True).exists():
            get_user_model().objects.create_superuser("root", password="r00tpass")
'''

# The same call with no such guard, and the guarded one in a view.
UNGUARDED = '''from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    def handle(self, *args, **kwargs):
        if get_user_model().objects.count() < 100:
            get_user_model().objects.create_user("admin", password="admin")
'''


@needs_bandit
def test_a_first_run_default_account_is_noise_unguarded_or_in_a_view_stays(make_repo):
    repo = make_repo({"app/__init__.py": "",
                      "app/management/commands/migrate.py": MIGRATE,
                      "app/management/commands/seed.py": UNGUARDED,
                      "app/views.py": MIGRATE.replace("migrate.Command", "object")})
    kept = _filtered(repo)
    own = _hits(kept, "app/management/commands/migrate.py", _ACCOUNT)
    assert sorted(f.range.start_line for f in own) == [12, 16], [
        (f.rule_id, f.range.start_line) for f in own]
    for f in own:
        assert f.noise and "first-run default account" in f.noise, f.noise
        assert f.severity is Severity.low
    for file in ("app/management/commands/seed.py", "app/views.py"):
        hits = _hits(kept, file, _ACCOUNT)
        assert hits and all(f.noise is None for f in hits), (file, [(f.rule_id, f.noise)
                                                                    for f in hits])


_KEY = {"secret-signing-key-default"}
DEVELOPMENT = ('from .base import *\n\n'
               'SECRET_KEY = os.environ.get("SECRET_KEY") or "DEVELOPMENT!!"\nDEBUG = True\n')


def _settings(make_repo, base, **extra):
    files = {"manage.py": "import sys\nfrom django.core.management import "
                          "execute_from_command_line\nexecute_from_command_line(sys.argv)\n",
             "proj/__init__.py": "", "proj/settings/__init__.py": "",
             "proj/settings/base.py": "import os\n\n" + base + "DEBUG = False\n",
             "proj/settings/development.py": DEVELOPMENT, **extra}
    kept = _filtered(make_repo(files))
    (f,) = _hits(kept, "proj/settings/development.py", _KEY)
    return f


def test_a_development_modules_key_fallback_is_noise_when_base_has_none(make_repo):
    f = _settings(make_repo, 'SECRET_KEY = os.environ.get("SECRET_KEY") or None\n')
    assert f.noise and "development settings module's key fallback" in f.noise, f.noise
    assert f.severity is Severity.low


def test_a_key_fallback_production_reads_stays(make_repo):
    # the base has a fallback of its own: the development one proves nothing
    f = _settings(make_repo, 'SECRET_KEY = os.environ.get("SECRET_KEY", "changeme-base")\n')
    assert f.noise is None
    # production takes the development module's values
    f = _settings(make_repo, 'SECRET_KEY = os.environ["SECRET_KEY"]\n',
                  **{"proj/settings/production.py": "from .development import *\n"})
    assert f.noise is None
    # a deployment selects the development module
    f = _settings(make_repo, 'SECRET_KEY = os.environ["SECRET_KEY"]\n',
                  **{"Procfile": "web: DJANGO_SETTINGS_MODULE=proj.settings.development "
                                 "gunicorn proj.wsgi\n"})
    assert f.noise is None
