"""An f-string without placeholders (F541) is a style finding: the string is
the same at run time (tweepy's constant endpoint paths beside formatted
ones). It is noise, counted, with its safe fix still offered; an unused
import beside it stays shown. Real ruff output on a real file."""

from __future__ import annotations

import pytest

from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.noise_style import STYLE_REASON
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.lint import LintTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_idioms import _at

needs_ruff = pytest.mark.skipif(tool_path("ruff") is None, reason="ruff not installed")

CLIENT = """import json


class Client:
    def get_tweet(self, tweet_id):
        return self.request("GET", f"/2/tweets/{tweet_id}")

    def get_recent(self):
        return self.request("GET", f"/2/tweets/search/recent")

    def request(self, method, path):
        return method, path
"""


@needs_ruff
def test_an_fstring_without_placeholders_is_style_noise_with_its_fix_an_unused_import_stays(
        make_repo):
    repo = make_repo({"pyproject.toml": '[tool.ruff.lint]\nselect = ["F541", "F401"]\n',
                      "tweepy/client.py": CLIENT})
    found = filter_findings(run_role(LintTester(), make_ctx(repo)).findings,
                            read_line=FileLines(repo), threshold=0.7).findings
    for f in _at(found, "tweepy/client.py", 9, "F541"):
        assert f.noise and STYLE_REASON in f.noise, f.noise
        assert f.fix_patch_id, "the safe fix stays offered"
    for f in _at(found, "tweepy/client.py", 1, "F401"):
        assert f.noise is None, f.noise
