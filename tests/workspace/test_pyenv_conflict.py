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
