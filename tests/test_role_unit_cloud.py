"""A test module whose cloud client cannot be built here (luigi's Dataproc,
BigQuery and AWS Batch tests: no Google application default credentials, no
AWS region) is the environment's: info, counted in the role's line, never a
`fail`. A real failure beside it stays high, and tests failing the same way
at one line are not counted as the environment's."""

from __future__ import annotations

from pathlib import Path

from superqode_ls.qe.roles._unit_env import environment_problem
from tests.pyenv_helpers import run_unit_cli

# luigi's words, as its suite printed them in a checkout without accounts.
GOOGLE = ("E       google.auth.exceptions.DefaultCredentialsError: Could not automatically "
          "determine credentials. Please set GOOGLE_APPLICATION_CREDENTIALS or\n"
          "/env/lib/python3.11/site-packages/google/auth/_default.py:283: "
          "DefaultCredentialsError")
AWS = ("E               botocore.exceptions.NoRegionError: You must specify a region.\n"
       "/env/lib/python3.11/site-packages/botocore/regions.py:280: NoRegionError")


def test_a_cloud_account_the_environment_lacks_is_named(tmp_path: Path):
    assert "Google Cloud credentials" in environment_problem({"message": GOOGLE}, tmp_path)
    assert "an AWS region" in environment_problem({"longrepr": AWS}, tmp_path)
    creds = {"message": "botocore.exceptions.NoCredentialsError: Unable to locate credentials"}
    assert "AWS credentials" in environment_problem(creds, tmp_path)
    # the code's own error that merely speaks of a region stays the code's
    assert environment_problem({"message": "ValueError: unknown region 'mars'"}, tmp_path) is None


# The SDK is the environment's package (outside the project), raising what
# botocore raises when no region is configured, at the module's import.
SDK = {"sdk/botocore/__init__.py": "",
       "sdk/botocore/exceptions.py": (
           "class NoRegionError(Exception):\n"
           "    def __init__(self):\n"
           "        super().__init__('You must specify a region.')\n")}

BATCH_TEST = '''import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sdk"))

from botocore.exceptions import NoRegionError  # noqa: E402

client = None
if client is None:
    raise NoRegionError()


def test_batch():
    assert client
'''

OWN_TEST = '''def check(n):
    if n:
        raise ValueError("not zero")


def test_one():
    check(1)


def test_two():
    check(2)


def test_fine():
    check(0)
'''


def test_a_module_needing_a_cloud_account_is_counted_not_a_finding(make_repo):
    repo = make_repo({**SDK, "tests/test_batch.py": BATCH_TEST, "tests/test_own.py": OWN_TEST})
    _, report, unit = run_unit_cli(repo)
    by_title = {f["title"]: f for f in report["findings"]}
    batch = by_title["Tests cannot be collected: tests/test_batch.py"]
    assert batch["severity"] == "info" and "an AWS region" in batch["noise"], batch
    assert "environment" in batch["tags"]
    assert ("1 failure(s) the environment's: the tests need an AWS region"
            in unit["reason"]), unit["reason"]
    # the two tests failing at one line are one finding, the code's: the
    # second is counted there, not as the environment's
    assert "the environment's: the same failure" not in unit["reason"], unit["reason"]
    shown = [f for f in report["findings"] if f["noise"] is None]
    assert len(shown) == 1 and "2 tests fail here the same way" in shown[0]["message"], shown
    assert report["verdict"] == "fail"  # for the code's failure only


def test_only_a_cloud_account_missing_is_no_fail(make_repo):
    repo = make_repo({**SDK, "tests/test_batch.py": BATCH_TEST,
                      "tests/test_fine.py": "def test_fine():\n    assert True\n"})
    proc, report, unit = run_unit_cli(repo)
    assert report["verdict"] != "fail", (report["verdict"], unit["reason"])
    assert all(f["severity"] == "info" for f in report["findings"]), report["findings"]
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_tests_own_precondition_that_names_what_it_needs_is_the_environments(tmp_path):
    # changedetection.io's words: the test asserts its precondition itself
    driver = {"message": "AssertionError: Needs PLAYWRIGHT_DRIVER_URL set for this test\n"
                         "assert None\n +  where None = <function getenv>('PLAYWRIGHT_DRIVER_URL')"}
    plugin = {"message": "AssertionError: Must have the OSINT plugin installed at test time\n"
                         "assert b'OSINT Reconnaissance' in b'<!DOCTYPE html>'"}
    assert "PLAYWRIGHT_DRIVER_URL set" in environment_problem(driver, tmp_path)
    assert "OSINT plugin installed" in environment_problem(plugin, tmp_path)
    # an assertion about the code's result, however it is worded, stays the code's
    for text in ("AssertionError: assert 'set' == 'installed'",
                 "AssertionError: the total needs to be 3\nassert 2 == 3",
                 "AssertionError: value must have been set\nassert None"):
        assert environment_problem({"message": text}, tmp_path) is None, text
