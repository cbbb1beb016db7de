"""A demo Django site beside the product it demonstrates, selected by a
top-level manage.py (qe/noise_demofolder.py), through the real security
role: its DEBUG = True is low noise; the same settings in a folder named
for no demo, in a demo folder whose text says nothing of a demo, or in a
repository with no other package stay shown."""

from __future__ import annotations

from superqode_ls.models import Severity
from tests.test_context_raise import found_by_security, needs_bandit
from tests.test_findings_context import _at

SETTINGS = (
    "# Quick-start development settings - unsuitable for production\n"
    "DEBUG = True\n"                                                                          # 2
    "ALLOWED_HOSTS = []\n"
    "INSTALLED_APPS = ['helpdesk']\n"
)
PLAIN = "ALLOWED_HOSTS = []\nDEBUG = True\nINSTALLED_APPS = ['helpdesk']\n"
MANAGE = ("import os\n"
          "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'demodesk.config.settings')\n")


def _debug(found, file):
    hits = _at(found, file, 2, "debug-mode")
    assert hits, file
    return hits


@needs_bandit
def test_a_demo_sites_debug_is_noise_beside_the_product(make_repo):
    repo = make_repo({
        "manage.py": MANAGE,
        "pyproject.toml": "[project]\nname = 'django-helpdesk'\n",
        "src/helpdesk/__init__.py": "",
        "demodesk/__init__.py": "",
        "demodesk/README.rst": "A demo Django project. This project is *NOT* production ready.\n",
        "demodesk/config/__init__.py": "",
        "demodesk/config/settings.py": PLAIN,
        "sample_site/__init__.py": "",
        "sample_site/settings.py": SETTINGS,
    })
    found = found_by_security(repo)
    for file in ("demodesk/config/settings.py", "sample_site/settings.py"):
        assert all(f.noise and f.severity.rank <= Severity.low.rank for f in _debug(found, file))


@needs_bandit
def test_a_site_not_named_or_described_as_a_demo_or_alone_stays(make_repo):
    shown = make_repo({
        "manage.py": MANAGE,
        "helpdesk/__init__.py": "",
        "site/__init__.py": "",
        "site/settings.py": SETTINGS,                     # not named for a demo
        "demodesk/__init__.py": "",
        "demodesk/settings.py": PLAIN,                    # nothing says demo
    }, name="product")
    alone = make_repo({
        "manage.py": MANAGE,
        "demodesk/__init__.py": "",
        "demodesk/settings.py": SETTINGS,                 # the only site: the application
    }, name="alone")
    found = found_by_security(shown)
    for file in ("site/settings.py", "demodesk/settings.py"):
        assert any(f.noise is None for f in _debug(found, file)), file
    assert any(f.noise is None for f in _debug(found_by_security(alone), "demodesk/settings.py"))
