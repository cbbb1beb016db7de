"""Requirement files that cannot be installed together: the two named in
one line, the files the tests use kept (workspace/pyenv_conflict.py)."""

from superqode_ls.workspace.pyenv_conflict import conflicting, is_conflict, narrower, short
from superqode_ls.workspace.pyenv_leftout import LEFT_OUT, left_out, left_out_note

# uv's own words for such a build (shortened from a real one).
UV = ("  × No solution found when resolving dependencies:\n  ╰─▶ Because you require "
      "sphinx==4.0.3 and sphinx>=7, we can conclude that your requirements are "
      "unsatisfiable.\n" + "      hint: " + "x" * 2400 + "\n")


def test_the_two_files_that_pin_a_package_differently_are_named(tmp_path):
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "docs.txt").write_text("sphinx==4.0.3\nfuro\n")
    (tmp_path / "requirements" / "tests.txt").write_text("-r base.txt\npytest\nsphinx>=7  # doc\n")
    files = ("requirements/docs.txt", "requirements/tests.txt")
    assert is_conflict(UV)
    assert conflicting(tmp_path, files, UV) == (
        "requirements/docs.txt (sphinx==4.0.3) and requirements/tests.txt (sphinx>=7)")
    # The files the tests use: tox's, else those named for tests.
    assert narrower(files) == ("requirements/tests.txt",)
    assert narrower(files, ("requirements/docs.txt",)) == ("requirements/docs.txt",)
    # One line, not the resolver's 2,500 characters.
    said = short(UV)
    assert said.startswith("Because you require sphinx==4.0.3 and sphinx>=7") and len(said) <= 303


def test_files_that_agree_or_a_failure_of_another_kind_are_no_conflict(tmp_path):
    (tmp_path / "requirements.txt").write_text("sphinx==4.0.3\n")
    (tmp_path / "requirements-test.txt").write_text("sphinx == 4.0.3\npytest\n")
    files = ("requirements.txt", "requirements-test.txt")
    assert conflicting(tmp_path, files, UV) is None  # the same pin, spaced otherwise
    assert not is_conflict("error: Failed to fetch: https://pypi.org/simple/sphinx/")
    # Nothing narrower: every file is for tests, or none is.
    assert narrower(("requirements-test.txt", "requirements/dev.txt")) is None
    assert narrower(("requirements.txt",)) is None


def test_a_file_left_out_for_a_conflict_is_said_in_the_note(tmp_path):
    (tmp_path / LEFT_OUT).write_text(
        "requirements/docs.txt conflict requirements/docs.txt (sphinx==4.0.3) and "
        "requirements/tests.txt (sphinx>=7)\nmysqlclient\n")
    assert ("mysqlclient", "") in left_out(tmp_path)
    note = left_out_note(tmp_path)
    assert ("left out requirements/docs.txt: the requirement files conflict "
            "(requirements/docs.txt (sphinx==4.0.3) and requirements/tests.txt (sphinx>=7)); "
            "built from the files the tests use") in note, note
    assert "left out mysqlclient: could not be built here" in note


def test_a_file_left_out_for_another_failure_is_said_too(tmp_path):
    (tmp_path / LEFT_OUT).write_text(
        "requirements/dev.txt failed Git operation failed cause: failed to fetch into: /x\n")
    assert left_out_note(tmp_path) == (
        "left out requirements/dev.txt: installing every requirement file failed (Git operation "
        "failed cause: failed to fetch into: /x); built from the files the tests use")
    assert short("error: Git operation failed\n  cause: x") == "Git operation failed cause: x"


def test_a_plan_with_many_requirement_files_names_four(tmp_path):
    from superqode_ls.workspace.pyenv_plan import make_plan

    (tmp_path / "requirements" / "extras").mkdir(parents=True)
    for name in ("default", "test", "docs", *(f"extras/e{i}" for i in range(30))):
        (tmp_path / "requirements" / f"{name}.txt").write_text("six\n")
    plan = make_plan(tmp_path)
    assert plan is not None and len(plan.requirement_files) == 32  # (docs.txt: not for tests)
    # Before: every file named, a setup line of 2,500 characters on celery.
    assert plan.describe() == ("requirements/default.txt, requirements/extras/e0.txt, "
                               "requirements/extras/e1.txt, requirements/extras/e10.txt "
                               "and 28 more")
    (tmp_path / "requirements.txt").write_text("six\n")
    (tmp_path / "requirements").rename(tmp_path / "other")
    assert make_plan(tmp_path).describe() == "requirements.txt"  # a few: all named
