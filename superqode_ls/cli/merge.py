"""``superqe merge QR...``: combine the JSON reports of ``--shard K/N`` runs
(one per CI job) into one report: JSON, Markdown and SARIF, and the exit
code ``superqe run`` would have given (0 ok, 1 findings at/above
``--fail-on``, 2 bad input, 3 a shard failed or was not verified)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..engine import reports
from . import UsageError
from .run import SEVERITIES, exit_code


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge", help="combine shard reports into one",
        description="Combine the JSON Quality Reports of superqe run --shard 1/N .. N/N into "
                    "one report, equal to an unsharded run's findings.",
    )
    p.add_argument("reports", nargs="+", metavar="QR", help="JSON reports (qr-*.json), one per shard")
    p.add_argument("-o", "--output", metavar="FILE", help="write the merged JSON report here")
    p.add_argument("--markdown", metavar="FILE", help="also write the merged report as Markdown")
    p.add_argument("--sarif", metavar="FILE", help="also write the merged findings as SARIF 2.1.0")
    p.add_argument("--fail-on", choices=SEVERITIES, default="high",
                   help="exit 1 when a finding is at/above this severity (default: high)")
    p.set_defaults(func=cmd_merge)


def _target(flag: str, path: str | None) -> Path | None:
    if path is None:
        return None
    target = Path(path).expanduser()
    if target.is_dir():
        raise UsageError(f"{flag} {path}: is a directory")
    if not target.parent.is_dir():
        raise UsageError(f"{flag} {path}: folder {target.parent} does not exist")
    return target


def cmd_merge(args: argparse.Namespace) -> int:
    out = _target("--output", args.output)
    md = _target("--markdown", args.markdown)
    sarif = _target("--sarif", args.sarif)
    merged = reports.merge([Path(p) for p in args.reports], args.fail_on)
    reports.write(merged, json_path=out, markdown=md, sarif_path=sarif)
    counts = ", ".join(f"{n} {sev}" for sev, n in merged.summary.items() if n)
    print(f"merged {len(merged.merged_from)} shard report(s): verdict: {merged.verdict}; "
          f"{len(merged.findings)} finding(s){f' ({counts})' if counts else ''}")
    return exit_code(merged, args.fail_on, reports.DEFAULT_NEVER_FAIL)
