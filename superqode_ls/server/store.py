"""Findings the editor currently shows, per document, with their live ranges.

Ranges are kept 0-based in code points against the *current* text of the
document (shifted as the user types, see ``tracking``); they are converted to
the client's encoding only when diagnostics are produced.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..models import Finding, Patch


@dataclass(eq=False)
class Tracked:
    finding: Finding
    session_id: str
    uri: str
    folder: str  # workspace folder path the finding belongs to
    sl: int
    sc: int
    el: int
    ec: int
    patch: Patch | None = None
    stale: bool = False  # lines edited since the run: not shown, no fix offered
    run_stale: bool = False  # the run itself saw files change under it

    @property
    def id(self) -> str:
        return self.finding.id


@dataclass
class FindingStore:
    by_uri: dict[str, dict[str, Tracked]] = field(default_factory=dict)
    _result_ids: dict[str, str] = field(default_factory=dict)
    _counter: itertools.count = field(default_factory=lambda: itertools.count(1))

    def touch(self, uri: str) -> str:
        rid = str(next(self._counter))
        self._result_ids[uri] = rid
        return rid

    def result_id(self, uri: str) -> str:
        rid = self._result_ids.get(uri)
        return rid if rid is not None else self.touch(uri)

    def get(self, uri: str) -> list[Tracked]:
        return list(self.by_uri.get(uri, {}).values())

    def visible(self, uri: str) -> list[Tracked]:
        return [t for t in self.by_uri.get(uri, {}).values() if not t.stale]

    def add(self, t: Tracked) -> None:
        self.by_uri.setdefault(t.uri, {})[t.id] = t
        self.touch(t.uri)

    def find(self, finding_id: str) -> Tracked | None:
        for per_uri in self.by_uri.values():
            t = per_uri.get(finding_id)
            if t is not None:
                return t
        return None

    def replace_scope(
        self, folder: str, uris: Iterable[str] | None, new: list[Tracked],
        only_roles: set[str] | None = None,
    ) -> set[str]:
        """Replace what a finished run covered (a list of documents, or the whole
        folder when ``uris`` is None; only the findings of ``only_roles`` when
        given) by its final findings. Returns touched uris."""
        touched: set[str] = set()

        def covered(t: Tracked) -> bool:
            return t.folder == folder and (only_roles is None or t.finding.role in only_roles)

        if uris is None:
            for uri, per in list(self.by_uri.items()):
                if any(covered(t) for t in per.values()):
                    self.by_uri[uri] = {k: t for k, t in per.items() if not covered(t)}
                    touched.add(uri)
        else:
            for uri in uris:
                per = self.by_uri.get(uri, {})
                self.by_uri[uri] = {k: t for k, t in per.items()
                                    if only_roles is not None and not covered(t)}
                touched.add(uri)
        for t in new:
            self.by_uri.setdefault(t.uri, {})[t.id] = t
            touched.add(t.uri)
        for uri in touched:
            self.touch(uri)
        return touched

    def uris(self) -> list[str]:
        return list(self.by_uri)

    def count(self) -> int:
        return sum(len(v) for v in self.by_uri.values())
