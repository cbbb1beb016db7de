"""F821 in a script the project runs with ``exec`` and a globals dict that
gives it the name (evennia's batch-code files: ``player = caller``, run by
``code_exec(code, extra_environ={"caller": caller})`` whose ``exec(code,
environdict)`` starts from ``{"DEBUG": debug}``): info noise with the reason
said; a name no runner gives, and the same name in a module the project
imports, stay shown. Real ruff output on real files."""

from __future__ import annotations

from superqode_ls.qe.roles.lint import LintTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_rules_tools import _at, _filtered, needs_ruff

RUNNER = '''class BatchCodeProcessor:
    def code_exec(self, code, extra_environ=None, debug=False):
        environdict = {"settings_module": None, "DEBUG": debug}
        for key, value in (extra_environ or {}).items():
            environdict[key] = value
        exec(code, environdict)


BATCHCODE = BatchCodeProcessor()
'''

COMMAND = '''from .batchprocessors import BATCHCODE


def run_block(code, caller, debug):
    return BATCHCODE.code_exec(code, extra_environ={"caller": caller}, debug=debug)
'''

SCRIPT = '''# HEADER
limbo = "Limbo"

# CODE
player = caller
if DEBUG:
    player.msg(limbo)
player.msg(weather)
'''

HELPER = '''def greet():
    return caller.msg("hi")
'''

USES_HELPER = '''from .helper import greet

greet()
'''


@needs_ruff
def test_names_the_runner_gives_are_noise_others_stay(make_repo):
    repo = make_repo({"game/__init__.py": "", "game/batchprocessors.py": RUNNER,
                      "game/batchprocess.py": COMMAND, "game/batch/example_batch_code.py": SCRIPT,
                      "game/helper.py": HELPER, "game/uses.py": USES_HELPER})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    script = "game/batch/example_batch_code.py"
    (caller,) = _at(found, script, 5, "F821")
    assert caller.noise and "given by the project's runner" in caller.noise
    assert "game/batchprocess.py:5" in caller.noise and caller.severity.value == "info"
    (debug,) = _at(found, script, 6, "F821")
    assert debug.noise and "game/batchprocessors.py:3" in debug.noise
    # the real twins: a name no runner gives, and an imported module's `caller`
    (weather,) = _at(found, script, 8, "F821")
    assert weather.noise is None and weather.severity.value == "high"
    (imported,) = _at(found, "game/helper.py", 2, "F821")
    assert imported.noise is None


@needs_ruff
def test_without_a_runner_passing_globals_the_names_stay(make_repo):
    runner = RUNNER.replace("exec(code, environdict)", "exec(code)")
    repo = make_repo({"game/__init__.py": "", "game/batchprocessors.py": runner,
                      "game/batchprocess.py": COMMAND, "game/batch/example_batch_code.py": SCRIPT})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    (caller,) = _at(found, "game/batch/example_batch_code.py", 5, "F821")
    assert caller.noise is None
