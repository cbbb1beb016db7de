"""Formatted SQL in a schema migration (an alembic revision, a Django
migration) is noise, said why; the same function in the application's own
module stays an injection finding. Real bandit and SuperQode's web checks
on real files."""

from __future__ import annotations

from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_idioms import _at, needs_bandit

PURGE = '''import sqlalchemy as sa
from sqlalchemy.orm import Session


def purge(session: Session, table: str, column: str):
    session.execute(sa.text(f"DELETE FROM {table} WHERE {column} IS NULL"))
'''

ALEMBIC = '''"""drop orphans

Revision ID: 0a1b2c
"""
from alembic import op
''' + PURGE.replace("import sqlalchemy", "\nimport sqlalchemy") + '''

revision = "0a1b2c"
down_revision = "ffee00"


def upgrade():
    purge(Session(bind=op.get_bind()), "recipes_to_tags", "tag_id")


def downgrade():
    pass
'''

DJANGO = '''from django.db import connection, migrations


def purge(apps, schema_editor, table="app_item"):
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE owner_id IS NULL")


class Migration(migrations.Migration):
    dependencies = [("app", "0001_initial")]
    operations = [migrations.RunPython(purge)]
'''


def _sql(findings, file):
    return [f for f in findings if f.file == file
            and ({f.rule_id, *f.related_rules} & {"sql-injection", "B608"})]


@needs_bandit
def test_sql_formatted_in_a_migration_is_noise_the_applications_stays(make_repo):
    repo = make_repo({"alembic/versions/0a1b2c_drop_orphans.py": ALEMBIC,
                      "app/migrations/0002_purge.py": DJANGO,
                      "app/db.py": PURGE})
    found = run_role(SecurityTester(), make_ctx(repo)).findings
    kept = filter_findings(found, read_line=FileLines(repo), threshold=0.7).findings
    for file in ("alembic/versions/0a1b2c_drop_orphans.py", "app/migrations/0002_purge.py"):
        hits = _sql(kept, file)
        assert hits, (file, [(f.file, f.rule_id) for f in kept])
        assert all(f.noise and "schema migration" in f.noise for f in hits), hits
    app = _sql(kept, "app/db.py")
    assert app and all(f.noise is None for f in app), [(f.rule_id, f.noise) for f in app]
    assert _at(kept, "app/db.py", 6, app[0].rule_id)


ROWS = '''from django.db import connection, migrations


def rename(apps, schema_editor):
    table = apps.get_model("shop", "Item").objects.first().name
    schema_editor.execute("DELETE FROM %s WHERE id = 1" % table)
    with connection.cursor() as cursor:
        cursor.execute("SELECT label FROM shop_kind")
        kind = cursor.fetchone()[0]
        cursor.execute(f"UPDATE shop_item SET kind = '{kind}'")


class Migration(migrations.Migration):
    operations = [migrations.RunPython(rename)]
'''


@needs_bandit
def test_a_rows_value_formatted_into_a_migrations_sql_stays(make_repo):
    repo = make_repo({"shop/migrations/0003_rename.py": ROWS})
    found = run_role(SecurityTester(), make_ctx(repo)).findings
    kept = filter_findings(found, read_line=FileLines(repo), threshold=0.7).findings
    for line in (6, 10):
        hits = [f for f in _sql(kept, "shop/migrations/0003_rename.py")
                if f.range.start_line == line]
        assert hits and all(f.noise is None for f in hits), (line, [(f.range.start_line, f.noise)
                                                                     for f in kept])


KEYS = '''import sqlalchemy as sa
from alembic import op
from sqlalchemy.orm import Session

revision = "feecc8"
down_revision = "dded31"


def upgrade():
    session = Session(bind=op.get_bind())
    group_id = session.execute(sa.text("SELECT id FROM groups")).scalar()
    data = {"id": "x1", "group_id": group_id}
    data["name"] = session.execute(sa.text("SELECT name FROM groups")).scalar()
    columns = ", ".join(data.keys())
    placeholders = ", ".join(f":{key}" for key in data.keys())
    session.execute(sa.text(f"INSERT INTO households ({columns}) VALUES ({placeholders})"), data)
    name = session.execute(sa.text("SELECT name FROM groups")).scalar()
    session.execute(sa.text(f"UPDATE households SET slug = '{name}'"))


def downgrade():
    pass
'''


@needs_bandit
def test_a_dicts_keys_are_its_own_text_its_values_bound(make_repo):
    # mealie's add_households: the columns are the keys of a dict the
    # migration writes; the rows' values go in as bound parameters.
    repo = make_repo({"alembic/versions/feecc8_add_households.py": KEYS})
    found = run_role(SecurityTester(), make_ctx(repo)).findings
    kept = filter_findings(found, read_line=FileLines(repo), threshold=0.7).findings
    by_line = {f.range.start_line: f for f in _sql(kept, "alembic/versions/feecc8_add_households.py")}
    assert by_line[16].noise and "schema migration" in by_line[16].noise, by_line
    assert by_line[18].noise is None, by_line  # a row's text in the SQL: second-order


# lnbits' migrations.py: numbered steps the app's migrator runs in order,
# formatting the database adapter's own dialect names into their DDL.
STEPS = '''async def m001_initial(db):
    await db.execute(f"CREATE TABLE accounts (id TEXT, created {db.timestamp_now})")


async def m002_add_amount(db, table="apipayments"):
    await db.execute(f"ALTER TABLE {table} ADD COLUMN amount {db.big_int}")


async def m003_copy_names(db):
    row = await db.fetchone("SELECT name FROM accounts")
    await db.execute(f"UPDATE wallets SET name = '{row.name}'")
'''


@needs_bandit
def test_numbered_migration_steps_are_a_migration_their_rows_stay(make_repo):
    repo = make_repo({"app/core/migrations.py": STEPS, "app/core/steps.py": STEPS})
    found = run_role(SecurityTester(), make_ctx(repo)).findings
    kept = filter_findings(found, read_line=FileLines(repo), threshold=0.7).findings
    by_line = {f.range.start_line: f for f in _sql(kept, "app/core/migrations.py")}
    for line in (2, 6):
        assert by_line[line].noise and "schema migration" in by_line[line].noise, by_line
    assert by_line[11].noise is None, by_line  # a row's text in the SQL: second-order
    # the same steps in a module not named for migrations stay shown
    other = _sql(kept, "app/core/steps.py")
    assert other and all(f.noise is None for f in other), [(f.range.start_line, f.noise)
                                                           for f in other]
