#!/usr/bin/env bash
# The main job: a quick QE session on the bundled example, in a sandbox.
# Installs only what the session needs (the test tools come with scripts/test.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
set +e
"$root/.venv/bin/superqe" run "$root/examples/shop" "$@"
rc=$?
set -e
case $rc in
  0) echo "demo: exit 0: no finding at or above the fail-on severity." >&2 ;;
  1) echo "demo: exit 1, as expected: examples/shop has planted problems, and findings at or above the fail-on severity (high) make the run exit 1 (docs/cli.md: exit codes)." >&2 ;;
  2) echo "demo: exit 2: a usage or configuration error (the line above says which)." >&2 ;;
  *) echo "demo: exit $rc: the session failed (the line above says why); artifacts are kept in examples/shop/.superqode/qe-artifacts." >&2 ;;
esac
exit $rc
