"""`superqe` run in-process, as the CLI tests call it."""

from __future__ import annotations

from superqode_ls.cli import main


def superqe(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``superqe ARGV``."""
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse rejects bad arguments itself
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err
