"""An ``eval`` inside a lambda whose code is a parameter of it (fail2ban's
``lambda ban, formula=formula: eval(formula)``): the code-generation check
looks at the lambda's one-expression body. It raised ``TypeError: 'Call'
object is not iterable`` there, which ended the whole run (exit 3, no
findings)."""

from __future__ import annotations

from tests.test_noise_idioms import needs_bandit
from tests.test_noise_project import _security

MODULE = """def make(formula):
    return lambda ban, formula=formula: eval(formula)


def fixed():
    return lambda: eval("1 + 1")
"""


@needs_bandit
def test_eval_of_a_lambdas_parameter_is_judged_not_crashed(make_repo):
    found = _security(make_repo({"jail.py": MODULE}))
    evals = {f.range.start_line: f for f in found if f.rule_id.upper() in ("B307", "S307")}
    assert 2 in evals and evals[2].noise is None  # code from a caller stays
    assert 6 in evals and evals[6].noise  # a literal: code the module writes itself
