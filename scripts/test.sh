#!/usr/bin/env bash
# The project's test command (README): builds or reuses llama-server and the
# two tiny models (cached under ~/.cache/harness), starts their servers on
# loopback (SmolLM2 twice, one for the judge) and a single-node Slurm
# cluster (scripts/slurm-cluster.sh), runs every test (unit,
# integration, fault injection, SIGKILL resume, end-to-end against the real
# servers and cluster), checks the shipped specs, and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."

# The code rule runs model-written Python in the sandbox as an unprivileged
# uid, which cannot enter a home-directory interpreter (pyenv under /root):
# make sure a system python3 exists.
if [ ! -x /usr/bin/python3 ] && [ -z "${HARNESS_PYTHON:-}" ] && command -v apt-get >/dev/null; then
  echo "installing python3 for the sandbox tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3) >/dev/null
fi
# The HTML report's browser tests (tests/html_report.rs, tests/compare_runs.rs)
# drive Debian's headless Chromium over the DevTools protocol.
if [ ! -x /usr/bin/chromium ] && [ -z "${HARNESS_CHROMIUM:-}" ] && command -v apt-get >/dev/null; then
  echo "installing chromium for the browser tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
fi
# The OCR spec's live check (tests/ocr.rs, tests/exec.rs) runs Debian's
# Tesseract 5 with its English and Russian language packs.
if ! command -v tesseract >/dev/null && command -v apt-get >/dev/null; then
  echo "installing tesseract for the OCR tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    tesseract-ocr tesseract-ocr-eng tesseract-ocr-rus) >/dev/null
fi
# The Slurm example's test (tests/cluster.rs) submits to a real single-node
# cluster: Debian's slurm-wlm and munge, daemons in the foreground.
scripts/slurm-cluster.sh ensure
scripts/llama-server.sh ensure >/dev/null
llama_pid=""
# errexit holds inside traps too: a failed kill (the process already
# waited for) must not skip stopping the servers and the cluster.
trap '{ [ -z "$llama_pid" ] || kill "$llama_pid" 2>/dev/null; } || true; scripts/llama-server.sh stop all >/dev/null 2>&1 || true; scripts/slurm-cluster.sh stop >/dev/null 2>&1 || true' EXIT
eval "$(scripts/slurm-cluster.sh start)"
export SLURM_CONF
echo "slurm: a single-node cluster, SLURM_CONF=$SLURM_CONF"
# One thread each: the golden transcripts were recorded so, and thread count can change greedy output.
HARNESS_LLAMA_URL="$(scripts/llama-server.sh start smollm2 -t 1)"
HARNESS_GEMMA_URL="$(scripts/llama-server.sh start gemma3 -t 1)"
# The judge's SmolLM2 on a server of its own: it works beside the model's
# instead of after it, and never shares its batches.
HARNESS_JUDGE_URL="$(scripts/llama-server.sh start judge -t 1)"
export HARNESS_LLAMA_URL HARNESS_GEMMA_URL HARNESS_JUDGE_URL HARNESS_E2E=1
echo "llama-server: smollm2 at $HARNESS_LLAMA_URL, gemma3 at $HARNESS_GEMMA_URL, the judge at $HARNESS_JUDGE_URL"
# The managed-server tests (tests/managed_llama.rs) start their own llama-server
# from the binary and model file.
LLAMA_SERVER_BIN="$(scripts/llama-server.sh paths | sed -n 's/^LLAMA_SERVER_BIN=//p')"
SMOLLM2_MODEL="$(scripts/llama-server.sh paths | sed -n 's/^SMOLLM2_MODEL=//p')"
export LLAMA_SERVER_BIN SMOLLM2_MODEL

# The tests on the shared llama.cpp servers (e2e_llama, e2e_tools) take turns (llama.cpp
# batches concurrent requests, which changes greedy output). A test waiting
# its turn would hold one of libtest's threads, and they sort together, so
# they run one at a time in a process of their own, beside the rest. They
# are the longest part; the tests that start llama-servers of their own
# (managed_llama, pool_llama) run one at a time beside them once the rest
# is done, so the CPU-bound rest never shares the cores with three servers.
shared_tests=(e2e_llama:: e2e_tools::)
own_tests=(managed_llama:: pool_llama::)
cargo test --locked --no-run
llama_log="$(mktemp)"
cargo test --locked --test tests -- --test-threads 1 "${shared_tests[@]}" >"$llama_log" 2>&1 &
llama_pid=$!
rest=0
cargo test --locked -- $(printf -- '--skip %s ' "${shared_tests[@]}" "${own_tests[@]}") || rest=$?
echo "== the tests on llama-servers of their own (one at a time)"
own=0
cargo test --locked --test tests -- --test-threads 1 "${own_tests[@]}" || own=$?
llama=0
wait "$llama_pid" || llama=$?
echo "== the tests on the shared llama servers (one at a time)"
cat "$llama_log"
rm -f "$llama_log"
for code in "$rest" "$own" "$llama"; do
  if [ "$code" -ne 0 ]; then exit "$code"; fi
done
cargo run --quiet --locked -- check specs/
