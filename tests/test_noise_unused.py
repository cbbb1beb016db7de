"""F841 on a name whose statement the code needs without it (an ``except
... as e`` never read, the whole body of a ``try`` that probes an attribute,
a walrus in an ``if`` test, one name of an unpacking whose others are read):
info noise with the reason said; a plain unused result stays shown. Real
ruff output on real files (evennia's and lark's shapes)."""

from __future__ import annotations

import ast

from superqode_ls.qe.noise_unused import needless
from superqode_ls.qe.roles.lint import LintTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_rules_tools import _at, _filtered, needs_ruff

CODE = '''import re


def replace(pattern, text, say):
    try:
        found = re.sub(pattern, "", text)
    except re.error as e:
        say("Invalid regular expression.")
        return None
    return found


def cache(objects, log):
    for obj in objects:
        try:
            ctypes = obj._content_types
        except AttributeError:
            log("no content types")


def resume(names, wanted, go):
    if matches := [n for n in names if n.startswith(wanted)]:
        return go()
    return None


def shape(word, n):
    shared, excess = word[:n], word[n - 1:]
    return excess


def total(items):
    result = sum(items)
    return len(items)


def unpacked(pair):
    first, second = pair
    return pair
'''


@needs_ruff
def test_needless_names_are_noise_an_unused_result_stays(make_repo):
    repo = make_repo({"pkg/__init__.py": "", "pkg/mod.py": CODE})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    (handler,) = _at(found, "pkg/mod.py", 7, "F841")
    assert handler.noise and "except ... as e" in handler.noise
    assert handler.severity.value == "info"
    (probe,) = _at(found, "pkg/mod.py", 16, "F841")
    assert probe.noise and "whole body of a `try`" in probe.noise
    (walrus,) = _at(found, "pkg/mod.py", 22, "F841")
    assert walrus.noise and "walrus" in walrus.noise
    # the real twin: a sum computed and never returned is what F841 is for
    (result,) = _at(found, "pkg/mod.py", 33, "F841")
    assert result.noise is None


def _why(source: str, name: str, line: int) -> str | None:
    return needless(ast.parse(source), name, line)


def test_one_name_of_an_unpacking_others_read_is_noise_none_read_stays():
    assert "`excess`" in _why(CODE, "shared", 28)
    # neither name of ``first, second = pair`` is read: the unpacking is dead
    assert _why(CODE, "first", 38) is None


def test_a_try_with_more_than_the_assignment_stays():
    src = ("def f(obj, log):\n    try:\n        value = obj.attr\n        log('x')\n"
           "    except AttributeError:\n        pass\n")
    assert _why(src, "value", 3) is None
    # a walrus outside a test: nothing reads the value
    assert _why("def f(g):\n    print(x := g())\n", "x", 2) is None


WITH_AND_DEBUGGER = '''def locked(lock, work):
    with lock as held:
        work()


def inspect(load):
    value = load()
    breakpoint()


def plain(load):
    value = load()
    return None
'''


@needs_ruff
def test_a_with_target_and_a_debugger_local_are_noise_a_plain_local_stays(make_repo):
    repo = make_repo({"pkg/__init__.py": "", "pkg/dbg.py": WITH_AND_DEBUGGER})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    (held,) = _at(found, "pkg/dbg.py", 2, "F841")
    assert held.noise and "`with ... as held`" in held.noise
    (kept,) = _at(found, "pkg/dbg.py", 7, "F841")
    assert kept.noise and "debugger (breakpoint())" in kept.noise
    # the real twin: the same local in a function with no debugger
    (plain,) = _at(found, "pkg/dbg.py", 12, "F841")
    assert plain.noise is None


def test_a_conversion_in_a_try_and_a_models_embed_stay():
    # ``value = int(text)`` then ``text`` used: the forgotten conversion F841 is for
    src = ("def f(text):\n    try:\n        value = int(text)\n    except ValueError:\n"
           "        return None\n    return text\n")
    assert _why(src, "value", 3) is None
    assert _why("def g(model, x):\n    vec = model.embed(x)\n    return x\n", "vec", 2) is None
