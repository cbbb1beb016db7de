"""``urlopen`` (B310) of a URL rooted at a literal https address through a
parameter's default and an attribute (poetry-core's SPDX licence updater):
noise with the reason said; the same module once a caller passes its own
base URL through stays shown. Real bandit output on real files."""

from __future__ import annotations

from tests.test_noise_rules import _kept, _security, needs_bandit
from tests.test_noise_secret_names import _noise_all

UPDATER = '''from __future__ import annotations

import json

from pathlib import Path
from typing import Any
from urllib.request import urlopen


class Updater:
    BASE_URL = "https://raw.githubusercontent.com/spdx/license-list-data/master/json/"

    def __init__(self, base_url: str = BASE_URL) -> None:
        self._base_url = base_url

    def dump(self, file: Path | None = None) -> None:
        if file is None:
            file = Path(__file__).parent / "data" / "licenses.json"

        licenses_url = self._base_url + "licenses.json"

        with file.open("w", encoding="utf-8") as f:
            f.write(json.dumps(self.get_licenses(licenses_url), indent=2, sort_keys=True))

    def get_licenses(self, url: str) -> dict[str, Any]:
        licenses = {}
        with urlopen(url) as r:
            data = json.loads(r.read().decode())
        for info in data["licenses"]:
            licenses[info["licenseId"]] = info["name"]
        return licenses
'''

# A caller in the module hands in a base URL from its own caller.
PASSED = UPDATER + '''

def refresh(where: str) -> None:
    Updater(base_url=where).dump()
'''


@needs_bandit
def test_a_url_rooted_at_a_literal_address_is_noise_a_passed_one_stays(make_repo):
    found = _security(make_repo({"spdx/__init__.py": "", "spdx/updater.py": UPDATER,
                                 "other/__init__.py": "", "other/updater.py": PASSED}))
    _noise_all(found, "spdx/updater.py", 27, "starts with the http(s) address the code fixes")
    _kept(found, "other/updater.py", 27, "B310")


# mitmproxy's release script: an f-string URL given to urlretrieve inline or
# through a local; a URL of the script's argument stays.
DOWNLOAD = '''import urllib.request
import sys

VERSION = "24.3.1"


def fetch(tmp):
    url = (
        f"https://github.com/example/mirror/releases/download/"
        f"{VERSION}/installer-{VERSION}.exe"
    )
    urllib.request.urlretrieve(
        url,
        tmp,
    )
    urllib.request.urlretrieve(f"https://example.org/{VERSION}/sums.txt", tmp)


def fetch_given(tmp):
    urllib.request.urlretrieve(sys.argv[1], tmp)
'''


@needs_bandit
def test_an_https_url_passed_inline_or_through_a_local_is_noise_an_argument_stays(make_repo):
    found = _security(make_repo({"release/build.py": DOWNLOAD}))
    _noise_all(found, "release/build.py", 12, "no file: or custom scheme reaches it")
    _noise_all(found, "release/build.py", 16, "no file: or custom scheme reaches it")
    _kept(found, "release/build.py", 20, "B310")
