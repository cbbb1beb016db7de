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


# modoboa's .github/workflows/modoboa.yml: a job's service container; a
# deploy step's literal password beside it is no container's
WORKFLOW = '''name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    services:
      postgres:
        image: postgres:16
        env:
          POSTGRES_USER: postgres
          POSTGRES_PASSWORD: postgres
    steps:
      - run: python manage.py test
  deploy:
    runs-on: ubuntu-latest
    steps:
      - run: ./deploy.sh
        env:
          DB_PASSWORD: Kq7wZr2mXp9Lv4
'''


def test_a_ci_jobs_service_container_password_is_noise_a_steps_stays(make_repo):
    repo = make_repo({"app/__init__.py": "", ".github/workflows/ci.yml": WORKFLOW})
    kept = _filtered(repo)
    found = {f.range.start_line: f for f in _password(kept, ".github/workflows/ci.yml")}
    assert found[11].noise and "CI job's throwaway container (job test's services" in (
        found[11].noise), found[11].noise
    assert found[19].noise is None, found[19].noise


# OpenOversight's docker-compose.yml: the developer's compose (the checkout
# mounted into the app it builds), the deployment's compose file beside it
DEV = '''version: "3.2"
services:
 postgres:
   image: postgres:latest
   environment:
     POSTGRES_USER: openoversight
     POSTGRES_PASSWORD: terriblepassword
 web:
   build:
      context: .
      dockerfile: dockerfiles/web/Dockerfile-dev
   volumes:
     - ./OpenOversight/:/usr/src/app/OpenOversight/:z
   links:
     - postgres:postgres
'''
PROD = '''services:
 web:
   image: example/app:latest
   env_file: .env
'''


def test_a_local_development_compose_password_is_noise_the_deployments_stays(make_repo):
    repo = make_repo({"app/__init__.py": "", "docker-compose.yml": DEV,
                      "docker-compose.prod.yml": PROD,
                      # the same file with no deployment compose beside it
                      "alone/docker-compose.yml": DEV,
                      # nor is a file whose services mount no checkout
                      "ops/docker-compose.yml": DEV.replace(
                          "./OpenOversight/:/usr/src/app/OpenOversight/:z", "data:/data"),
                      "ops/docker-compose.prod.yml": PROD,
                      # the production file only overrides this one's services
                      "over/docker-compose.yml": DEV,
                      "over/docker-compose.prod.yml": "services:\n web:\n   restart: always\n"})
    kept = _filtered(repo)
    (dev,) = _password(kept, "docker-compose.yml")
    assert dev.noise and "local development compose file" in dev.noise, dev.noise
    assert "docker-compose.prod.yml" in dev.noise and dev.severity is Severity.low
    for file in ("alone/docker-compose.yml", "ops/docker-compose.yml", "over/docker-compose.yml"):
        (kept_one,) = _password(kept, file)
        assert kept_one.noise is None, (file, kept_one.noise)
