"""A compose file's database password whose only client is the test run is
noise; the same database a web service uses stays shown
(qe/noise_compose.py). Real files, SuperQode's own secrets scan, the whole
noise filter."""

from __future__ import annotations

from superqode_ls.models import Severity
from tests.test_noise_operator import _filtered

# lemur's docker-compose.yml
TEST_ONLY = '''---
version: '2.0'
services:
  test:
    build: .
    links:
      - postgres
    command: make test
    environment:
      VIRTUAL_ENV: 'true'

  postgres:
    image: postgres
    restart: always
    environment:
      POSTGRES_USER: lemur
      POSTGRES_PASSWORD: lemurpass
    ports:
      - "5432:5432"
'''

# The same database, also used by the application's web service.
SERVED = TEST_ONLY.replace('''  postgres:''', '''  web:
    build: .
    depends_on:
      - postgres
    command: gunicorn app.wsgi

  postgres:''')


ENV_FILE = TEST_ONLY.replace('''  postgres:''', '''  web:
    image: example/app
    env_file: .env
    command: gunicorn app.wsgi

  postgres:''')


def _password(kept, file):
    return [f for f in kept if f.file == file and f.rule_id.startswith(("secret-", "hardcoded"))]


def test_a_compose_databases_password_for_the_test_run_only_is_noise(make_repo):
    repo = make_repo({"app/__init__.py": "", "docker-compose.yml": TEST_ONLY,
                      "deploy/docker-compose.yml": SERVED,
                      "ops/docker-compose.yml": ENV_FILE})
    kept = _filtered(repo)
    (own,) = _password(kept, "docker-compose.yml")
    assert own.range.start_line == 17
    assert own.noise and "only client is the test run (test)" in own.noise, own.noise
    assert own.severity is Severity.low
    (served,) = _password(kept, "deploy/docker-compose.yml")
    assert served.noise is None, served.noise
    # a web service that names the host only in its env file
    (unseen,) = _password(kept, "ops/docker-compose.yml")
    assert unseen.noise is None, unseen.noise
