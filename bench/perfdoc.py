"""docs/performance.md: the one place the benches' ``--write-doc`` writes."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "performance.md"


def replace_section(heading: str, text: str) -> None:
    """Put ``text`` (starting with ``heading``) where the section under
    ``heading`` is, up to the next ``## `` heading; appended when there is
    none yet. One blank line separates sections."""
    body = DOC.read_text(encoding="utf-8") if DOC.exists() else "# Performance\n"
    text = text.rstrip("\n") + "\n"
    start = body.find(heading)
    if start < 0:
        body = body.rstrip("\n") + "\n\n" + text
    else:
        end = body.find("\n## ", start + len(heading))
        body = body[:start] + text + ("\n" + body[end + 1:] if end >= 0 else "")
    DOC.write_text(body, encoding="utf-8")
