"""A compatibility module's idioms (supervisor's ``compat.py``): a Python 2
builtin re-exported under ``if PY2:`` (PLW0127, F821), a self-assignment
that keeps a variable ``locals()`` reads (PLW0127) and an import other
modules take from the module (F401) are noise; the shapes where the rules
are right stay shown. Real ruff output on real files."""

from __future__ import annotations

import pytest

from superqode_ls.qe.roles.base import tool_path
from tests.test_noise_closures import _found, _shown
from tests.test_noise_idioms import _noise

needs_ruff = pytest.mark.skipif(tool_path("ruff") is None, reason="ruff not installed")

CONFIG = '[tool.ruff.lint]\nselect = ["F401", "F821", "PLW0127"]\n'

COMPAT = """import sys

PY2 = sys.version_info[0] == 2

if PY2:
    long = long
    unicode = unicode
else:
    long = int
    unicode = str

if sys.version_info >= (3,):
    basestring = str
else:
    basestring = basestring

if not PY2:
    unichr = unichr
else:
    unichr = chr

try:
    import xmlrpc.client as xmlrpclib
except ImportError:
    import xmlrpclib

try:
    from hashlib import sha1
except ImportError:
    from sha import new as sha1

import json
import os.path as osp


def limits(rows):
    for row in rows:
        name = row["name"]
        name = name
        print("%(name)s" % locals())


def plain(value):
    value = value
    return value
"""

USER = """from pkg.compat import long, xmlrpclib
from .compat import (
    unicode,  # a comment between the names
    sha1,
)

print(long, xmlrpclib, sha1, unicode)
"""


@needs_ruff
def test_a_compatibility_modules_reexports_are_noise_the_rest_stays(make_repo):
    repo = make_repo({"pyproject.toml": CONFIG, "pkg/__init__.py": "",
                      "pkg/compat.py": COMPAT, "pkg/user.py": USER})
    found = _found(repo)
    for line in (6, 7):  # long = long, unicode = unicode under if PY2
        _noise(found, "pkg/compat.py", line, "PLW0127", "Python 2")
        _noise(found, "pkg/compat.py", line, "F821", "Python 2")
    _noise(found, "pkg/compat.py", 15, "PLW0127", "only Python 2 runs")  # else of >= (3,)
    _shown(found, "pkg/compat.py", 18, "PLW0127")  # the Python 3 branch: a NameError
    # the fallback imports ruff flags (the first ones are "imported to test availability")
    _noise(found, "pkg/compat.py", 25, "F401", "imports xmlrpclib from this one")
    _noise(found, "pkg/compat.py", 30, "F401", "imports sha1 from this one")  # .compat, as
    _shown(found, "pkg/compat.py", 32, "F401")  # json: nobody imports it from here
    _shown(found, "pkg/compat.py", 33, "F401")
    _noise(found, "pkg/compat.py", 39, "PLW0127", "locals()")
    _shown(found, "pkg/compat.py", 44, "PLW0127")  # no locals(): a no-op
