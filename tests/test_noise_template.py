"""F821 on a ``str.format`` slot of a Python file the project fills in as
text (evennia's ``SECRET_KEY = {secret_key}`` in its game template, which
the launcher reads and fills with ``format_map``): info noise with the
reason said; a set of one undefined name in a file nothing fills stays
shown. Real ruff output on real files."""

from __future__ import annotations

from superqode_ls.qe.roles.lint import LintTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_rules_tools import _at, _filtered, needs_ruff

TEMPLATE = '''"""Settings kept out of version control."""

SECRET_KEY = {secret_key}
'''

LAUNCHER = '''import os
import shutil


def create_settings_file(template_dir, path, setting_dict):
    shutil.copy(os.path.join(template_dir, "conf", "secret_settings.py"), path)
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.format_map(setting_dict))
'''

PLAIN = '''def tags(extra):
    return {tag} | extra
'''


@needs_ruff
def test_a_format_slot_of_a_filled_template_is_noise_a_plain_set_stays(make_repo):
    repo = make_repo({"game/__init__.py": "", "game/launcher.py": LAUNCHER,
                      "game/template/conf/secret_settings.py": TEMPLATE,
                      "game/tags.py": PLAIN})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    (slot,) = _at(found, "game/template/conf/secret_settings.py", 3, "F821")
    assert slot.noise and "a slot of a template" in slot.noise
    assert "game/launcher.py" in slot.noise and slot.severity.value == "info"
    # the real twin: a set of an undefined name in ordinary code
    (plain,) = _at(found, "game/tags.py", 2, "F821")
    assert plain.noise is None and plain.severity.value == "high"


@needs_ruff
def test_a_slot_shape_in_a_file_nothing_fills_stays(make_repo):
    repo = make_repo({"game/__init__.py": "",
                      "game/template/conf/secret_settings.py": TEMPLATE,
                      "game/launcher.py": LAUNCHER.replace("text.format_map(setting_dict)",
                                                          "text")})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    (slot,) = _at(found, "game/template/conf/secret_settings.py", 3, "F821")
    assert slot.noise is None
