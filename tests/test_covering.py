"""The covering-test index (qe/covering.py): which test files import a
changed file, read from the test files' import statements alone (no
whole-file parse). Real files in a real tree; the reference for what a
statement imports is Python's own parser."""

from __future__ import annotations

import ast
import asyncio

from superqode_ls.qe.covering import CoveringTests, _imports
from tests.conftest import write_files

# Every spelling of an import statement the scan must read as Python does.
SOURCE = '''\
"""A test module."""
from __future__ import annotations

import os, sys as system
import  pkg . deep . mod  as m2
from pkg.alpha import (
    one,  # a comment (with a parenthesis
    two as deux,
)
from pkg.beta import \\
    three
from pkg.gamma import *
from . import sibling
from .rel import thing
import json; import re
try: import tomllib
except ImportError: import tomli as tomllib
if TYPE_CHECKING:
    from pkg.typing_only import Alias
else: from pkg.runtime import Alias


def test_inside():
    from pkg.late import late
    import pkg.lazy  # noqa
    assert late
'''

# Lines that have "import" or "from" in them and are not import statements.
PROSE = '''\
x = 1  # import this later
important = "import"
def importer(): pass
# from the database import rows
'''


def _reference(text: str) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_the_scan_reads_every_import_statement_as_python_does():
    want = _reference(SOURCE)
    assert _imports(SOURCE) == want
    assert {"pkg.alpha.two", "pkg.beta.three", "pkg.gamma.*", "pkg.deep.mod", "tomli",
            "pkg.typing_only.Alias", "pkg.late.late", "pkg.lazy", "re"} <= want
    assert _imports(PROSE) == _reference(PROSE) == set()
    # CRLF line ends, and a file Python cannot parse as a whole (a newer
    # syntax): its import statements still count.
    assert _imports(SOURCE.replace("\n", "\r\n")) == want
    assert _imports("from pkg.alpha import one\nprint(t'{x}' if\n") == {"pkg.alpha", "pkg.alpha.one"}


def test_an_import_written_inside_a_string_counts():
    # No whole-file parse, so a statement inside a string is read too: that
    # errs on the side of running a test, never of missing one.
    text = 'CODE = """\nfrom pkg.alpha import one\n"""\n'
    assert _reference(text) == set()
    assert _imports(text) == {"pkg.alpha", "pkg.alpha.one"}


def test_the_tests_of_a_changed_file(tmp_path):
    root = tmp_path
    write_files(root, {
        "src/pkg/__init__.py": "",
        "src/pkg/mod.py": "def f(): pass\n",
        "src/pkg/other.py": "def g(): pass\n",
        "src/pkg/lonely.py": "",
        "tests/test_func.py": "from pkg.mod import f\n",
        "tests/test_module.py": "from pkg import (\n    mod,\n)\n",
        "tests/test_whole.py": "import pkg\n",  # the package above: covers no module in it
        "tests/test_other.py": "import pkg.other as o\n",
        "tests/test_self.py": "def test(): pass\n",
        "tests/helper.py": "from pkg.mod import f\n",  # not a test file
    })
    covering = CoveringTests(root, role=None, ctx=None)  # type: ignore[arg-type]

    def tests(*files: str) -> list[str]:
        return asyncio.run(covering.for_files(list(files)))

    assert tests("src/pkg/mod.py") == ["tests/test_func.py", "tests/test_module.py"]
    assert tests("src/pkg/other.py") == ["tests/test_other.py"]
    # Importing anything in a package runs its __init__.py.
    assert tests("src/pkg/__init__.py") == [
        "tests/test_func.py", "tests/test_module.py", "tests/test_other.py", "tests/test_whole.py"]
    assert tests("src/pkg/lonely.py") == []
    assert tests("tests/test_self.py") == ["tests/test_self.py"]
    assert tests("src/pkg/mod.py", "src/pkg/other.py") == [
        "tests/test_func.py", "tests/test_module.py", "tests/test_other.py"]
