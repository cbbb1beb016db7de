"""Safe one-line fixes for bandit's and the patterns' findings:
``yaml.load`` -> ``yaml.safe_load``, a weak hash marked
``usedforsecurity=False``."""

from __future__ import annotations

import ast

from ...models import Finding, Patch
from ...workspace.pyast import parse as parse_python
from ._common import SourceCache, byte_col_to_char
from ._patches import make_patch
from ._patterns import call_name

_WEAK_HASHES = {"md5", "sha1", "md4", "md2", "sha"}


def fixes(src: SourceCache, findings: list[Finding]) -> list[Patch]:
    patches: list[Patch] = []
    # One-line calls of each file by line, found once per file: walking
    # the whole tree again for each of thousands of findings was most of
    # the role's own time on a large repository.
    trees: dict[str, dict[int, list[ast.Call]] | None] = {}
    # usedforsecurity=False on a hash of a password would hide the flaw:
    # the fix there is a password hashing scheme, which no patch makes.
    passwords = {(f.file, f.range.start_line) for f in findings
                 if f.rule_id == "weak-password-hash" and f.range}
    for f in findings:
        if f.rule_id not in ("B506", "B324", "yaml-unsafe-load") or not f.file or not f.range:
            continue
        if f.rule_id == "B324" and (f.file, f.range.start_line) in passwords:
            continue
        text = src.text(f.file)
        if text is None:
            continue
        if f.file not in trees:
            try:
                trees[f.file] = _calls_by_line(parse_python(text))
            except (SyntaxError, ValueError):
                trees[f.file] = None
        tree = trees[f.file]
        if tree is None:
            continue
        fixed = _fix_call(text, tree, f)
        if fixed is None:
            continue
        new_text, description = fixed
        patch = make_patch(f, f.file, text, new_text, description)
        if patch is not None:
            patches.append(patch)
    return patches


def _calls_by_line(tree: ast.Module) -> dict[int, list[ast.Call]]:
    # only one-line calls: rewriting them keeps the layout
    out: dict[int, list[ast.Call]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.end_lineno == node.lineno:
            out.setdefault(node.lineno, []).append(node)
    return out


def _fix_call(text: str, calls: dict[int, list[ast.Call]], finding: Finding) -> tuple[str, str] | None:
    """The file text with the flagged call rewritten, and a description."""
    assert finding.range is not None
    lines = text.split("\n")
    line_no = finding.range.start_line
    for node in calls.get(line_no, []):
        line = lines[line_no - 1]
        start = byte_col_to_char(line, node.col_offset)
        if start + 1 != finding.range.start_col:
            continue
        end = byte_col_to_char(line, node.end_col_offset or 0)
        mod, name = call_name(node)
        segment = line[start:end]
        replacement: str | None = None
        description = ""
        if (
            finding.rule_id in ("B506", "yaml-unsafe-load")
            and mod
            and name in ("load", "unsafe_load")
        ):
            stream = _yaml_stream(line, node)
            if stream is not None:
                replacement = f"{mod}.safe_load({stream})"
                description = f"Use {mod}.safe_load, which only builds plain data"
        elif finding.rule_id == "B324":
            replacement = _weak_hash_fix(line, node, mod, name)
            description = (
                "Mark the hash as not used for security (usedforsecurity=False); "
                "if it protects anything, switch to hashlib.sha256 instead"
            )
        if replacement is None or replacement == segment:
            continue  # e.g. the outer call of ``hashlib.md5(x).hexdigest()``
        new_line = line[:start] + replacement + line[end:]
        new_text = "\n".join(lines[: line_no - 1] + [new_line] + lines[line_no:])
        try:
            # One call expression replaced by another: the file stays valid
            # when the replacement parses as an expression (a re-parse of the
            # whole file per fix cost seconds on a large tree).
            parse_python(replacement, mode="eval")
        except SyntaxError:
            continue
        return new_text, description
    return None


def _seg(line: str, node: ast.AST) -> str:
    start = byte_col_to_char(line, node.col_offset)  # type: ignore[attr-defined]
    end = byte_col_to_char(line, node.end_col_offset)  # type: ignore[attr-defined]
    return line[start:end]


def _yaml_stream(line: str, node: ast.Call) -> str | None:
    """The stream argument of yaml.load(stream[, Loader=...]) or None."""
    if len(node.args) > 2 or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    stream = node.args[0] if node.args else None
    for kw in node.keywords:
        if kw.arg == "stream" and stream is None:
            stream = kw.value
        elif kw.arg != "Loader":
            return None
    if stream is None:
        return None
    return _seg(line, stream)


def _weak_hash_fix(line: str, node: ast.Call, mod: str | None, name: str | None) -> str | None:
    if any(kw.arg == "usedforsecurity" or kw.arg is None for kw in node.keywords):
        return None
    if any(isinstance(a, ast.Starred) for a in node.args):
        return None
    is_new = name == "new" and node.args and isinstance(node.args[0], ast.Constant)
    if not (name in _WEAK_HASHES or is_new):
        return None
    func = _seg(line, node.func)
    parts = [_seg(line, a) for a in node.args]
    parts += [f"{kw.arg}={_seg(line, kw.value)}" for kw in node.keywords]
    parts.append("usedforsecurity=False")
    return f"{func}({', '.join(parts)})"
