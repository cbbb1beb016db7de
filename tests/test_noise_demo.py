"""A demo Django site inside a library's repository (django-silk's
``project/``): its settings' debug mode and literal SECRET_KEY are the
demo's, noise with the reason said; the same settings in a repository that
ships them, or whose packaging finds its packages itself, stay shown. Real
security role output on real files."""

from __future__ import annotations

from tests.test_noise_idioms import _noise, needs_bandit
from tests.test_noise_project import _kept, _security

SETTINGS = """import os

BASE_DIR = os.path.dirname(os.path.dirname(__file__))
SECRET_KEY = 'ey5!m&h-uj6c7dzp@(o1%96okkq4!&bjja%oi*v3r=2t(!$7os'

DEBUG = True

ALLOWED_HOSTS = []
INSTALLED_APPS = ['django.contrib.auth', 'silk']
ROOT_URLCONF = 'project.urls'
"""

MANAGE = "import sys\n\nif __name__ == '__main__':\n    from django.core.management import \\\n" \
         "        execute_from_command_line\n    execute_from_command_line(sys.argv)\n"

SETUP = "from setuptools import setup\n\nsetup(name='silk', packages=['silk'])\n"


def _demo(make_repo, setup):
    return make_repo({
        "setup.py": setup,
        "silk/__init__.py": "",
        "silk/models.py": "def model():\n    return 1\n",
        "project/manage.py": MANAGE,
        "project/project/__init__.py": "",
        "project/project/settings.py": SETTINGS,
    })


@needs_bandit
def test_a_demo_sites_settings_the_package_does_not_ship_are_noise(make_repo):
    found = _security(_demo(make_repo, SETUP))
    _noise(found, "project/project/settings.py", 4, "B105", "demo Django site (project/manage.py)")
    _noise(found, "project/project/settings.py", 6, "debug-mode", "does not ship")


@needs_bandit
def test_settings_the_packaging_may_ship_stay_shown(make_repo):
    # find_packages() finds project/project too: nothing proves it is a demo
    found = _security(_demo(make_repo, SETUP.replace("packages=['silk']",
                                                     "packages=find_packages()")))
    _kept(found, "project/project/settings.py", 4, "B105")
    _kept(found, "project/project/settings.py", 6, "debug-mode")
    # the repository ships the site itself: its settings are the product's
    shipped = _security(_demo(make_repo, SETUP.replace("['silk']", "['silk', 'project']")))
    _kept(shipped, "project/project/settings.py", 4, "B105")
    _kept(shipped, "project/project/settings.py", 6, "debug-mode")
