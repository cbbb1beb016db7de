"""An undefined name (F821) that the project's loader sets on its modules
from outside (searxng's engines get ``logger`` and ``traits`` that way):
noise when three sibling modules lack it and another module assigns it as
an attribute; shown otherwise. Real ruff output on real files."""

from __future__ import annotations

import pytest

from superqode_ls.qe.roles.base import tool_path
from tests.test_noise_closures import _found, _shown
from tests.test_noise_idioms import _noise

needs_ruff = pytest.mark.skipif(tool_path("ruff") is None, reason="ruff not installed")

CONFIG = '[tool.ruff.lint]\nselect = ["F821"]\n'

LOADER = """import importlib
import types


def load(name: str, parent):
    engine = importlib.import_module(f"engines.{name}")
    set_loggers(engine, name, parent)
    return engine


def set_loggers(engine: "types.ModuleType", name: str, parent):
    engine.logger = parent.getChild(name)
    setattr(engine, "traits", {})
    engine.categories = ["general"]
"""

FEW = """def categories_of():
    found = list(categories)
    return found + missing
"""

ENGINE = """def search(query):
    logger.debug("searching %s", query)
    return traits.get(query)
"""

PLUGIN = """def run():
    log.info("running")
    return helper()
"""

HOLDER = """class Holder:
    def __init__(self):
        self.log = None
"""


@needs_ruff
def test_a_name_the_loader_sets_on_sibling_modules_is_noise_others_stay(make_repo):
    repo = make_repo({
        "pyproject.toml": CONFIG, "engines/__init__.py": LOADER,
        **{f"engines/e{i}.py": ENGINE for i in range(3)}, "engines/few.py": FEW,
        # only two siblings: not the loader's pattern
        "engines/sub/__init__.py": "", **{f"engines/sub/s{i}.py": ENGINE for i in range(2)},
        # three siblings, but set only on `self`, or never
        "plugins/__init__.py": HOLDER, **{f"plugins/p{i}.py": PLUGIN for i in range(3)},
    })
    found = _found(repo)
    for i in range(3):
        _noise(found, f"engines/e{i}.py", 2, "F821", "from outside by the project's loader")
        _noise(found, f"engines/e{i}.py", 3, "F821", "engines/__init__.py:13")  # setattr
        _shown(found, f"plugins/p{i}.py", 2, "F821")  # self.log = ... sets no module's name
        _shown(found, f"plugins/p{i}.py", 3, "F821")  # nothing sets `helper`
    for i in range(2):
        _shown(found, f"engines/sub/s{i}.py", 2, "F821")
    # One module lacks `categories`, which the proven loader sets too: noise;
    # `missing` is set by nothing: shown.
    _noise(found, "engines/few.py", 2, "F821", "engines/__init__.py:14")
    _shown(found, "engines/few.py", 3, "F821")
