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


# flask-security's pwned(): the URL is an f-string starting with the literal
# scheme and host, given as url= to a Request that urlopen then opens. A
# URL whose host (or scheme) the caller supplies stays.
PWNED = '''import hashlib
import urllib.request


def pwned(password):
    sha1 = hashlib.sha1(password.encode("utf8")).hexdigest()
    req = urllib.request.Request(
        url=f"https://api.pwnedpasswords.com/range/{sha1[:5].upper()}",
        headers={"User-Agent": "Flask-Security (Python)"},
    )
    with urllib.request.urlopen(req) as f:
        return f.read()


def lookup(host, key):
    req = urllib.request.Request(url=f"https://{host}/range/{key}")
    with urllib.request.urlopen(req) as f:
        return f.read()


def lookup_joined(host, key):
    with urllib.request.urlopen("https://" + host + "/range/" + key) as f:
        return f.read()


def lookup_given(url):
    with urllib.request.urlopen(urllib.request.Request(url=url)) as f:
        return f.read()
'''


@needs_bandit
def test_a_request_built_from_a_fixed_address_is_noise_a_supplied_host_stays(make_repo):
    found = _security(make_repo({"sec/__init__.py": "", "sec/utils.py": PWNED}))
    _noise_all(found, "sec/utils.py", 11, "no file: or custom scheme reaches it")
    _kept(found, "sec/utils.py", 17, "B310")
    _kept(found, "sec/utils.py", 22, "B310")
    _kept(found, "sec/utils.py", 27, "B310")


def test_the_literal_must_fix_the_host_and_a_request_must_be_urllibs():
    import ast

    from superqode_ls.qe.noise_urls import default_url

    def why(source, line):
        return default_url(ast.parse(source), line)

    assert why('from urllib.request import urlopen\nurlopen("https://a.example/x")\n', 2)
    assert why('from urllib.request import urlopen\nurlopen("https://a.example")\n', 2)
    # the host ends where the text goes on: "https://a.example" + rest may
    # not be a.example at all (".evil.test/", "@evil.test")
    assert why('from urllib.request import urlopen\nurlopen("https://a.example" + x)\n', 2) is None
    assert why('from urllib.request import urlopen\nurlopen(f"https://{h}/x")\n', 2) is None
    assert why('from urllib.request import urlopen\nurlopen(f"https://u@{h}/x")\n', 2) is None
    assert why('from urllib.request import urlopen\nurlopen(url=f"https://a.example/{k}")\n', 2)
    # a Request class that is not urllib's may put anything in the request
    other = ("from urllib.request import urlopen\nfrom web import Request\n"
             'urlopen(Request("https://a.example/x"))\n')
    assert why(other, 3) is None
    assert why(other.replace("from web import", "from urllib.request import"), 3)
