"""server/server.py: the server object's own rules (URIs of findings stay inside their folder)."""

from __future__ import annotations


def test_uri_for_keeps_findings_inside_their_folder(tmp_path):
    from superqode_ls.server.server import SuperQodeServer

    ls = SuperQodeServer()
    folder = str(tmp_path)
    assert ls.uri_for(folder, "pkg/a b.py").endswith("/pkg/a%20b.py")
    assert ls.uri_for(folder, "./pkg/../x.py").endswith(f"{tmp_path.name}/x.py")
    for outside in ("../evil.py", "/etc/passwd", "pkg/../../evil.py", ".."):
        assert ls.uri_for(folder, outside) is None
