"""A closure that never outlives its iteration (B023), an undefined name asked
for under ``except NameError`` (F821), and a re-export inside a top-level
``with`` block (PLW0127): noise; the shapes where the rule is right stay shown.
Real ruff output on real files."""

from __future__ import annotations

import pytest

from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.lint import LintTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_idioms import _at, _noise  # one set of helpers

needs_ruff = pytest.mark.skipif(tool_path("ruff") is None, reason="ruff not installed")

CONFIG = '[tool.ruff.lint]\nselect = ["B023", "F821", "PLW0127"]\n'

LOOPS = """def table(rows, widths):
    out = []
    for row in rows:
        height = len(row)

        def align(cell):
            return cell.ljust(height)

        out.append([align(c) for c in row])
    return out


def order(groups):
    for name, actions in groups:
        def bypath(action):
            return (name, action)

        actions.sort(key=bypath)
        best = max(actions, key=lambda a: (name, a))
    return best


def handlers(names):
    out = []
    for name in names:
        def handle():
            return name

        out.append(handle)
    return out


def later(names):
    gens = []
    for name in names:
        def show():
            return name

        gens.append(show() for _ in range(2))
    return gens


def lazies(names):
    return [lambda: name for name in names]
"""

GUARDED = """def shell():
    try:
        get_ipython
    except NameError:
        return None
    return get_ipython()


def other():
    try:
        return get_ipython()
    except KeyError:
        return None


def plain():
    return get_ipython()


def broad():
    try:
        return get_ipython().kernel
    except Exception:
        return None
"""

REEXPORT = """import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from os.path import join, split

join = join


def local():
    value = 1
    value = value
    return value
"""


def _found(repo):
    findings = run_role(LintTester(), make_ctx(repo)).findings
    return filter_findings(findings, read_line=FileLines(repo), threshold=0.7).findings


def _shown(found, file, line, rule):
    for f in _at(found, file, line, rule):
        assert f.noise is None, f.noise


@needs_ruff
def test_a_closure_called_within_its_iteration_is_noise_one_kept_for_later_stays(make_repo):
    repo = make_repo({"pyproject.toml": CONFIG, "lib/loops.py": LOOPS})
    found = _found(repo)
    _noise(found, "lib/loops.py", 7, "B023", "only called within the iteration")
    _noise(found, "lib/loops.py", 16, "B023", "only called within the iteration")  # sort key
    _shown(found, "lib/loops.py", 27, "B023")  # appended: runs after the loop
    _shown(found, "lib/loops.py", 37, "B023")  # called from a generator kept for later
    _shown(found, "lib/loops.py", 44, "B023")  # lambdas kept in a list


@needs_ruff
def test_a_name_asked_for_under_except_name_error_is_noise_others_stay(make_repo):
    repo = make_repo({"pyproject.toml": CONFIG, "lib/shell.py": GUARDED})
    found = _found(repo)
    _noise(found, "lib/shell.py", 6, "F821", "returns when it is missing")
    _noise(found, "lib/shell.py", 22, "F821", "handler for NameError")
    _shown(found, "lib/shell.py", 11, "F821")  # KeyError does not handle it
    _shown(found, "lib/shell.py", 17, "F821")


@needs_ruff
def test_a_reexport_inside_a_top_level_with_block_is_noise_a_local_one_stays(make_repo):
    repo = make_repo({"pyproject.toml": CONFIG, "lib/api.py": REEXPORT})
    found = _found(repo)
    _noise(found, "lib/api.py", 7, "PLW0127", "re-exports")
    _shown(found, "lib/api.py", 12, "PLW0127")


GROUPS = """import itertools


def resolve(actions, low):
    for order, group in itertools.groupby(actions, len):
        if order < low:
            lines = [str(a) for a in group]
            raise ValueError(lines)
        for action in group:
            print(action)


def twice(actions):
    for order, group in itertools.groupby(actions, len):
        first = list(group)
        for action in group:
            print(order, first, action)


def logged(actions, low):
    for order, group in itertools.groupby(actions, len):
        if order < low:
            print([str(a) for a in group])
        for action in group:
            print(action)


def nested(actions, rows):
    for order, group in itertools.groupby(actions, len):
        if order < 0:
            raise ValueError(list(group))
        for row in rows:
            print(row, list(group))
"""


@needs_ruff
def test_a_groupby_group_read_again_only_after_a_branch_that_left_is_noise_others_stay(
        make_repo):
    repo = make_repo({"pyproject.toml": '[tool.ruff.lint]\nselect = ["B031"]\n',
                      "lib/groups.py": GROUPS})
    found = _found(repo)
    _noise(found, "lib/groups.py", 9, "B031", "leaves the iteration")  # pyramid's raise
    _shown(found, "lib/groups.py", 16, "B031")  # read twice: the second read is empty
    _shown(found, "lib/groups.py", 24, "B031")  # the branch only logs, then reads again
    _shown(found, "lib/groups.py", 33, "B031")  # read once per row


EAGER_CALLS = """import asyncio
import re


def marks(text, pairs):
    for tag, md in pairs:
        pattern = re.compile(tag)
        text = pattern.sub(lambda m: md + m.group(0), text)
        text = re.sub(tag, lambda m: md, text)
    return text


def scaled(rows, factors):
    out = []
    for factor in factors:
        def scale(x):
            return x * factor

        out.append(list(map(scale, rows)))
    return out


async def checks(loop, pool, watches):
    for watch in watches:
        await loop.run_in_executor(pool, lambda: watch.check())


def kept(rows, factors, bus, loop, pool):
    lazy = []
    for factor in factors:
        def scale(x):
            return x * factor

        lazy.append(map(scale, rows))
        bus.sub(lambda m: factor)
        loop.run_in_executor(pool, lambda: factor)
    return lazy
"""


@needs_ruff
def test_a_closure_a_call_runs_before_the_iteration_ends_is_noise_one_kept_stays(make_repo):
    """changedetection.io's ``pattern.sub(lambda m: ...open_md...)`` in a loop
    and ``await loop.run_in_executor(pool, lambda: ...watch...)``: the call
    runs the closure before the loop moves on. A lazy map kept in a list,
    another object's ``.sub`` (it may store the callback) and an executor
    job whose future is not awaited stay."""
    repo = make_repo({"pyproject.toml": CONFIG, "lib/eager.py": EAGER_CALLS})
    found = _found(repo)
    _noise(found, "lib/eager.py", 8, "B023", "regex substitution")  # compiled pattern's sub
    _noise(found, "lib/eager.py", 9, "B023", "regex substitution")  # re.sub
    _noise(found, "lib/eager.py", 17, "B023", "only called within the iteration")  # list(map())
    _noise(found, "lib/eager.py", 25, "B023", "awaited on the spot")
    _shown(found, "lib/eager.py", 32, "B023")  # the map is kept for later
    _shown(found, "lib/eager.py", 35, "B023")  # bus.sub may keep the callback
    _shown(found, "lib/eager.py", 36, "B023")  # the executor's future is not awaited


HELPER_CALLS = """import threading


def poll(items, utils, action, hooks):
    for item in items:
        utils.wait_for(lambda: item.ready(), 5)
        def before_repair():
            return item.ok
        action.consistency_check(before_repair)
        hooks.register(lambda: item.close())
        threading.Timer(1, lambda: item.close()).start()
        utils.add_done_callback(lambda: item)
"""


@needs_ruff
def test_a_closure_given_to_a_helper_that_runs_it_is_noise_one_registered_stays(make_repo):
    """fail2ban's ``Utils.wait_for(lambda: ...modlst...)`` and
    ``action.consistencyCheck(_beforeRepair)`` in a loop: a call whose name
    says nothing of keeping the function runs it while the loop waits. A
    registration, a timer and a done-callback keep it: they stay."""
    repo = make_repo({"pyproject.toml": CONFIG, "lib/helpers.py": HELPER_CALLS})
    found = _found(repo)
    _noise(found, "lib/helpers.py", 6, "B023", "says nothing of keeping it")
    _noise(found, "lib/helpers.py", 8, "B023", "only called within the iteration")
    _shown(found, "lib/helpers.py", 10, "B023")  # register keeps it
    _shown(found, "lib/helpers.py", 11, "B023")  # a timer runs it later
    _shown(found, "lib/helpers.py", 12, "B023")  # a done-callback


# lemur's notifications/messaging.py: the inner groupby reuses the name.
REUSED = """from itertools import groupby


def by_owner(certs, label):
    out = {}
    for owner, items in groupby(sorted(certs), len):
        pairs = [(label(c), c) for c in items]
        for notification, items in groupby(sorted(pairs), lambda x: x[0]):
            out[(owner, notification)] = list(items)
    return out


def reread(certs, label, rows):
    out = {}
    for owner, items in groupby(sorted(certs), len):
        pairs = [(label(c), c) for c in items]
        for notification, items in groupby(sorted(pairs), lambda x: x[0]):
            for row in rows:
                out[(owner, notification, row)] = list(items)
    return out
"""


@needs_ruff
def test_an_inner_groupby_reusing_the_group_name_is_read_once_a_reread_stays(make_repo):
    repo = make_repo({"pyproject.toml": '[tool.ruff.lint]\nselect = ["B031"]\n',
                      "lib/reused.py": REUSED})
    found = _found(repo)
    _noise(found, "lib/reused.py", 9, "B031", "inner groupby rebinds items")
    _shown(found, "lib/reused.py", 19, "B031")  # the inner group read once per row


SHADOWED = """def attachments(items, result):
    for item in items:
        meta = item.meta
        out = {}

        def add(key):
            out[key] = meta[key]

        add("title")
        add("size")

    def add(key):
        result[key] = key

    add("date")
    return result


def hierarchy(taxonomies, lookup):
    for taxonomy in taxonomies:
        def walk(tree, level=0):
            for name, children in tree.items():
                lookup[taxonomy.name(name)] = walk(children, level + 1)
            return level

        walk(taxonomy.tree)


def maybe(items, flag):
    for item in items:
        def add(key):
            return item[key]

        add("a")
    if flag:
        def add(key):
            return key
    return add("b")


def kept(items, registry):
    for item in items:
        def walk(tree):
            return [walk(c) for c in tree] + [item]

        registry.append(walk)
"""


@needs_ruff
def test_a_closure_named_again_after_its_loop_or_calling_itself_is_noise_late_ones_stay(
        make_repo):
    repo = make_repo({"pyproject.toml": CONFIG, "lib/walk.py": SHADOWED})
    found = _found(repo)
    # the later ``def add`` after the loop is another function: its calls
    # are not calls of the closure
    _noise(found, "lib/walk.py", 7, "B023", "only called within the iteration")
    # a recursive closure runs only inside its own first call
    _noise(found, "lib/walk.py", 23, "B023", "only called within the iteration")
    # the second ``add`` is bound only on one branch: ``add("b")`` after the
    # loop may call the closure with the last item
    _shown(found, "lib/walk.py", 32, "B023")
    # recursive, and kept in a registry: runs after the loop
    _shown(found, "lib/walk.py", 44, "B023")
