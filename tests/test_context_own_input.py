"""The project's own fixed input and generated code are noise, outside input
stays: each rule both ways (real bandit on real files where the rule reads
bandit's output).

- an XML parser (B313-B320) reading a literal path or the module's own XML
  constant: info noise; the request's body or a parameter stays;
- a shell call bandit rates low ("seems safe": a fixed command line): noise;
  a command built from a parameter stays high;
- lint in a Django migration (makemigrations wrote it): noise; an SQL
  injection in the same migration stays;
- a password rule on a name that holds *about* a secret
  (``SUPER_SECRET_NAME``): noise; ``db_password`` beside it stays.
"""

from __future__ import annotations

import pytest

from superqode_ls.models import Finding, Range, Severity
from superqode_ls.qe.roles.base import tool_path
from tests.test_context_raise import found_by_security
from tests.test_findings_context import _at

needs_bandit = pytest.mark.skipif(tool_path("bandit") is None, reason="bandit not installed")


_found = found_by_security


@needs_bandit
def test_xml_parsed_from_a_constant_is_noise_and_from_the_request_stays(make_repo):
    repo = make_repo({
        "app/server.py": (
            "import xml.etree.ElementTree as ET\n\n"
            'USERS_XML = "<users><user><name>admin</name></user></users>"\n'
            "ROUTES = [a.findtext('route') for a in ET.parse('./db/attacks.xml').findall('a')]\n"  # 4
            "USERS = ET.fromstring(USERS_XML).findall('user')\n\n\n"  # 5
            "def upload(request):\n"
            "    return ET.parse(request.body)\n\n\n"  # 9
            "def load(data):\n"
            "    return ET.fromstring(data)\n"  # 13
        ),
    })
    found = _found(repo)
    for line in (4, 5):
        (own,) = _at(found, "app/server.py", line, "B314")
        assert own.noise and "own XML" in own.noise and own.severity is Severity.info
    for line in (9, 13):
        (outside,) = _at(found, "app/server.py", line, "B314")
        assert outside.noise is None and outside.severity is Severity.medium, line


@needs_bandit
def test_a_fixed_command_line_is_noise_and_a_built_one_stays(make_repo):
    repo = make_repo({
        "app/ops.py": (
            "import os\n\n\n"
            "def setup():\n"
            '    return os.popen("python3 setup.py").read()\n\n\n'  # 5
            "def run_cmd(cmd):\n"
            "    return os.popen(cmd).read()\n\n\n"  # 9
            "def move(name):\n"
            '    os.system("mv " + name + " /srv/uploads/")\n'  # 13
        ),
    })
    found = _found(repo)
    (fixed,) = _at(found, "app/ops.py", 5, "B605")
    assert fixed.noise
    for line in (9, 13):
        (built,) = _at(found, "app/ops.py", line, "B605")
        assert built.noise is None and built.severity is Severity.high, line


def _lint(file, line, rule="F401"):
    return Finding(role="lint_tester", tool="ruff", rule_id=rule, title="unused import",
                   message="`django.db.models` imported but unused", severity=Severity.low,
                   confidence=0.9, category="lint", file=file,
                   range=Range(start_line=line, start_col=1, end_line=line, end_col=30))


@needs_bandit
def test_lint_in_a_django_migration_is_noise_and_its_sql_injection_stays(make_repo):
    repo = make_repo({
        "shop/migrations/0007_delete_project.py": (
            "from django.db import migrations, models\n\n\n"  # 1
            "def forwards(apps, schema_editor):\n"
            # a row's text, not the ORM's own table name (that one is the code's: noise)
            "    table = apps.get_model('shop', 'Item').objects.first().name\n"
            "    schema_editor.execute('DELETE FROM %s WHERE id = 1' % table)\n\n\n"  # 6
            "class Migration(migrations.Migration):\n"
            "    operations = [migrations.RunPython(forwards)]\n"
        ),
        "shop/views.py": "from django.db import models\n",
    })
    found = _found(repo, [_lint("shop/migrations/0007_delete_project.py", 1),
                          _lint("shop/views.py", 1)])
    (gen,) = _at(found, "shop/migrations/0007_delete_project.py", 1, "F401")
    assert gen.noise and "makemigrations" in gen.noise
    (sqli,) = _at(found, "shop/migrations/0007_delete_project.py", 6, "sql-injection")
    assert sqli.noise is None and sqli.severity is Severity.high
    (hand,) = _at(found, "shop/views.py", 1, "F401")
    assert hand.noise is None


@needs_bandit
def test_a_name_about_a_secret_is_noise_and_a_password_beside_it_stays(make_repo):
    repo = make_repo({
        "app/config.py": (
            'SUPER_SECRET_NAME = "John Ripper"\n'
            'db_password = "Xk2-hunter2-prod"\n'
        ),
    })
    found = _found(repo)
    (about,) = _at(found, "app/config.py", 1, "B105")
    assert about.noise and "about a secret" in about.noise
    (real,) = _at(found, "app/config.py", 2, "B105")
    assert real.noise is None and real.severity is Severity.high


@needs_bandit
def test_a_credential_url_in_a_docstring_is_documentation_and_in_code_stays(make_repo):
    repo = make_repo({
        "lib/urls.py": (
            "class URL:\n"
            '    """\n'
            '    url = URL("https://jo%40email.com:a%20secret@example.org:1234/path")\n'
            '    """\n\n\n'
            'DATABASE_URL = "postgres://app:Xk2-hunter2-prod@db.internal:5432/app"\n'  # 7
        ),
    })
    found = found_by_security(repo)
    hits = [f for f in found if "hardcoded-db-password" in (f.rule_id, *f.related_rules)]
    assert [f.range.start_line for f in hits] == [7]
    (real,) = hits
    assert real.noise is None and real.severity is Severity.high
