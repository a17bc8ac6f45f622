#!/usr/bin/env bash
# Pool throughput: t06 instances against one llama-server, then against a
# pool of two (the same build and SmolLM2 model, each started as
# scripts/test.sh starts its servers: one thread, one request at a time per
# server, no prompt cache). Prints requests/s of each and their ratio,
# measured in this one run. HARNESS_BENCH_N sets the instances (default 40).
set -euo pipefail
cd "$(dirname "$0")/.."
n="${HARNESS_BENCH_N:-40}"
scripts/llama-server.sh ensure >/dev/null
eval "$(scripts/llama-server.sh paths | sed 's/^/export /')"
cargo build --release --locked --quiet
harness="$(pwd)/${CARGO_TARGET_DIR:-target}/release/harness"
[ -x "$harness" ] || harness="${CARGO_TARGET_DIR:-$(pwd)/target}/release/harness"

tmp="$(mktemp -d)"
cleanup() {
    local pidf
    for pidf in "$tmp"/*.pid; do
        [ -f "$pidf" ] && kill "$(cat "$pidf")" 2>/dev/null || true
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

# Starts a server in the background (its PID in $tmp/NAME.pid); prints its base URL once healthy.
start() {
    local name="$1" port
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    "$LLAMA_SERVER_BIN" -m "$SMOLLM2_MODEL" --alias smollm2 --host 127.0.0.1 --port "$port" \
        -np 4 -c 8192 -t 1 </dev/null >"$tmp/$name.log" 2>&1 &
    echo $! >"$tmp/$name.pid"
    for _ in $(seq 900); do
        if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
            echo "http://127.0.0.1:$port/v1"
            return 0
        fi
        sleep 0.2
    done
    echo "llama-server $name did not start; log: $tmp/$name.log" >&2
    exit 1
}
a="$(start a)"
b="$(start b)"
mkdir -p "$tmp/ws/specs"
cp specs/t06_mathematics.toml "$tmp/ws/specs/"
# The same model twice: on server a alone, and as a pool of a and b.
model() {
    printf '[models.%s]\nprovider = "openai"\nmodel = "SmolLM2-135M-Instruct.Q4_1"\nbase_url = %s\n' "$1" "$2"
    printf 'concurrency = 1\noptions = { max_tokens = 128, extra_body = { cache_prompt = false } }\n\n'
}
{ model one "\"$a\""; model two "[\"$a\", \"$b\"]"; } >"$tmp/ws/harness.toml"

rate() {
    local model="$1" t0 t1
    t0="$(date +%s.%N)"
    (cd "$tmp/ws" && "$harness" run specs/t06_mathematics.toml -m "$model" --runs "$n" \
        --no-cache --no-progress --results "results-$model" >/dev/null)
    t1="$(date +%s.%N)"
    python3 -c "print(f'{$n / ($t1 - $t0):.2f}')"
}
one="$(rate one)"
two="$(rate two)"
echo "pool: $n t06 instances, SmolLM2-135M on llama-server (1 thread, 1 request at a time per server)"
echo "pool: 1 endpoint  $one requests/s"
echo "pool: 2 endpoints $two requests/s = $(python3 -c "print(f'{$two / $one:.2f}')")x"
