"""B701 on a jinja2 Environment whose only templates are the module's own
text with no markup (sanic's scripts/release.py renders Markdown release
notes with ``Environment(loader=BaseLoader).from_string(TEMPLATE)``) is
noise; the same Environment over HTML, used for other templates too, or
pulling in another template stays shown (qe/noise_jinja.py)."""

from __future__ import annotations

import pytest

from superqode_ls.models import Severity
from tests.test_noise_library import _filtered, _sec, _write

_RELEASE = '''from jinja2 import BaseLoader, Environment

NOTES = """
## {{ version }}
# Changelog
{% for row in changelogs %}
* {{ row -}}
{% endfor %}
"""{more}

ENV = Environment(loader=BaseLoader){use}
'''


@pytest.mark.parametrize("more,use,quiet", [
    ("", ".from_string(NOTES)", True),                                    # Markdown, sanic
    ("", "\nNOTES_T = ENV.from_string(NOTES)", True),                     # bound, same text
    ('\nPAGE = "<p>{{ body }}</p>"', "\nPAGE_T = ENV.from_string(PAGE)", False),  # HTML
    ("", "\nT = ENV.from_string(NOTES)\nP = ENV.get_template('page.html')", False),
    ('\nBASE = "{% extends \'base.html\' %}"', ".from_string(BASE)", False),  # pulls another
    ("", ".from_string(open('notes.md').read())", False),                 # not the module's
])
def test_a_from_string_environment_over_plain_text_is_no_xss(tmp_path, more, use, quiet):
    code = _RELEASE.replace("{more}", more).replace("{use}", use)
    line = next(i for i, t in enumerate(code.splitlines(), 1) if "Environment(" in t
                and "import" not in t)
    _write(tmp_path, {"app/server.py": "from flask import Flask\n", "scripts/release.py": code})
    (f,) = _filtered(tmp_path, [_sec("B701", "scripts/release.py", line,
                                     severity=Severity.high)])
    if quiet:
        assert f.noise and "no markup (from_string over a literal" in f.noise, f.noise
        assert f.severity is Severity.low
    else:
        assert f.noise is None and f.severity is Severity.high, f.noise
