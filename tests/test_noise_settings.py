"""A Django settings module for CI or a developer's machine beside the one the
project's entry points use (wger's ``settings/ci.py`` and
``settings/local_dev.py`` beside ``settings/main.py``): its literal
SECRET_KEY, DEBUG = True and database password are noise with the reason
said; the production module's stay shown, and so does the same module once
the entry points (or a Dockerfile) choose it or production imports it. Real
security role output on real files."""

from __future__ import annotations

from tests.test_noise_idioms import _at, _noise, needs_bandit
from tests.test_noise_project import _kept, _security

MANAGE = """import os
import sys

if __name__ == '__main__':
    os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'settings.main')
    from django.core.management import execute_from_command_line
    execute_from_command_line(sys.argv)
"""

WSGI = """import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'settings.main')
application = get_wsgi_application()
"""

GLOBAL = "INSTALLED_APPS = ['django.contrib.auth']\nROOT_URLCONF = 'site_app.urls'\n"

LOCAL_DEV = """from .settings_global import *

DEBUG = True

SECRET_KEY = 'wger-local-development-supersecret-key-1234567890!'

DBCONFIG_PG = {
    'ENGINE': 'django.db.backends.postgresql',
    'NAME': 'site',
    'PASSWORD': 'Zq8!pLm2#vR5xT9w',
}
"""

CI = """from .settings_global import *

DEBUG = False
SECRET_KEY = '61fxc$k%9nj!be-_up9%xzm(z)9l7$h33b1!@bf9581=c-03%p'
"""

MAIN = """import os

from .settings_global import *

DEBUG = True
SECRET_KEY = 'q7#Lx!2vRz$9mPa@4kWe8&nTb0yUc^3h'
"""


def _site(make_repo, main=MAIN, manage=MANAGE, wsgi=WSGI, **extra):
    return make_repo({
        "manage.py": manage,
        "site_app/__init__.py": "",
        "site_app/wsgi.py": wsgi,
        "settings/__init__.py": "",
        "settings/settings_global.py": GLOBAL,
        "settings/main.py": main,
        "settings/local_dev.py": LOCAL_DEV,
        "settings/ci.py": CI,
        **extra,
    })


@needs_bandit
def test_ci_and_local_settings_beside_the_default_module_are_noise(make_repo):
    found = _security(_site(make_repo))
    assert _at(found, "settings/local_dev.py", 5, "B105")
    _noise(found, "settings/local_dev.py", 5, "B105", "entry points run with settings.main")
    _noise(found, "settings/local_dev.py", 10, "B105", "CI or a developer's machine")
    _noise(found, "settings/ci.py", 4, "B105", "(ci.py)")
    # the module the entry points use keeps its findings
    _kept(found, "settings/main.py", 6, "B105")
    assert _at(found, "settings/main.py", 6, "B105")


@needs_bandit
def test_side_settings_the_project_runs_with_stay_shown(make_repo):
    # manage.py's default is the local module itself
    own = _security(_site(make_repo, manage=MANAGE.replace("settings.main", "settings.local_dev")))
    _kept(own, "settings/local_dev.py", 5, "B105")
    # production takes the local module's values
    star = _security(_site(make_repo, main=MAIN + "from .local_dev import *\n"))
    _kept(star, "settings/local_dev.py", 5, "B105")
    # a Dockerfile at the top deploys the CI module
    dockerfile = "FROM python:3.12\nENV DJANGO_SETTINGS_MODULE=settings.ci\n"
    docker = _security(_site(make_repo, Dockerfile=dockerfile))
    _kept(docker, "settings/ci.py", 4, "B105")
    # no entry point names a default: nothing proves which module runs
    bare = _security(_site(make_repo, manage="import sys\n", wsgi="import os\n"))
    _kept(bare, "settings/local_dev.py", 5, "B105")


@needs_bandit
def test_debug_in_a_developer_settings_module_beside_settings_py(make_repo):
    # the single-module layout: mysite/settings.py is the default, and
    # mysite/settings_dev.py beside it turns DEBUG on for a laptop
    files = {
        "manage.py": MANAGE.replace("settings.main", "mysite.settings"),
        "mysite/__init__.py": "",
        "mysite/settings.py": GLOBAL + "DEBUG = True\n",
        "mysite/settings_dev.py": "from .settings import *\n\nDEBUG = True\n",
    }
    found = _security(make_repo(files))
    _noise(found, "mysite/settings_dev.py", 3, "debug-mode", "run with mysite.settings")
    _kept(found, "mysite/settings.py", 3, "debug-mode")
    assert _at(found, "mysite/settings.py", 3, "debug-mode")


# PowerDNS-Admin: configs/development.py and configs/test.py (no package,
# read by path: the tests' conftest loads test.py), beside the shipped
# default configuration whose key stays shown
FLASK_DEV = """import os

SECRET_KEY = 'e951e5a1f4b94151b360f47edf596dd2'
SQLA_DB_HOST = '127.0.0.1'
"""
FLASK_APP = """import os
from flask import Flask


def create_app(config=None):
    app = Flask(__name__)
    app.config.from_object('pdnsapp.default_config')
    if config is not None:
        app.config.from_pyfile(config)
    return app
"""


def _flask(make_repo, **extra):
    return make_repo({
        "pdnsapp/__init__.py": FLASK_APP,
        "pdnsapp/default_config.py": FLASK_DEV,
        "configs/development.py": FLASK_DEV,
        "configs/test.py": FLASK_DEV,
        "tests/conftest.py": "from pdnsapp import create_app\n\n"
                             "app = create_app('../configs/test.py')\n",
        **extra,
    })


@needs_bandit
def test_development_and_test_configs_only_the_tests_load_are_noise(make_repo):
    found = _security(_flask(make_repo))
    _noise(found, "configs/development.py", 3, "B105", "nothing but the tests loads it")
    _noise(found, "configs/test.py", 3, "B105", "configuration for development or the tests")
    # the shipped default configuration's key stays
    _kept(found, "pdnsapp/default_config.py", 3, "B105")
    assert _at(found, "pdnsapp/default_config.py", 3, "B105")


@needs_bandit
def test_a_development_config_the_deployment_names_stays_shown(make_repo):
    # a Dockerfile runs the app with it, the package loads it, or it is a module of a package
    docker = _security(_flask(make_repo, Dockerfile="FROM python:3.12\n"
                              "ENV FLASK_CONF=/app/configs/development.py\n"))
    _kept(docker, "configs/development.py", 3, "B105")
    _noise(docker, "configs/test.py", 3, "B105", "nothing but the tests loads it")
    loaded = _security(_flask(make_repo, **{"pdnsapp/__init__.py": FLASK_APP.replace(
        "'pdnsapp.default_config'", "'configs.development'")}))
    _kept(loaded, "configs/development.py", 3, "B105")
    package = _security(_flask(make_repo, **{"configs/__init__.py": ""}))
    _kept(package, "configs/development.py", 3, "B105")


# OpenOversight's config.py: CSRF off in TestingConfig only
CONFIG_CLASSES = """import os


class BaseConfig(object):
    def __init__(self):
        self.SECRET_KEY = os.environ.get("SECRET_KEY")


class TestingConfig(BaseConfig):
    def __init__(self):
        super(TestingConfig, self).__init__()
        self.TESTING = True
        self.WTF_CSRF_ENABLED = False


class ProductionConfig(BaseConfig):
    def __init__(self):
        super(ProductionConfig, self).__init__()
        self.SITEMAP_URL_SCHEME = "https"
"""


def test_csrf_off_in_a_testing_config_class_only_is_noise(make_repo):
    files = {"app/__init__.py": "from flask import Flask\n", "app/config.py": CONFIG_CLASSES}
    found = _security(make_repo(files))
    _noise(found, "app/config.py", 13, "csrf-disabled", "TestingConfig, a test or development")
    # the production class turns it off too: shown
    prod_off = CONFIG_CLASSES.replace('self.SITEMAP_URL_SCHEME = "https"',
                                      "self.WTF_CSRF_ENABLED = False")
    both = _security(make_repo({**files, "app/config.py": prod_off}))
    _kept(both, "app/config.py", 13, "csrf-disabled")
    assert _at(both, "app/config.py", 19, "csrf-disabled")
    # the base turns it off for every class: shown
    base_off = CONFIG_CLASSES.replace('self.SECRET_KEY = os.environ.get("SECRET_KEY")',
                                      "self.WTF_CSRF_ENABLED = False")
    based = _security(make_repo({**files, "app/config.py": base_off}))
    _kept(based, "app/config.py", 6, "csrf-disabled")
    _kept(based, "app/config.py", 13, "csrf-disabled")
