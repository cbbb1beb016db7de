"""An unused import in a Django app's ``AppConfig.ready()`` (judged by hand
on a fitness web app): the app's own signals module imported for its side
effects is noise with the reason said; an unused import of another package
in the same method, and the same app import in another function, stay.
Real ruff output on real files."""

from __future__ import annotations

from tests.test_noise_idioms import _noise, needs_ruff
from tests.test_noise_project import _kept, _lint

APPS = '''from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = 'wger.core'
    verbose_name = 'Core'

    def ready(self):
        import wger.core.signals
        import json


def helper():
    import wger.core.signals
'''


@needs_ruff
def test_an_apps_own_module_imported_in_ready_is_noise_others_stay(make_repo):
    found = _lint(make_repo({"wger/__init__.py": "", "wger/core/__init__.py": "",
                             "wger/core/signals.py": "SIGNALS = 1\n",
                             "wger/core/apps.py": APPS}))
    _noise(found, "wger/core/apps.py", 9, "F401", "AppConfig.ready() for its side effects")
    _kept(found, "wger/core/apps.py", 10, "F401")
    _kept(found, "wger/core/apps.py", 14, "F401")
