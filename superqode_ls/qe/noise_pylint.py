"""A finding on a line where the project's own pylint is told that the same
thing is deliberate (called from ``qe/context.py``): coverage.py's
``eval(node.id)  # pylint: disable=eval-used`` over a fixed list of names,
``from coverage.exceptions import *  # pylint: disable=wildcard-import``
kept for the packages that import from the old module. The developer has
looked at that line and said so in the linter the project runs; the finding
stays one click away, with the reason. A disable of another message, or a
``disable`` of the whole block on a line of its own, proves nothing here."""

from __future__ import annotations

import re

# pylint's message names -> the rules (canonical ids) that flag the same thing
_SAME = {
    "eval-used": {"B307", "S307", "PGH001"},
    "exec-used": {"B102", "S102"},
    "wildcard-import": {"F403", "F405"},
    "unused-wildcard-import": {"F403", "F401"},
    "unused-import": {"F401"},
    "global-statement": {"PLW0603"},
    "global-variable-not-assigned": {"PLW0602"},
    "broad-except": {"BLE001", "B902", "PLW0718"},
    "broad-exception-caught": {"BLE001", "B902", "PLW0718"},
    "bare-except": {"E722", "B001"},
    "redefined-builtin": {"A001", "A002", "A003"},
    "protected-access": {"SLF001"},
    "import-outside-toplevel": {"PLC0415"},
    "consider-using-with": {"SIM115", "PLR1732"},
    "unspecified-encoding": {"PLW1514"},
}
_DISABLE = re.compile(r"#.*?\bpylint:\s*disable\s*=\s*([\w\-, ]+)")


def pylint_disabled(rule: str, text: str) -> str | None:
    """Why ``rule`` on the line ``text`` is what the line's own pylint
    disable says is deliberate, or None."""
    if not text.strip() or text.lstrip().startswith("#"):
        return None  # a disable on a line of its own covers a block: not judged here
    m = _DISABLE.search(text)
    if m is None:
        return None
    for name in (n.strip() for n in m.group(1).split(",")):
        if rule in _SAME.get(name, ()):
            return (f"the project's own pylint is told the line is deliberate "
                    f"(pylint: disable={name})")
    return None
