#!/usr/bin/env bash
# The project's test command (README): builds or reuses llama-server and the
# two tiny models (cached under ~/.cache/harness), starts both servers on
# loopback, runs every test (unit, integration, fault injection, SIGKILL
# resume, end-to-end against the real servers), checks the shipped specs,
# and stops the servers it started.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/llama-server.sh ensure >/dev/null
trap 'scripts/llama-server.sh stop all >/dev/null 2>&1 || true' EXIT
# One thread each: the golden transcripts were recorded so, and thread count can change greedy output.
HARNESS_LLAMA_URL="$(scripts/llama-server.sh start smollm2 -t 1)"
HARNESS_GEMMA_URL="$(scripts/llama-server.sh start gemma3 -t 1)"
export HARNESS_LLAMA_URL HARNESS_GEMMA_URL HARNESS_E2E=1
echo "llama-server: smollm2 at $HARNESS_LLAMA_URL, gemma3 at $HARNESS_GEMMA_URL"

cargo test --locked
cargo run --quiet --locked -- check specs/
