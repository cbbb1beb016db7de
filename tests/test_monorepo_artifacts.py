"""In a monorepo each project's run of a role keeps its own artifacts: the
mutation log, the generated tests' log, kept tests and evidence of two
projects never overwrite each other; a single project keeps its names."""

from __future__ import annotations

import asyncio

from superqode_ls.qe.roles import testgen
from superqode_ls.qe.roles._mutation_cache import MutationReport
from superqode_ls.qe.roles._mutation_report import write_log
from superqode_ls.qe.roles._unit_projects import sub_context
from superqode_ls.qe.roles.testgen import Generated, TestGenerator
from tests.role_helpers import make_ctx


def _subs(repo):
    ctx = make_ctx(repo)
    return ctx, [asyncio.run(sub_context(ctx, sub, None, python=False)) for sub in ("api", "worker")]


def test_each_projects_mutation_and_testgen_logs_are_its_own(make_repo):
    repo = make_repo({"api/core.py": "x = 1\n", "worker/core.py": "x = 2\n"})
    root, subs = _subs(repo)
    logs = root.project / ".superqode" / "qe-artifacts" / "logs"
    for ctx in subs:
        write_log(ctx, [], MutationReport(files=1 if ctx.folder == "api" else 2))
        TestGenerator()._write_log(ctx, [], [], f"{ctx.folder} done")
    names = sorted(p.name.split("-", 4)[-1] for p in logs.glob("*.log"))
    # Before: one "mutation.log" and one "test-generator.log", the last project's.
    assert names == ["mutation-api.log", "mutation-worker.log",
                     "test-generator-api.log", "test-generator-worker.log"], names
    assert "worker done" in next(logs.glob("*test-generator-worker.log")).read_text()
    assert "api done" in next(logs.glob("*test-generator-api.log")).read_text()
    # A single project keeps the names it always had.
    write_log(root, [], MutationReport())
    assert len(list(logs.glob("*-mutation.log"))) == 1


def test_each_projects_generated_tests_and_evidence_are_its_own(make_repo):
    repo = make_repo({"api/app/utils.py": "x = 1\n", "worker/app/utils.py": "x = 2\n"})
    root, (api, worker) = _subs(repo)
    assert testgen._in_project(root, "test_app_utils_f.py") == "test_app_utils_f.py"
    assert testgen._in_project(api, "test_app_utils_f.py") == "test_api_app_utils_f.py"
    assert testgen._in_project(worker, "generated-crash-app.utils-f.py") == "generated-crash-worker_app.utils-f.py"
    role = TestGenerator()
    for ctx in (api, worker):
        g = Generated("app/utils.py", "app.utils", "f", 1, f"# {ctx.folder}\n", "test_app_utils_f.py",
                      outcome="passed")
        role._collect(ctx, ctx.sandbox, ctx.sandbox, [g], [])
    kept = root.project / ".superqode" / "qe-artifacts" / "generated-tests" / root.session_id
    texts = {p.name: p.read_text() for p in kept.glob("*.py")}
    assert sorted(texts) == ["test_api_app_utils_f.py", "test_worker_app_utils_f.py"], sorted(texts)
    assert "# worker" in texts["test_worker_app_utils_f.py"] and "# api" in texts["test_api_app_utils_f.py"]


def test_a_nested_projects_logs_carry_one_spelling_of_its_folder(make_repo):
    repo = make_repo({"packages/api/core.py": "x = 1\n"})
    ctx = make_ctx(repo)
    (sub,) = [asyncio.run(sub_context(ctx, "packages/api", None, python=False))]
    logs = ctx.project / ".superqode" / "qe-artifacts" / "logs"
    write_log(sub, [], MutationReport(files=1))
    TestGenerator()._write_log(sub, [], [], "done")
    assert testgen._in_project(sub, "test_x.py") == "test_packages_api_x.py"
    # Before: "mutation-packages-api" beside "test-generator-packages_api".
    names = sorted(p.name.split("-", 4)[-1] for p in logs.glob("*.log"))
    assert names == ["mutation-packages_api.log", "test-generator-packages_api.log"], names
