"""F811 where both bindings import one name from one module (evennia's
``from .rpsystem import (..., LanguageError, ..., LanguageError)``): info
noise with the reason said; the same name imported from two modules stays
shown. Real ruff output on real files."""

from __future__ import annotations

import ast

from superqode_ls.qe.noise_reimport import same_import
from superqode_ls.qe.roles.lint import LintTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_rules_tools import _at, _filtered, needs_ruff

INIT = '''from .rpsystem import (
    EmoteError,
    LanguageError,
    RecogError,
    LanguageError,
)
from .errors import RecogError

__all__ = ["EmoteError", "LanguageError", "RecogError"]
'''

RPSYSTEM = '''class EmoteError(Exception):
    pass


class LanguageError(Exception):
    pass


class RecogError(Exception):
    pass
'''

ERRORS = '''class RecogError(ValueError):
    pass
'''


@needs_ruff
def test_the_same_import_twice_is_noise_another_modules_name_stays(make_repo):
    repo = make_repo({"rp/__init__.py": INIT, "rp/rpsystem.py": RPSYSTEM, "rp/errors.py": ERRORS})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    (twice,) = _at(found, "rp/__init__.py", 5, "F811")
    assert twice.noise and "imported again from the same module (.rpsystem)" in twice.noise
    # the real twin: RecogError from .errors replaces another class
    (other,) = _at(found, "rp/__init__.py", 7, "F811")
    assert other.noise is None


def test_different_original_names_stay():
    src = "from m import a as x\nfrom m import b as x\n"
    assert same_import(ast.parse(src), "x", 1, 2) is None
    assert same_import(ast.parse("from m import a\nfrom m import a\n"), "a", 1, 2) == "m"
