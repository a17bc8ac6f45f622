#!/usr/bin/env bash
# harness.sh — the harness side of the parity check: the same items scored
# by `[choices] method = "loglikelihood"` on llama-cpp-python's server, then
# compared with lm-eval's committed output (compare.py).
#
# Usage: bench/lm_eval_parity/harness.sh [ITEMS.jsonl] [LM_EVAL_OUTPUT.jsonl]
#   defaults: items_digits.jsonl and lm_eval_output.jsonl beside this script
# Environment:
#   HARNESS_LLAMA_PY_URL   a running server (else one is started and stopped)
#   HARNESS_BIN            the binary (default: target/release/harness built by cargo)
#   PARITY_LIMIT           score only the first N items and compare them alone
#                          (compare.py --subset): CI's live check
#   PARITY_HARNESS_OUTPUT  also write the harness's output here (e.g. the
#                          committed harness_output.jsonl)
#   PARITY_SERVERS         servers to start and ask as one pool (default 1;
#                          each answers one request at a time)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$(dirname "$HERE")")"
ITEMS="$(realpath "${1:-$HERE/items_digits.jsonl}")"
REFERENCE="$(realpath "${2:-$HERE/lm_eval_output.jsonl}")"
WORK="$(mktemp -d /tmp/harness_parity.XXXXXX)"
SERVERS="${PARITY_SERVERS:-1}"
[[ "$SERVERS" =~ ^[1-9][0-9]*$ ]] || { echo "PARITY_SERVERS must be a positive integer" >&2; exit 2; }
STARTED=0
cleanup() {
    local i
    for ((i = 1; i <= STARTED; i++)); do
        HARNESS_LLAMA_STATE="$WORK/llama-state-$i" "$ROOT/scripts/llama-server.sh" stop smollm2py >/dev/null 2>&1 || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

BIN="${HARNESS_BIN:-}"
if [ -z "$BIN" ]; then
    (cd "$ROOT" && cargo build --release --locked --quiet)
    BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/harness"
fi
# The base URL: one server, or a pool of identical ones as a TOML list.
URLS=()
if [ -n "${HARNESS_LLAMA_PY_URL:-}" ]; then
    URLS=("\"${HARNESS_LLAMA_PY_URL%/}/v1\"")
else
    for ((i = 1; i <= SERVERS; i++)); do
        url="$(HARNESS_LLAMA_STATE="$WORK/llama-state-$i" "$ROOT/scripts/llama-server.sh" start smollm2py)"
        STARTED=$i
        URLS+=("\"${url%/}/v1\"")
    done
fi
BASE_URL="${URLS[0]}"
[ "${#URLS[@]}" = 1 ] || BASE_URL="[$(IFS=,; echo "${URLS[*]}")]"

mkdir -p "$WORK/specs"
cp "$HERE/parity.toml" "$WORK/specs/parity.toml"
SUBSET=()
if [ -n "${PARITY_LIMIT:-}" ]; then
    [[ "$PARITY_LIMIT" =~ ^[1-9][0-9]*$ ]] || { echo "PARITY_LIMIT must be a positive integer" >&2; exit 2; }
    head -n "$PARITY_LIMIT" "$ITEMS" >"$WORK/specs/items.jsonl"
    SUBSET=(--subset)
else
    cp "$ITEMS" "$WORK/specs/items.jsonl"
fi
printf '[models.smollm2py]\nprovider = "openai"\nmodel = "smollm2"\nbase_url = %s\nconcurrency = 1\ntimeout_secs = 600\n' \
    "$BASE_URL" >"$WORK/harness.toml"
(cd "$WORK" && "$BIN" run specs/parity.toml -m smollm2py --no-cache --no-progress >"$WORK/run.log" 2>&1) ||
    { tail -n 20 "$WORK/run.log" >&2; exit 1; }
python3 "$HERE/harness_output.py" "$WORK"/results/runs/*/journal.jsonl "$WORK/harness_output.jsonl"
[ -z "${PARITY_HARNESS_OUTPUT:-}" ] || cp "$WORK/harness_output.jsonl" "$PARITY_HARNESS_OUTPUT"
python3 "$HERE/compare.py" "${SUBSET[@]}" "$REFERENCE" "$WORK/harness_output.jsonl"
