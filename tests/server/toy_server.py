"""The language server with the toy roles of tests/qe_testroles.py registered
(a slow role to cancel, a role that executes code, a planted-marker role)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from superqode_ls.qe.roles import REGISTRY
from tests.qe_testroles import TOY_ROLES

REGISTRY.update(TOY_ROLES)

from superqode_ls.server.__main__ import main

sys.exit(main())
