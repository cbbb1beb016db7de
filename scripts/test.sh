#!/usr/bin/env bash
# The whole test suite. Every test runs with HOME, SUPERQODE_HOME and XDG_* in a temp dir.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/setup-editors.sh" || echo "scripts/test.sh: editor setup FAILED (see above); tests/editors will fail" >&2
cd "$root"
exec .venv/bin/python -m pytest -n "${SUPERQODE_TEST_WORKERS:-2}" -p no:cacheprovider "$@"
