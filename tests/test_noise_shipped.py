"""Code a library does not ship: its test server, maintainers' scripts and
setup.py are development code (noise, one level lower); the shipped package
and every finding of a project whose shipped set is not certain (an
application, two product packages) stay as they were."""

from __future__ import annotations

import os
from pathlib import Path

from superqode_ls.models import Severity
from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.noise_shipped import shipped
from tests.role_helpers import lint_finding

# eval of a caller's text: wrong whatever the input, so a library's shipped
# code keeps it (noise_threat) and only the shipped-code rule moves it.
_SQL = "def q(expr):\n    return eval(expr)\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _sql(file: str):
    return lint_finding("B307", file, 2, role="security_tester", tool="bandit",
                        category="security", severity=Severity.medium, id=file)


def _filtered(root: Path, findings):
    found = filter_findings(findings, read_line=FileLines(root), threshold=0.0).findings
    return {f.file: f for f in found}


def test_a_src_layout_library_ships_src_its_test_server_is_development_code(tmp_path):
    _write(tmp_path, {"pyproject.toml": "[project]\nname = 'urlkit'\n",
                      "src/urlkit/__init__.py": "", "src/urlkit/db.py": _SQL,
                      "dummyserver/__init__.py": "", "dummyserver/app.py": _SQL})
    found = _filtered(tmp_path, [_sql("src/urlkit/db.py"), _sql("dummyserver/app.py")])
    server, product = found["dummyserver/app.py"], found["src/urlkit/db.py"]
    assert "outside the shipped package (src/)" in server.noise
    assert server.severity is Severity.low and "path:development" in server.tags
    assert product.noise is None and product.severity is Severity.medium


def test_the_package_named_after_the_distribution_is_what_ships(tmp_path):
    _write(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='sentry-kit')\n",
                      "sentry_kit/__init__.py": "", "sentry_kit/db.py": _SQL,
                      "tests/__init__.py": "", "scripts/gen.py": _SQL})
    assert shipped(tmp_path) == ["sentry_kit"]
    found = _filtered(tmp_path, [_sql("sentry_kit/db.py"), _sql("scripts/gen.py")])
    assert found["scripts/gen.py"].noise and found["sentry_kit/db.py"].noise is None


def test_declared_packages_are_read_from_the_build_configuration(tmp_path):
    _write(tmp_path, {"pyproject.toml": ("[project]\nname = 'x'\n"
                                         "[tool.hatch.build.targets.wheel]\npackages = ['lib/core']\n"),
                      "lib/core/__init__.py": "", "lib/core/db.py": _SQL, "lab/try.py": _SQL})
    assert shipped(tmp_path) == ["lib/core"]
    found = _filtered(tmp_path, [_sql("lib/core/db.py"), _sql("lab/try.py")])
    assert found["lab/try.py"].noise and found["lib/core/db.py"].noise is None


def test_an_application_or_two_product_packages_keep_every_finding(tmp_path):
    site, app, bare = tmp_path / "site", tmp_path / "app", tmp_path / "bare"
    _write(site, {"pyproject.toml": "[project]\nname = 'mysite'\n", "mysite/__init__.py": "",
                  "blog/__init__.py": "", "blog/views.py": _SQL})
    _write(app, {"pyproject.toml": "[project]\nname = 'shop'\n", "manage.py": "",
                 "src/shop/__init__.py": "", "extra/__init__.py": "",
                 "extra/views.py": _SQL})
    _write(bare, {"extra/views.py": _SQL})
    assert shipped(site) is None and shipped(app) is None and shipped(bare) is None
    assert _filtered(site, [_sql("blog/views.py")])["blog/views.py"].noise is None
    assert _filtered(app, [_sql("extra/views.py")])["extra/views.py"].noise is None
    assert _filtered(bare, [_sql("extra/views.py")])["extra/views.py"].noise is None


def test_a_provider_token_outside_the_package_stays_shown(tmp_path):
    _write(tmp_path, {"pyproject.toml": "[project]\nname = 'k'\n", "src/k/__init__.py": "",
                      "scripts/deploy.py": "TOKEN = 'x'\n"})
    token = lint_finding("secret-github-token", "scripts/deploy.py", 1, role="security_tester",
                         tool="superqode-secrets", category="secrets", severity=Severity.high)
    (f,) = _filtered(tmp_path, [token]).values()
    assert f.noise is None and "path:development" in f.tags


def test_a_linked_build_configuration_is_not_read(tmp_path):
    outside = tmp_path / "outside.toml"
    outside.write_text("[project]\nname = 'k'\n")
    root = tmp_path / "proj"
    _write(root, {"src/k/__init__.py": ""})
    os.symlink(outside, root / "pyproject.toml")
    assert shipped(root) is None  # the link's distribution is never read
    (root / "pyproject.toml").unlink()
    (root / "pyproject.toml").write_text(outside.read_text())
    assert shipped(root) == ["src"]


def test_setup_pys_literal_packages_ship_a_search_is_not_certain(tmp_path):
    listed, found = tmp_path / "listed", tmp_path / "found"
    for root, call in ((listed, "packages=['silk', 'project']"), (found, "packages=find_packages()")):
        _write(root, {"setup.py": f"from setuptools import setup\nsetup(name='silk', {call})\n",
                      "silk/__init__.py": "", "project/app.py": _SQL})
    assert shipped(listed) == ["project", "silk"]
    assert shipped(found) is None


def test_a_test_servers_private_key_outside_the_package_is_noise(tmp_path):
    _write(tmp_path, {"pyproject.toml": "[project]\nname = 'k'\n", "src/k/__init__.py": "",
                      "dummyserver/certs/server.key": "-----BEGIN PRIVATE KEY-----\n"})
    key = lint_finding("secret-private-key", "dummyserver/certs/server.key", 1,
                       role="security_tester", tool="superqode-secrets", category="secrets",
                       severity=Severity.critical)
    (f,) = _filtered(tmp_path, [key]).values()
    assert "key material in development code" in f.noise and f.severity is Severity.high


def test_subpackages_listed_one_by_one_name_their_folder_once(tmp_path):
    _write(tmp_path, {"pyproject.toml": ("[project]\nname = 'cherrykit'\n[tool.setuptools]\n"
                                         "packages = ['cherrykit', 'cherrykit.lib', "
                                         "'cherrykit.test']\n"),
                      "cherrykit/__init__.py": "", "cherrykit/lib/__init__.py": "",
                      "testserver/__init__.py": "", "testserver/app.py": _SQL})
    assert shipped(tmp_path) == ["cherrykit"]
    found = _filtered(tmp_path, [_sql("testserver/app.py")])
    assert ("outside the shipped package (cherrykit/): development code"
            in found["testserver/app.py"].noise)


def test_a_librarys_sample_site_and_test_app_are_examples_and_tests():
    from superqode_ls.config import DEFAULT_PATH_CLASSES
    from superqode_ls.qe.noise_paths import path_class

    assert path_class("sample_taggit/settings.py", DEFAULT_PATH_CLASSES)[0] == "examples"
    assert path_class("example_project/posts/views.py", DEFAULT_PATH_CLASSES)[0] == "examples"
    assert path_class("guardian/testapp/testsettings.py", DEFAULT_PATH_CLASSES)[0] == "tests"
    # glances' tests-data/issues/CVE-.../glances.conf: a test's copy of the sample
    assert path_class("tests-data/issues/x/glances.conf", DEFAULT_PATH_CLASSES)[0] == "tests"
    assert path_class("guardian/models.py", DEFAULT_PATH_CLASSES) is None
    assert path_class("sampler/core.py", DEFAULT_PATH_CLASSES) is None


_SERVICES = """services:
  redis:
    image: "redis:7"
    ports: ["6379:6379"]
"""
_DEPLOYED = _SERVICES + """  web:
    build:
      context: .
"""


def test_a_compose_file_of_off_the_shelf_services_is_no_deployment(tmp_path):
    # redis-py: its docker-compose.yml runs the servers its tests talk to;
    # one that builds the project's image deploys it (an application)
    lib, app = tmp_path / "lib", tmp_path / "app"
    for root, compose in ((lib, _SERVICES), (app, _DEPLOYED)):
        _write(root, {"pyproject.toml": "[project]\nname = 'kv'\n", "kv/__init__.py": "",
                      "docker-compose.yml": compose})
    assert shipped(lib) == ["kv"]
    assert shipped(app) is None
