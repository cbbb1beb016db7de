"""What nothing from outside reaches is noise, said why; the same sink with
outside input stays worth acting on (qe/noise_operator.py). Each rule in
pairs, on real files, real bandit and SuperQode's own checks, through the
whole noise filter."""

from __future__ import annotations

from superqode_ls.models import Severity
from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_idioms import needs_bandit


def _filtered(repo):
    found = run_role(SecurityTester(), make_ctx(repo)).findings
    return filter_findings(found, read_line=FileLines(repo), threshold=0.7).findings


def _hits(findings, file, rules, line=None):
    return [f for f in findings if f.file == file and ({f.rule_id, *f.related_rules} & rules)
            and (line is None or f.range.start_line == line)]


_SQL = {"sql-injection", "B608"}

COMMAND = '''from django.core.management.base import BaseCommand
from django.db import connection


class Command(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("table")

    def handle(self, *args, **options):
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM %s WHERE owner_id IS NULL" % options["table"])
'''

# The same command, its table name fetched from a web service.
FETCHED = COMMAND.replace('''    def handle(self, *args, **options):
''', '''    def handle(self, *args, **options):
        import requests
        options = requests.get("https://example.org/purge").json()
''')

# The same command, its table name read from a row another user may have written.
FROM_ROWS = COMMAND.replace('''    def handle(self, *args, **options):
        with''', '''    def handle(self, *args, **options):
        from shop.models import Item
        table = Item.objects.first().name
        with''').replace('options["table"]', "table")

CLI = '''import argparse
import sqlite3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("table")
    args = parser.parse_args()
    db = sqlite3.connect("app.db")
    db.execute(f"SELECT * FROM {args.table}")


def count(db, table):
    return db.execute(f"SELECT count(*) FROM {table}")
'''


@needs_bandit
def test_sql_in_a_management_command_or_a_cli_is_noise_outside_input_stays(make_repo):
    repo = make_repo({
        "shop/management/commands/purge.py": COMMAND,
        "shop/management/commands/fetched.py": FETCHED,
        "shop/management/commands/rows.py": FROM_ROWS,
        "shop/views.py": COMMAND,  # the same code where a view may call it
        "tool/cli.py": CLI,
    })
    kept = _filtered(repo)
    (own,) = _hits(kept, "shop/management/commands/purge.py", _SQL)
    assert own.noise and "operator already controls" in own.noise
    assert "management command" in own.noise and own.severity is Severity.low
    for file in ("shop/management/commands/fetched.py", "shop/management/commands/rows.py",
                 "shop/views.py"):
        hits = _hits(kept, file, _SQL)
        assert hits and all(f.noise is None for f in hits), (file, [(f.rule_id, f.noise)
                                                                    for f in hits])
    (argv,) = _hits(kept, "tool/cli.py", _SQL, 10)
    assert argv.noise and "command line this function parses" in argv.noise
    # a helper's parameter is whoever calls it
    (helper,) = _hits(kept, "tool/cli.py", _SQL, 14)
    assert helper.noise is None


_SHELL = {"B605", "B602", "command-injection"}


@needs_bandit
def test_a_top_level_script_and_an_invoke_task_are_noise_a_celery_task_stays(make_repo):
    shell = 'import os\nimport sys\n\nos.system("tar czf backup.tgz " + sys.argv[1])\n'
    task = ('import os\nfrom {m} import {d}\n\n\n@{d}\n'
            'def backup(c, where):\n    os.system("tar czf " + where)\n')
    fetch = ("import sys\nimport urllib.request\n\n"
             "resp = urllib.request.urlopen(sys.argv[1])\nprint(resp.read())\n")
    repo = make_repo({"scripts/backup.py": shell, "app/backup.py": shell,
                      "scripts/fetch.py": fetch, "app/fetch.py": fetch,
                      "tasks.py": task.format(m="invoke", d="task"),
                      "app/tasks.py": task.format(m="celery", d="shared_task")})
    kept = _filtered(repo)
    (script,) = _hits(kept, "scripts/backup.py", _SHELL)
    assert script.noise and "operator already controls (a script)" in script.noise
    (opened,) = _hits(kept, "scripts/fetch.py", {"B310"})
    assert opened.noise and "operator already controls" in opened.noise
    assert [f.noise for f in _hits(kept, "app/fetch.py", {"B310"})] == [None]
    (invoke,) = _hits(kept, "tasks.py", _SHELL)
    assert invoke.noise and "invoke task" in invoke.noise
    for file in ("app/backup.py", "app/tasks.py"):  # a package's module; a queue's task
        hits = _hits(kept, file, _SHELL)
        assert hits and all(f.noise is None for f in hits), (file, hits)


@needs_bandit
def test_eval_in_a_click_command_is_noise_a_files_contents_stays(make_repo):
    repo = make_repo({"tool/__main__.py": (
        "import click\n\n\n"
        "@click.command()\n"
        "@click.argument('expr')\n"
        "def main(expr):\n"
        "    print(eval(expr))\n\n\n"
        "@click.command()\n"
        "@click.argument('path')\n"
        "def load(path):\n"
        "    print(eval(open(path).read()))\n"
    )})
    kept = _filtered(repo)
    (own,) = _hits(kept, "tool/__main__.py", {"B307"}, 7)
    assert own.noise and "command-line command's own options" in own.noise
    (contents,) = _hits(kept, "tool/__main__.py", {"B307"}, 13)
    assert contents.noise is None


MARKUP = '''from flask import request
from flask_babel import gettext as _, ngettext
from markupsafe import Markup, escape


def captcha_error():
    message = _("Please, <em>validate</em> the captcha to proceed.")
    return Markup(message)


def amount_error(n, name):
    return Markup(ngettext("%(num)d <b>item</b>", "%(num)d <b>items</b>", n,
                           name=escape(name)))


def exists_error(form):
    message = _('A project "%(project)s" already exists.', project=form.id.data)
    return Markup(message)


def errors_error(prefix, errors):
    return Markup(_("{prefix}:<br />{errors}").format(prefix=prefix, errors=errors))


def echo():
    return Markup(_("You said: %(text)s", text=request.args["q"]))
'''


@needs_bandit
def test_markup_over_translated_literals_is_noise_a_value_from_outside_stays(make_repo):
    repo = make_repo({"app/forms.py": MARKUP, "shop/admin.py": (
        "from django.utils.safestring import mark_safe\n"
        "from django.utils.translation import gettext_lazy as _\n\n\n"
        "def saved():\n"
        "    return mark_safe(_(\"<b>Saved.</b>\") + \" \" + str(3))\n\n\n"
        "def owner(item):\n"
        "    return mark_safe(_(\"Owner: %s\") % item.owner.name)\n")})
    kept = _filtered(repo)
    (own,) = _hits(kept, "shop/admin.py", {"B308", "B703"}, 6)
    assert own.noise and "project's own text" in own.noise
    # a database value (another user's name) keeps it shown
    assert [f.noise for f in _hits(kept, "shop/admin.py", {"B308", "B703"}, 10)] == [None]
    for line in (8, 12):
        (own,) = _hits(kept, "app/forms.py", {"B704"}, line)
        assert own.noise and "project's own text" in own.noise, (line, own.noise)
    for line in (18, 22, 26):  # form data, a parameter, request data
        (outside,) = _hits(kept, "app/forms.py", {"B704"}, line)
        assert outside.noise is None, (line, outside.noise)


RUN = '''from flask import Flask

app = Flask(__name__)


def main():
    app.run(host="0.0.0.0", debug=True)


if __name__ == "__main__":
    main()
'''
WSGI = "from app.run import app\n\napplication = app\n"
_DEBUG = {"B201", "debug-mode"}


@needs_bandit
def test_debug_at_the_development_entry_point_is_noise_where_another_is_deployed(make_repo):
    deployed = make_repo({"app/__init__.py": "", "app/run.py": RUN, "app/wsgi.py": WSGI,
                          "Procfile": "web: gunicorn app.wsgi:application\n"})
    kept = _filtered(deployed)
    hits = _hits(kept, "app/run.py", _DEBUG | {"B104"}, 7)
    assert hits and all(f.noise and "development entry point" in f.noise for f in hits), [
        (f.rule_id, f.related_rules, f.noise) for f in hits]
    assert all(f.severity is Severity.low for f in hits)


@needs_bandit
def test_debug_at_the_main_block_stays_where_it_is_how_the_app_runs(make_repo):
    # no deployment file: the __main__ block is how it runs (the demo apps)
    alone = make_repo({"app/__init__.py": "", "app/run.py": RUN})
    # a gunicorn service, but the container runs the module as a script
    script = make_repo({"app/__init__.py": "", "app/run.py": RUN, "app/wsgi.py": WSGI,
                        "Procfile": "web: gunicorn app.wsgi:application\n",
                        "app/Dockerfile": 'FROM python:3.12\nCMD ["python", "run.py"]\n'})
    # debug on at import time: whatever server imports the module runs it
    module_level = make_repo({"app/__init__.py": "", "app/wsgi.py": WSGI,
                              "app/run.py": RUN.replace("def main():\n    app.run",
                                                        "def main():\n    pass\n\n\napp.run"),
                              "Procfile": "web: gunicorn app.wsgi:application\n"})
    for repo in (alone, script, module_level):
        kept = _filtered(repo)
        hits = [f for f in kept if f.file == "app/run.py"
                and {f.rule_id, *f.related_rules} & _DEBUG]
        assert hits and any(f.noise is None for f in hits), (repo, [
            (f.rule_id, f.noise) for f in hits])


# OpenOversight's db_backup.py: a script at the top level, run by hand, that
# formats the app's own configured database URI into a shell command.
BACKUP = '''import os

from shop.config import config

db = config["default"].SQLALCHEMY_DATABASE_URI
os.system(f"/usr/bin/pg_dump {db} -f backup.sql")
'''
CONFIG = '''import os

config = {"default": type("C", (), {"SQLALCHEMY_DATABASE_URI": os.environ["DB"]})}
'''


@needs_bandit
def test_a_top_level_script_no_module_imports_is_the_operators(make_repo):
    found = _filtered(make_repo({"shop/__init__.py": "", "shop/config.py": CONFIG,
                                 "db_backup.py": BACKUP, "app.py": BACKUP}))
    hits = _hits(found, "db_backup.py", {"B605"}, 6)
    assert hits and all(f.noise and "run by hand" in f.noise for f in hits), [
        f.noise for f in hits]
    # app.py is what `flask run` imports: the server runs it
    kept = _hits(found, "app.py", {"B605"}, 6)
    assert kept and all(f.noise is None for f in kept), [f.noise for f in kept]


@needs_bandit
def test_a_top_level_script_a_module_imports_stays(make_repo):
    repo = make_repo({"shop/__init__.py": "", "shop/config.py": CONFIG, "db_backup.py": BACKUP,
                      "shop/views.py": "import db_backup\n"})
    hits = _hits(_filtered(repo), "db_backup.py", {"B605"}, 6)
    assert hits and all(f.noise is None for f in hits), [f.noise for f in hits]


@needs_bandit
def test_a_dockerfile_one_folder_down_under_docker_names_the_deployed_server(make_repo):
    # PowerDNS-Admin: docker/common/Dockerfile.app runs gunicorn, run.py's
    # __main__ block is the developer's server; the same Dockerfile running
    # run.py keeps it shown
    files = {"app/__init__.py": "", "app/run.py": RUN, "app/wsgi.py": WSGI,
             "app/docker/common/Dockerfile.app": 'CMD ["gunicorn", "app.wsgi:application"]\n'}
    hits = _hits(_filtered(make_repo(files)), "app/run.py", _DEBUG, 7)
    assert hits and all(f.noise and "development entry point" in f.noise for f in hits), [
        f.noise for f in hits]
    files["app/docker/common/Dockerfile.app"] += 'CMD ["python", "run.py"]\n'
    hits = _hits(_filtered(make_repo(files)), "app/run.py", _DEBUG, 7)
    assert hits and any(f.noise is None for f in hits), [f.noise for f in hits]
