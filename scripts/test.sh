#!/usr/bin/env bash
# The whole test suite. Every test runs with HOME, SUPERQODE_HOME and XDG_* in a temp dir.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" test
"$root/scripts/setup-editors.sh" || echo "scripts/test.sh: editor setup FAILED (see above); tests/editors will fail" >&2
if [ -f "$root/build/superqode-tests/llama-skip.txt" ]; then
  echo "scripts/test.sh: the llama.cpp tests will skip: $(cat "$root/build/superqode-tests/llama-skip.txt")" >&2
fi
cd "$root"
exec .venv/bin/python -m pytest -n "${SUPERQODE_TEST_WORKERS:-2}" -p no:cacheprovider "$@"
