"""F401 on a package stub's ``from . import submodule`` (tornado's
``__init__.pyi``) is noise: type checkers read it as a re-export. Another
unused import in the same stub stays (qe/noise_reexports.py). Real ruff,
the whole noise filter."""

from __future__ import annotations

from tests.test_noise_closures import _found, _shown
from tests.test_noise_idioms import _noise, needs_ruff

STUB = """import typing
import collections

version: str
version_info: typing.Tuple[int, int, int, int]

from . import (
    auth,
    escape,
)
from .web import RequestHandler
"""


@needs_ruff
def test_a_package_stubs_dot_import_of_its_submodules_is_a_reexport(make_repo):
    repo = make_repo({"pyproject.toml": '[tool.ruff.lint]\nselect = ["F401"]\n',
                      "pkg/__init__.py": "version = '1'\n", "pkg/__init__.pyi": STUB,
                      "pkg/auth.py": "", "pkg/escape.py": "",
                      "pkg/web.py": "class RequestHandler:\n    pass\n"})
    found = _found(repo)
    _noise(found, "pkg/__init__.pyi", 8, "F401", "re-exports the submodule")
    _noise(found, "pkg/__init__.pyi", 9, "F401", "re-exports the submodule")
    # not the dot form: a stub re-exports it only as `RequestHandler as RequestHandler`
    _shown(found, "pkg/__init__.pyi", 11, "F401")
    _shown(found, "pkg/__init__.pyi", 2, "F401")  # another package's module
