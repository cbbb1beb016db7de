"""An unused import (F401) that a string type alias reads is false, and its
fix (removing the import) is withdrawn; an import only named in a plain
string stays, fix and all. Real ruff output on real files."""

from __future__ import annotations

import pytest

from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.lint import LintTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_idioms import _at, _noise

needs_ruff = pytest.mark.skipif(tool_path("ruff") is None, reason="ruff not installed")

COMMON = """import sys
from typing import TYPE_CHECKING, Callable, Dict

if TYPE_CHECKING:
    from .lexer import Lexer
    from .lark import PostLex
    from typing import Union, Type
    from typing import Literal
    from .grammar import Rule
    if sys.version_info >= (3, 10):
        from typing import TypeAlias
    else:
        from typing_extensions import TypeAlias

_ParserArgType: 'TypeAlias' = 'Literal["earley", "lalr", "auto"]'
_LexerArgType: 'TypeAlias' = 'Union[Literal["auto", "basic"], Type[Lexer]]'
_Hook = 'Callable[[PostLex], None]'
_MESSAGE = 'no Rule matched'
Callbacks = Dict[str, Callable]


def configure(hook: _Hook, parser: _ParserArgType = "auto", lexer: _LexerArgType = "auto"):
    return hook, parser, lexer, _MESSAGE
"""


@needs_ruff
def test_an_import_read_by_a_string_type_alias_is_false_and_loses_its_fix(make_repo):
    repo = make_repo({"pyproject.toml": '[tool.ruff.lint]\nselect = ["F401"]\n',
                      "lib/common.py": COMMON, "lib/__init__.py": ""})
    raw = run_role(LintTester(), make_ctx(repo)).findings
    assert all(f.fix_patch_id for f in raw if f.rule_id == "F401"), raw  # ruff offers a fix
    found = filter_findings(raw, read_line=FileLines(repo), threshold=0.7).findings
    for line in (5, 7, 8):  # Lexer, Union, Literal: read by the TypeAlias strings
        _noise(found, "lib/common.py", line, "F401", "string type alias")
        assert all(f.fix_patch_id is None for f in _at(found, "lib/common.py", line, "F401"))
    # PostLex: read by a string alias that the module uses as an annotation
    _noise(found, "lib/common.py", 6, "F401", "string type alias (_Hook)")
    # Rule: only in a message string, which nothing reads as a type
    for f in _at(found, "lib/common.py", 9, "F401"):
        assert f.noise is None, f.noise
        assert f.fix_patch_id is not None
