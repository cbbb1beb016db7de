"""Names for branch worktrees: branch slugs from a task text, folder names
from branch names.

Both are deterministic: the same text always gives the same name, so a
script (or a retry) lands on the same branch.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from slugify import slugify

# Words that carry no meaning in a branch name ("fix the bug in a.py").
STOPWORDS = ("a", "an", "the", "in", "on", "of", "to", "for", "and", "with", "into", "from")
SLUG_MAX = 40
FOLDER_MAX = 64


def task_slug(text: str, *, max_length: int = SLUG_MAX) -> str:
    """``"Refactor auth logic in app/models.py"`` -> ``refactor-auth-logic-app-models-py``.

    Unicode is transliterated to ASCII so the branch is easy to type and push
    anywhere; text with no usable characters falls back to ``task-<hash6>``.
    """
    slug = slugify(text, max_length=max_length, word_boundary=True, stopwords=STOPWORDS)
    if not slug:
        slug = slugify(text, max_length=max_length, word_boundary=True)
    if not slug:
        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:6]
        slug = f"task-{digest}"
    return slug


def clean_llm_name(answer: str, *, max_length: int = SLUG_MAX) -> str | None:
    """A model's answer reduced to a branch slug, or None when nothing usable is left.

    Models like to answer ``Branch: `feat/x` `` or wrap it in quotes; only the
    first line counts, and a ``prefix/`` (feat/, fix/) is kept.
    """
    line = (answer or "").strip().splitlines()[0] if (answer or "").strip() else ""
    line = re.sub(r"^(branch( name)?\s*[:=-]\s*)", "", line.strip(), flags=re.IGNORECASE)
    line = line.strip("`'\" .")
    parts = [slugify(p, max_length=max_length, word_boundary=True) for p in line.split("/")]
    parts = [p for p in parts if p][:2]
    if not parts:
        return None
    name = "/".join(parts)
    return name[:max_length].strip("-/") or None


def folder_name(branch: str, *, limit: int = FOLDER_MAX) -> str:
    """Folder for a branch: ``feature/login`` -> ``feature-login``.

    Letters of any script stay (folders with unicode names work everywhere we
    run); everything else that is awkward in a path becomes ``-``. A name cut
    to ``limit`` gets a hash suffix so two long names never share a folder.
    """
    name = unicodedata.normalize("NFC", branch).replace("/", "-")
    cleaned = re.sub(r"[^\w.-]+", "-", name, flags=re.UNICODE)
    cleaned = re.sub(r"-{2,}", "-", cleaned).strip("-.")
    if not cleaned:
        cleaned = "worktree"
    if len(cleaned) > limit:
        digest = hashlib.sha256(branch.encode("utf-8", "surrogateescape")).hexdigest()[:6]
        cleaned = f"{cleaned[: limit - 7].rstrip('-.')}-{digest}"
    return cleaned
