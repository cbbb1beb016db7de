"""Dangerous patterns bandit does not look for (security_tester's
``superqode-patterns`` tool): ``yaml.unsafe_load``, ``jwt.decode`` without
signature verification, TLS hostname checking turned off."""

from __future__ import annotations

import ast

from ...models import Severity
from ._web_sinks import walk


def call_name(node: ast.Call) -> tuple[str | None, str | None]:
    """(module, function) of ``mod.func(...)`` or (None, func) of ``func(...)``."""
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.value.id, func.attr
    if isinstance(func, ast.Name):
        return None, func.id
    return None, None


def may_match(text: str) -> bool:
    """False when :func:`patterns` cannot find anything in this source, so it
    need not be parsed: each pattern names an identifier, and in ASCII source
    an identifier is spelled as the tree holds it (elsewhere the parser
    normalises it, NFKC, so the text proves nothing)."""
    if not text.isascii():
        return True
    return ("unsafe_load" in text or "check_hostname" in text
            or ("jwt" in text and "decode" in text))


def patterns(tree: ast.AST):
    """(node, rule id, title, message, severity) for what bandit misses."""
    for node in walk(tree):
        if isinstance(node, ast.Call):
            mod, name = call_name(node)
            if mod == "yaml" and name == "unsafe_load":
                yield (
                    node,
                    "yaml-unsafe-load",
                    "yaml.unsafe_load builds arbitrary Python objects",
                    "yaml.unsafe_load can run code from the document; use yaml.safe_load.",
                    Severity.high,
                )
            if mod == "jwt" and name == "decode" and _jwt_unverified(node):
                yield (
                    node,
                    "jwt-no-verify",
                    "JWT decoded without verifying its signature",
                    (
                        "jwt.decode with signature verification turned off accepts forged tokens; "
                        "verify the signature and pass the expected algorithms."
                    ),
                    Severity.high,
                )
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr == "check_hostname"
                    and isinstance(node.value, ast.Constant)
                    and node.value.value is False
                ):
                    yield (
                        node,
                        "tls-no-hostname-check",
                        "TLS hostname checking turned off",
                        (
                            "check_hostname = False lets any certificate for any host through "
                            "(man in the middle); keep it on."
                        ),
                        Severity.high,
                    )


def _jwt_unverified(node: ast.Call) -> bool:
    for kw in node.keywords:
        if kw.arg == "verify" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
            return True
        if kw.arg == "options" and isinstance(kw.value, ast.Dict):
            for k, v in zip(kw.value.keys, kw.value.values):
                if (
                    isinstance(k, ast.Constant)
                    and k.value == "verify_signature"
                    and isinstance(v, ast.Constant)
                    and v.value is False
                ):
                    return True
    return False
