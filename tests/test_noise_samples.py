"""A password in a sample configuration the project installs as
documentation (qe/noise_samples.py) is a placeholder: glances ships
``conf/glances.conf`` to ``share/doc/glances`` with its exporters'
guest/guest and root/root, and keeps copies of it for a compose example
and as test data. The evidence is the build's declaration: a configuration
the application loads itself (dvpwa's ``config/dev.yaml``, postgres/postgres)
stays shown, and so does a line of a copy that the sample does not have.
The real secrets scan and bandit, through the whole filter."""

from __future__ import annotations

from superqode_ls.qe.noise import FileLines
from superqode_ls.qe.noise_samples import documented_samples
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_idioms import _filtered, _kept, _noise, needs_bandit

PYPROJECT = """[project]
name = "monitor"
version = "1.0"

[tool.setuptools.data-files]
"share/doc/monitor" = ["README.rst", "conf/monitor.conf"]
"share/man/man1" = ["docs/man/monitor.1"]
"""

SAMPLE = """[global]
refresh=2

[rabbitmq]
host=localhost
user=guest
password=guest

[couchdb]
user=admin
password=admin
"""

COPY = SAMPLE + """
[influxdb]
user=monitor
password=Zq8pLm2vR5xT9wKe
"""

DEV_YAML = """db:
  user: postgres
  password: postgres
  host: postgres
"""

APP = """import argparse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="./config/dev.yaml")
    return ap.parse_args()
"""

FILES = {
    "pyproject.toml": PYPROJECT,
    "Dockerfile": "FROM python:3.12\nCMD [\"python\", \"-m\", \"monitor\"]\n",
    "README.rst": "Monitor\n",
    "monitor/__init__.py": APP,
    "conf/monitor.conf": SAMPLE,
    "docker-compose/monitor.conf": COPY,
    "config/dev.yaml": DEV_YAML,
    "config/monitor.conf": "[rabbitmq]\nuser=svc\npassword=Ab3dEf9hIj\n",
}


def test_the_build_names_its_documentation_samples(make_repo):
    repo = make_repo(FILES)
    samples = documented_samples(FileLines(repo).lines)
    assert ("conf/monitor.conf", "share/doc/monitor") in samples
    assert all(not t.startswith("share/man") for _, t in samples)


@needs_bandit
def test_a_password_in_a_documented_sample_is_noise_the_apps_own_config_stays(make_repo):
    repo = make_repo(FILES)
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    why = "sample configuration"
    _noise(found, "conf/monitor.conf", 7, "secret-config-password", why)
    _noise(found, "conf/monitor.conf", 11, "secret-config-password", why)
    # the compose example's copy of the sample's lines
    _noise(found, "docker-compose/monitor.conf", 7, "secret-config-password", "a copy of")
    # a password the sample does not have, in the copy: stays
    _kept(found, "docker-compose/monitor.conf", 15, "secret-config-password")
    # the configuration the application loads (dvpwa's): stays, whatever its words
    _kept(found, "config/dev.yaml", 3, "secret-config-password")
    # the same name as the sample, but a line of its own: stays
    _kept(found, "config/monitor.conf", 3, "secret-config-password")
