"""server/store.py: the findings the server holds, per document, with result ids."""

from __future__ import annotations

from superqode_ls.server.store import FindingStore
from tests.server.findings import tracked


def test_store_result_ids_change_with_content_and_scope_replacement():
    store = FindingStore()
    a = tracked(1)
    store.add(a)
    rid = store.result_id(a.uri)
    assert store.result_id(a.uri) == rid
    touched = store.replace_scope("/", None, [])
    assert a.uri in touched and store.visible(a.uri) == []
    assert store.result_id(a.uri) != rid
