"""A demo Django site beside the product it demonstrates, run from the
repository's top (django-helpdesk's ``demodesk/config/settings.py``, which
the top-level ``manage.py`` selects; its README: "a demo Django project
... *NOT* production ready"): its ``DEBUG = True`` and literal
``SECRET_KEY`` are the demo's, not the settings of anything a user
deploys. ``noise_demo`` covers the demo with its own ``manage.py``; this
one the demo whose ``manage.py`` sits at the top.

All required, each proved by the tree: the flagged file sets Django's
settings; its top folder's name says demo, sample, example or sandbox
(``demodesk``, ``sample_site``); that folder's README or the settings
module itself says so in words (demo, sample, "not production ready",
Django's "unsuitable for production"); and the repository has another
top-level package (also under ``src/``) with ``__init__.py``: the product
the packaging builds. A web application whose only site is the folder
(no other package), a folder named otherwise, or one whose text says
nothing of a demo keeps its findings; so does a provider's token.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ..models import Finding, Severity
from .context import mark_noise
from .noise_paths import provider_token
from .roles._common import read_head

Lines = Callable[[str], "list[str] | None"]

_RULES = frozenset({"debug-mode", "B201", "S201", "secret-signing-key-default", "secret-generic",
                    "B105", "S105", "hardcoded-db-password", "insecure-cookie"})
_SETTINGS = re.compile(r"^(SECRET_KEY|INSTALLED_APPS|ROOT_URLCONF|ALLOWED_HOSTS)\s*=", re.MULTILINE)
_DEMO_NAME = re.compile(r"(?i)^(demo|sample|example|sandbox)|(demo|sample|example|sandbox)s?$")
_SAYS_DEMO = re.compile(r"(?i)\b(demo|sample)\b|not\s+\**production[\s-]ready|unsuitable for "
                        r"production|not\s+for\s+production")
WHY = ("a demo site's settings ({folder}/, beside the package {package} the project ships; "
       "its text says it is a demo): the demo's, not what a user deploys")


def _says_demo(root: Path, folder: str, text: str) -> bool:
    if _SAYS_DEMO.search(text):
        return True
    for readme in sorted((root / folder).glob("README*")):
        head = read_head(readme, 4096)
        if head and _SAYS_DEMO.search(head):
            return True
    return False


def _product(root: Path, folder: str) -> str | None:
    for base in (root, root / "src"):
        try:
            entries = sorted(base.iterdir())
        except OSError:
            continue
        for d in entries:
            if d.name != folder and d.is_dir() and not d.name.startswith((".", "test")) \
                    and (d / "__init__.py").is_file():
                return d.name
    return None


def demo_folder_noise(findings: list[Finding], lines_of: Lines,
                      root: Path | None) -> list[Finding]:
    if root is None:
        return findings
    seen: dict[str, str | None] = {}
    out = []
    for f in findings:
        if f.noise is None and f.file and f.file.endswith(".py") and "/" in f.file \
                and {f.rule_id, *f.related_rules} & _RULES and not provider_token(f):
            if f.file not in seen:
                seen[f.file] = _why(root, f.file, lines_of)
            if seen[f.file] is not None:
                f = mark_noise(f, seen[f.file], Severity.low)
        out.append(f)
    return out


def _why(root: Path, rel: str, lines_of: Lines) -> str | None:
    folder = rel.split("/", 1)[0]
    if not _DEMO_NAME.search(folder):
        return None
    lines = lines_of(rel)
    text = "\n".join(lines) if lines else ""
    if not _SETTINGS.search(text) or not _says_demo(root, folder, text):
        return None
    package = _product(root, folder)
    return WHY.format(folder=folder, package=package) if package else None
