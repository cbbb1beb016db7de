"""PLW0406 on a module that imports its importable self to set state there
(tornado's autoreload.main, run as ``python -m``) is noise; a self-import
the function only reads from, or one at the top, stays
(qe/noise_selfimport.py). Real ruff, the whole noise filter."""

from __future__ import annotations

from tests.test_noise_closures import _found, _shown
from tests.test_noise_idioms import _noise, needs_ruff

RELOAD = """import sys

_is_main = False


def main():
    import pkg.reload

    global _is_main
    pkg.reload._is_main = _is_main = True
    return sys.argv


def peek():
    import pkg.reload

    return pkg.reload._is_main
"""


@needs_ruff
def test_a_module_setting_state_on_its_importable_self_is_noise_a_read_stays(make_repo):
    repo = make_repo({"pyproject.toml": '[tool.ruff.lint]\nselect = ["PLW0406"]\n',
                      "pkg/__init__.py": "", "pkg/reload.py": RELOAD,
                      "pkg/top.py": "import pkg.top\n\nX = 1\n"})
    found = _found(repo)
    _noise(found, "pkg/reload.py", 7, "PLW0406", "imports its importable self on purpose")
    _shown(found, "pkg/reload.py", 15, "PLW0406")
    _shown(found, "pkg/top.py", 1, "PLW0406")
