"""A password in a sample configuration the project ships as documentation.

A configuration file that the project's build installs among its
documentation (a data-files target under ``share/doc``: glances installs
``conf/glances.conf`` to ``share/doc/glances`` and its docs call it the
template to copy) is a sample for users to copy and edit: the exporters'
``user=guest`` / ``password=guest`` there are placeholders, never a
deployment's credentials. A file of the same name elsewhere in the tree
whose flagged line is a line of that sample (a compose example's copy, an
old copy kept as test data) is the same placeholder.

The evidence is the build's own declaration, not the value: a
configuration the application loads itself (dvpwa's ``config/dev.yaml``,
its ``postgres``/``postgres`` password, read as the default config) is
not installed as documentation and stays shown, whatever its words. A
provider's token or a private key in a sample is not a password rule's
finding and stays shown too. Only the secrets scan's password rules are
judged here (``noise_rules.PASSWORD_SECRET_RULES``), in files that are not
code.
"""

from __future__ import annotations

import configparser
import fnmatch
import itertools
import re
import tomllib
from collections.abc import Callable

from ..models import Finding, Severity
from .context import mark_noise
from .noise_rules import PASSWORD_SECRET_RULES

Lines = Callable[[str], "list[str] | None"]

WHY = ("a placeholder in a sample configuration the project installs as documentation "
       "({sample}, to {target}) for users to copy and edit")
WHY_COPY = "a copy of the sample configuration {sample} the project installs as documentation"
_CODE_SUFFIX = (".py", ".pyi", ".js", ".ts", ".go", ".rb", ".java", ".php")
# setup.py's data_files: ("share/doc/glances", ["conf/glances.conf", ...])
_SETUP_DATA = re.compile(r"""\(\s*['"]([^'"]*share/doc[^'"]*)['"]\s*,\s*\[([^\]]*)\]""")
_QUOTED = re.compile(r"""['"]([^'"]+)['"]""")


def sample_noise(findings: list[Finding], lines_of: Lines) -> list[Finding]:
    """Marks the password findings in a documented sample configuration
    (and in copies of its lines) as noise, ``low``."""
    todo = [i for i, f in enumerate(findings) if _judged(f)]
    if not todo:
        return findings
    samples = documented_samples(lines_of)
    if not samples:
        return findings
    out = list(findings)
    sample_lines: dict[str, set[str]] = {}
    for i in todo:
        f = findings[i]
        why = None
        for pattern, target in samples:
            if fnmatch.fnmatchcase(f.file or "", pattern):
                why = WHY.format(sample=f.file, target=target)
                break
        if why is None:
            why = _copy_of(f, samples, lines_of, sample_lines)
        if why is not None:
            out[i] = mark_noise(f, why, Severity.low)
    return out


def _judged(f: Finding) -> bool:
    return (f.noise is None and bool(f.file) and f.range is not None
            and f.rule_id.lower() in PASSWORD_SECRET_RULES
            and not (f.file or "").lower().endswith(_CODE_SUFFIX))


def _copy_of(f: Finding, samples: list[tuple[str, str]], lines_of: Lines,
             cache: dict[str, set[str]]) -> str | None:
    """The flagged line is a line of a sample of the same file name."""
    name = (f.file or "").rsplit("/", 1)[-1]
    own = lines_of(f.file or "")
    if own is None or f.range is None or not 0 < f.range.start_line <= len(own):
        return None
    flagged = own[f.range.start_line - 1].strip()
    for pattern, _ in samples:
        if any(ch in pattern for ch in "*?[") or pattern.rsplit("/", 1)[-1] != name \
                or pattern == f.file:
            continue
        if pattern not in cache:
            cache[pattern] = {t.strip() for t in lines_of(pattern) or ()}
        if flagged and flagged in cache[pattern]:
            return WHY_COPY.format(sample=pattern)
    return None


def documented_samples(lines_of: Lines) -> list[tuple[str, str]]:
    """(file or glob, install target) of every file the build installs
    under ``share/doc``: pyproject's ``[tool.setuptools.data-files]``,
    setup.cfg's ``[options.data_files]``, setup.py's ``data_files``."""
    out: list[tuple[str, str]] = []
    text = _text(lines_of, "pyproject.toml")
    if text:
        try:
            data = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, ValueError):
            data = {}
        files = data.get("tool", {}).get("setuptools", {}).get("data-files", {})
        if isinstance(files, dict):
            for target, paths in files.items():
                if _doc_target(target) and isinstance(paths, list):
                    out += [(p, target) for p in paths if isinstance(p, str)]
    text = _text(lines_of, "setup.cfg")
    if text:
        cfg = configparser.ConfigParser(interpolation=None)
        try:
            cfg.read_string(text)
        except configparser.Error:
            cfg = configparser.ConfigParser()
        if cfg.has_section("options.data_files"):
            for target, value in cfg.items("options.data_files"):
                if _doc_target(target):
                    out += [(p.strip(), target) for p in re.split(r"[\s,]+", value) if p.strip()]
    text = _text(lines_of, "setup.py")
    if text:
        for m in _SETUP_DATA.finditer(text):
            out += [(p, m.group(1)) for p in _QUOTED.findall(m.group(2))]
    return [(p.removeprefix("./"), t) for p, t in out]


def _doc_target(target: str) -> bool:
    parts = target.strip("/").split("/")
    return any(a == "share" and b == "doc" for a, b in itertools.pairwise(parts))


def _text(lines_of: Lines, rel: str) -> str | None:
    lines = lines_of(rel)
    return None if lines is None else "\n".join(lines)
