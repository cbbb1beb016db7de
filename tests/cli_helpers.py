"""`superqe` run in-process, as the CLI tests call it."""

from __future__ import annotations

from superqode_ls.cli import main

# `python -c TOY_CLI ARGS...`: superqe with the toy roles, as a separate process.
TOY_CLI = (
    "import sys\n"
    "from superqode_ls.qe.roles import REGISTRY\n"
    "from tests.qe_testroles import TOY_ROLES\n"
    "REGISTRY.update(TOY_ROLES)\n"
    "from superqode_ls.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def superqe(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``superqe ARGV``."""
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse rejects bad arguments itself
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err
