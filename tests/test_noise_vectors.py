"""A credential-looking URL in a table of test vectors inside product code
is noise; the same URL in a plain constant or a table under another name
stays shown (qe/noise_vectors.py). Real files, SuperQode's own checks, the
whole noise filter."""

from __future__ import annotations

from superqode_ls.models import Severity
from tests.test_noise_operator import _filtered, _hits

_PASSWORD = {"hardcoded-db-password"}

# ArchiveBox's URL_REGEX_TESTS: input URLs and what the parser must find in them.
VECTORS = '''import re

URL_REGEX = re.compile(r"https?://[^\\s]+")

URL_REGEX_TESTS = [
    ("https://example.com", ["https://example.com"]),
    ("http://-error-.invalid/", ["http://-error-.invalid/"]),
    (
        "http://us:pa@ex.co:42/http://ex.co:19/a?_d=4#-a=2.3",
        ["http://us:pa@ex.co:42/http://ex.co:19/a?_d=4#-a=2.3", "http://ex.co:19/a?_d=4"],
    ),
    ("http://foo.bar?q=Spaces should be encoded", ["http://foo.bar?q=Spaces"]),
]
'''

# The same URL in a constant named like a test, and in a table that is no test.
CONSTANTS = '''import os

TEST_DB_URL = "postgresql://us:pa5sw0rd@db.example.com:5432/app"

MIRRORS = [
    ("primary", "postgresql://us:pa5sw0rd@db1.example.com:5432/app"),
    ("replica", "postgresql://us:pa5sw0rd@db2.example.com:5432/app"),
    ("backup", "postgresql://us:pa5sw0rd@db3.example.com:5432/app"),
]
'''


def test_a_credential_url_in_a_table_of_test_vectors_is_noise_a_constant_stays(make_repo):
    repo = make_repo({"app/__init__.py": "", "app/urls.py": VECTORS,
                      "app/settings.py": CONSTANTS})
    kept = _filtered(repo)
    vectors = _hits(kept, "app/urls.py", _PASSWORD)
    assert vectors, "the pattern check no longer flags the vector"
    for f in vectors:
        assert f.noise and "URL_REGEX_TESTS, a table of test vectors" in f.noise, f.noise
        assert f.severity is Severity.low
    shown = _hits(kept, "app/settings.py", _PASSWORD)
    assert sorted(f.range.start_line for f in shown) == [3, 6, 7, 8]
    assert all(f.noise is None for f in shown), [(f.range.start_line, f.noise) for f in shown]
