"""SuperQode's caches and the files it reads of a project go through one
reader (``qe/roles/_common.read_bounded``): a link is never followed, a
FIFO or other special file neither blocks nor is read, and a file over the
bound is refused whole. A FIFO planted where a cache file goes must not
hang the run that reads it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from superqode_ls.qe import noise_cache, noise_shipped, verify_cache
from superqode_ls.qe.roles import _bandit_cache, _web_cache
from superqode_ls.qe.roles._common import read_bounded, read_regular


def _without_hanging(read: Callable[[], object], fifo: Path) -> object:
    """``read()``'s result; a reader stuck on the FIFO (no writer ever comes)
    is let go by opening it for writing, and reported."""
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(read()), daemon=True)
    reader.start()
    reader.join(30)
    if reader.is_alive():
        with open(fifo, "w"):
            pass  # unblock it so the thread ends
        reader.join(5)
        return "blocked on the FIFO"
    return got[0]


def test_a_link_is_not_followed(tmp_path):
    target = tmp_path / "target.json"
    target.write_bytes(b'{"entries": {}}')
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert read_bounded(target, 100) == b'{"entries": {}}'
    assert read_bounded(link, 100) is None
    assert read_bounded(link, None) is None
    assert read_regular(link) is None


def test_a_fifo_is_not_read_and_does_not_block(tmp_path):
    fifo = tmp_path / "cache.json"
    os.mkfifo(fifo)
    assert _without_hanging(lambda: read_bounded(fifo, 100), fifo) is None
    assert _without_hanging(lambda: read_regular(fifo), fifo) is None


def test_a_file_over_the_bound_is_refused_whole(tmp_path):
    path = tmp_path / "cache.json"
    path.write_bytes(b"x" * 10)
    assert read_bounded(path, 10) == b"x" * 10
    assert read_bounded(path, 9) is None
    assert read_bounded(path, None) == b"x" * 10
    assert read_bounded(tmp_path / "missing", 10) is None
    assert read_bounded(tmp_path, 10) is None  # a folder


def test_text_is_strict_utf8_for_sources_and_lenient_for_build_files(tmp_path):
    path = tmp_path / "setup.cfg"
    path.write_bytes(b"name = caf\xe9\r\n")
    assert read_regular(path) is None
    assert noise_shipped._read(path) == "name = caf\ufffd\r\n"
    path.write_bytes(b"x = 1\r\n")
    assert read_regular(path) == "x = 1\r\n"  # newlines as on disk
    path.write_bytes(b"x" * (noise_shipped._MAX_BYTES + 1))
    assert noise_shipped._read(path) is None


def _bandit_read(tmp_path: Path) -> tuple[Path, Callable[[], object]]:
    cache = _bandit_cache.BanditCache(tmp_path / "bandit", "ident", tmp_path)
    key = cache._key("a.py", "digest")
    path = cache.folder / key[:2] / f"{key}{_bandit_cache._SUFFIX}"
    return path, lambda: cache._read("a.py", "digest")


def _web_read(tmp_path: Path) -> tuple[Path, Callable[[], object]]:
    return _web_cache.cache_file(tmp_path), lambda: _web_cache.open_cache(tmp_path).local


@pytest.mark.parametrize("reader", [
    lambda p: (verify_cache.cache_file(p), lambda: verify_cache.read_entries(verify_cache.cache_file(p))),
    lambda p: (noise_cache.cache_file(p), lambda: noise_cache._read(noise_cache.cache_file(p))),
    _web_read,
    _bandit_read,
], ids=["verify", "noise", "web", "bandit"])
def test_a_fifo_where_a_cache_file_goes_is_an_empty_cache(tmp_path, reader):
    path, read = reader(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    assert _without_hanging(read, path) in ({}, None)


def test_a_fifo_among_the_files_bandit_would_scan_is_left_to_bandit(tmp_path):
    """The bandit cache digests the project's files before a run: a FIFO
    swapped in for one must neither block nor be answered from the cache."""
    (tmp_path / "a.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "b.py")
    cache = _bandit_cache.BanditCache(tmp_path / "bandit", "ident", tmp_path)
    got = _without_hanging(lambda: cache.split(["a.py", "b.py"]), tmp_path / "b.py")
    assert got == ([], ["a.py", "b.py"])


def test_a_fifo_planted_as_a_template_or_build_file_does_not_hang_the_filter(tmp_path):
    # The noise filter reads the sandbox's files from SuperQode's own
    # process: a template the jinja rule opens to see whether it renders
    # HTML, the build files the command-line rule reads, a module the
    # filter rule scans.
    from superqode_ls.qe.noise_jinja import _kind
    from superqode_ls.qe.noise_trusted import declares_script
    from superqode_ls.qe.roles._common import read_prefix

    template = tmp_path / "page"
    os.mkfifo(template)
    assert _without_hanging(lambda: _kind(template), template) is None
    build = tmp_path / "pyproject.toml"
    os.mkfifo(build)
    assert _without_hanging(lambda: declares_script(tmp_path), build) is False
    (tmp_path / "setup.cfg").write_text("[options.entry_points]\nconsole_scripts =\n  x = y\n")
    assert _without_hanging(lambda: declares_script(tmp_path), build) is True
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "setup.cfg")
    assert read_prefix(link, 10) is None
    assert read_prefix(tmp_path / "setup.cfg", 9) == b"[options."


def test_the_filter_follows_no_link_out_of_the_sandbox_and_waits_on_no_fifo(tmp_path):
    # A session swaps a flagged module for a link to the user's key, or
    # its folder for a link out of the sandbox, or the module for a FIFO:
    # the filter (SuperQode's own process) reads none of them.
    from superqode_ls.qe.noise import FileLines

    secret = tmp_path / "home" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    sandbox = tmp_path / "sandbox"
    (sandbox / "pkg").mkdir(parents=True)
    (sandbox / "pkg" / "ok.py").write_text("x = 1\n")
    (sandbox / "pkg" / "app.py").symlink_to(secret)
    (sandbox / "out").symlink_to(secret.parent)
    os.mkfifo(sandbox / "pkg" / "views.py")
    lines = FileLines(sandbox)
    assert lines("pkg/ok.py", 1) == "x = 1"
    assert lines("pkg/app.py", 1) is None
    assert lines("out/id_rsa", 1) is None
    fifo = sandbox / "pkg" / "views.py"
    assert _without_hanging(lambda: lines("pkg/views.py", 1), fifo) is None
