"""The engine's front door: what the language server (``server/``) and the
CLI (``cli/``) call, and nothing else of ``qe/``, ``agent/`` or
``workspace/``. ``tests/test_layers.py`` enforces it.

One module per thing a front end does (docs/architecture.md lists each
function):

- ``runs``         a QE run: one request, one session, the streamed-finding filter
- ``roles``        the roles: names, which run the project's code, who can run here
- ``reports``      Quality Reports: display lines, SARIF, merge, verdict
- ``sessions``     sessions on disk: list, find, revert, clean, reap
- ``recovery``     the one recovery of an interrupted session: save, resume, recover
- ``exec_``        ``superqe exec``: one command in a sandbox
- ``suggestions``  the suggested fixes of stored reports: list, look up, apply; the baseline
- ``worktrees``    long-lived branch worktrees
- ``projects``     a project's root, its artifacts, the watcher on its files
- ``protection``   the barrier level this machine gives sessions
- ``trust``        which folders the user trusted (fail closed)
- ``guard``        the git guard's verdict on a command
- ``runtime``      process-wide knobs the front end sets at start (priority, CPUs, prompts)
- ``errors``       the engine errors a front end catches by type

The package imports nothing here: each module loads what it needs when it
is used, so the server answers ``initialize`` without the analyzers.
"""
