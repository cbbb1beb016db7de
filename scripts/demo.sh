#!/usr/bin/env bash
# The main job: a quick QE session on the bundled example, in a sandbox.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
exec "$root/.venv/bin/superqe" run "$root/examples/shop" "$@"
