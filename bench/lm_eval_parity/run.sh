#!/usr/bin/env bash
# run.sh — the reference side of the multiple-choice parity check (issue 39):
# lm-eval itself scores a local multiple-choice task by log-likelihood on
# llama-cpp-python's server, and its per-choice numbers are written compactly
# for compare.py. See docs/choices-parity.md.
#
# Usage:
#   bench/lm_eval_parity/run.sh [ITEMS.jsonl]
#     ITEMS.jsonl: lines {"id", "question", "choices", "answer"} (default: items.jsonl here)
#
# Writes into $LM_EVAL_PARITY_OUT (default: this folder):
#   lm_eval_output.jsonl  per item: id, loglikelihoods, is_greedy, acc, acc_norm
#   summary.json          lm-eval's aggregate acc/acc_norm, versions, timing, checks
#   request_example.json  one request lm-eval sent and the server's answer
#
# Environment:
#   HARNESS_LLAMA_PY_URL    use this llama-cpp-python server (http://HOST:PORT) instead of starting one
#   LM_EVAL_PARITY_SERVERS  how many identical servers to start and spread requests over (default: 2);
#                           each answers one request at a time, so lm-eval sends this many at once
#   LM_EVAL_PARITY_OUT      where the three files go (default: this folder)
#   LM_EVAL_PARITY_WORK     scratch folder kept after the run (default: a temporary one, removed)
#   LM_EVAL_PARITY_PREFIX   text the shim puts before every prompt (default: none; see the docs)
#   LM_EVAL_PARITY_FRESH    1: the shim flushes the server's prompt cache before every
#                           completion (shim.py --fresh; see the docs, "Order")
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$(dirname "$HERE")")"
ITEMS="$(realpath "${1:-$HERE/items.jsonl}")"
OUT="${LM_EVAL_PARITY_OUT:-$HERE}"
PREFIX="${LM_EVAL_PARITY_PREFIX:-}"
FRESH=()
[ "${LM_EVAL_PARITY_FRESH:-}" != 1 ] || FRESH=(--fresh)
TASK=harness_choices_parity

log() { printf '[lm_eval_parity] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ -s "$ITEMS" ] || die "no items at $ITEMS"
mkdir -p "$OUT"
if [ -n "${LM_EVAL_PARITY_WORK:-}" ]; then
    WORK="$LM_EVAL_PARITY_WORK"
    # Emptied only when an earlier run made it (its marker is there).
    if [ -e "$WORK" ] && [ -n "$(ls -A "$WORK")" ]; then
        [ -e "$WORK/.lm_eval_parity" ] || die "$WORK is not empty and not an earlier run's scratch folder"
        rm -rf "$WORK"
    fi
    mkdir -p "$WORK"
    touch "$WORK/.lm_eval_parity"
    KEEP_WORK=1
else
    WORK="$(mktemp -d /tmp/lm_eval_parity.XXXXXX)"
    KEEP_WORK=0
fi
SERVERS="${LM_EVAL_PARITY_SERVERS:-2}"
[[ "$SERVERS" =~ ^[1-9][0-9]*$ ]] || die "LM_EVAL_PARITY_SERVERS must be a positive integer"

SHIM_PID=""
STARTED=0
# Each server gets a state folder of its own: llama-server.sh knows one
# smollm2py per folder, and `stop` then ends only the servers started here.
state_of() { echo "$WORK/llama-state-$1"; }
cleanup() {
    if [ -n "$SHIM_PID" ]; then
        kill "$SHIM_PID" 2>/dev/null || true
        wait "$SHIM_PID" 2>/dev/null || true
    fi
    local i
    for ((i = 1; i <= STARTED; i++)); do
        HARNESS_LLAMA_STATE="$(state_of "$i")" "$ROOT/scripts/llama-server.sh" stop smollm2py || true
    done
    [ "$KEEP_WORK" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

eval "$("$ROOT/scripts/lm-eval.sh" ensure)"

SERVER_VERSION="unknown (external server)"
UPSTREAMS=()
if [ -n "${HARNESS_LLAMA_PY_URL:-}" ]; then
    UPSTREAMS=(--upstream "${HARNESS_LLAMA_PY_URL%/}")
    SERVERS=1
    log "using the server at ${HARNESS_LLAMA_PY_URL%/}"
else
    if ! "$ROOT/scripts/llama-server.sh" paths >/dev/null 2>&1; then
        "$ROOT/scripts/llama-server.sh" ensure >/dev/null
    fi
    eval "$("$ROOT/scripts/llama-server.sh" paths)"
    for ((i = 1; i <= SERVERS; i++)); do
        url="$(HARNESS_LLAMA_STATE="$(state_of "$i")" "$ROOT/scripts/llama-server.sh" start smollm2py)"
        STARTED=$i
        UPSTREAMS+=(--upstream "$url")
    done
    SERVER_VERSION="llama-cpp-python $("$LLAMA_CPP_PYTHON" -c 'import llama_cpp; print(llama_cpp.__version__)')"
fi

python3 "$HERE/shim.py" "${UPSTREAMS[@]}" "${FRESH[@]}" --capture "$WORK/capture.jsonl" \
    --url-file "$WORK/shim.url" --prompt-prefix "$PREFIX" 2>"$WORK/shim.log" &
SHIM_PID=$!
for _ in $(seq 100); do
    [ -s "$WORK/shim.url" ] && break
    kill -0 "$SHIM_PID" 2>/dev/null || { cat "$WORK/shim.log" >&2; die "the shim exited"; }
    sleep 0.1
done
[ -s "$WORK/shim.url" ] || die "the shim did not start"
SHIM="$(cat "$WORK/shim.url")"

mkdir -p "$WORK/task"
cp "$HERE/task.yaml" "$WORK/task/task.yaml"
cp "$ITEMS" "$WORK/task/items.jsonl"

log "lm-eval on $(wc -l <"$ITEMS") items via $SHIM -> ${UPSTREAMS[*]}"
t0=$(date +%s.%N)
# A clean environment: no API key of the caller's reaches lm-eval (it would
# send OPENAI_API_KEY to the server), and the Hugging Face libraries stay
# offline with a cache of this run's own.
(
    cd "$WORK/task"
    env -i PATH="/usr/bin:/bin" HOME="$WORK" LANG=C.UTF-8 \
        HF_HOME="$WORK/hf" HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 TQDM_DISABLE=1 \
        "$LM_EVAL" --model local-completions \
        --model_args "base_url=$SHIM/v1/completions,model=smollm2,tokenizer_backend=remote,tokenized_requests=False,num_concurrent=$SERVERS,max_retries=1,timeout=600" \
        --tasks "$TASK" --include_path "$WORK/task" \
        --log_samples --output_path "$WORK/out" >"$WORK/lm_eval.log" 2>&1
) || { tail -c 3000 "$WORK/lm_eval.log" | tr "\r" "\n" | tail -n 30 >&2; die "lm_eval failed (log: $WORK/lm_eval.log)"; }
t1=$(date +%s.%N)

python3 "$HERE/postprocess.py" \
    --items "$ITEMS" --out-dir "$WORK/out" --capture "$WORK/capture.jsonl" \
    --elapsed "$(python3 -c "print(round($t1 - $t0, 3))")" --server-version "$SERVER_VERSION" --prompt-prefix "$PREFIX" \
    --write "$OUT"
log "wrote $OUT/lm_eval_output.jsonl, $OUT/summary.json, $OUT/request_example.json"
