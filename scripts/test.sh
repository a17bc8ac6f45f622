#!/usr/bin/env bash
# The project's test command (README): builds or reuses llama-server,
# llama-cpp-python's server and the two tiny models (cached under
# ~/.cache/harness), starts their servers on loopback (each model twice, as a
# pool, SmolLM2 once more for the judge and once on llama-cpp-python) and a single-node Slurm cluster (scripts/slurm-cluster.sh), runs
# every test (unit, integration, fault injection, SIGKILL resume, end-to-end
# against the real servers and cluster), checks the shipped specs, stops
# what it started and prints how long each phase took.
set -euo pipefail
cd "$(dirname "$0")/.."

# Where the time goes: each phase's start and end (seconds since this script
# started), printed as a table on exit, so a failed or slow run still says
# which phase took it (docs/testing.md keeps the measured numbers).
started="$(date +%s)"
timings="$(mktemp)"
mark() {  # mark NAME START [END]: END defaults to now
  printf '%s\t%s\t%s\n' "$1" "$2" "${3:-$SECONDS}" >>"$timings"
}
ended_at() {  # ended_at FILE: when FILE was last written, in script seconds
  echo $(($(stat -c %Y "$1") - started))
}
print_timings() {
  echo "== phase times (s; the build and the llama tests run beside others)"
  printf '%-52s %5s %5s %5s\n' phase start end took
  sort -t "$(printf '\t')" -k2,2n "$timings" |
    awk -F '\t' '{ printf "%-52s %5d %5d %5d\n", $1, $2, $3, $3 - $2 }'
  echo "total: $SECONDS s"
  rm -f "$timings"
}

# The test binaries build beside the setup below (system packages, the
# Slurm cluster, llama-server's compile on a fresh machine): each leaves the
# cores idle at times (downloads, linking, single-crate stretches) that the
# other fills. The llama.cpp build runs under `nice`, so this one goes first.
build_log="$(mktemp)"
cargo test --locked --no-run >"$build_log" 2>&1 &
build_pid=$!
slurm_state=""
# errexit holds inside traps too: a failed kill (the process already
# waited for) must not skip stopping the servers and the cluster.
ensure_pid=""
llama_pids=()
stop_started() {
  { [ -z "$build_pid" ] || kill "$build_pid" 2>/dev/null; } || true
  # The llama.cpp build runs as a job of its own process group: its
  # compilers go with it.
  { [ -z "$ensure_pid" ] || kill -- "-$ensure_pid" 2>/dev/null; } || true
  local pid
  for pid in "${llama_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  scripts/llama-server.sh stop all >/dev/null 2>&1 || true
  scripts/slurm-cluster.sh stop >/dev/null 2>&1 || true
  { [ -z "$slurm_state" ] || rm -rf "$slurm_state"; } || true
  rm -f "$build_log"
  print_timings
}
trap stop_started EXIT

t=$SECONDS
# One `apt-get update` for whatever is missing (each costs a download).
apt_updated=0
apt_install() {
  [ "$apt_updated" -eq 1 ] || apt-get update -qq >/dev/null
  apt_updated=1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
# The code rule runs model-written Python in the sandbox as an unprivileged
# uid, which cannot enter a home-directory interpreter (pyenv under /root):
# make sure a system python3 exists.
if [ ! -x /usr/bin/python3 ] && [ -z "${HARNESS_PYTHON:-}" ] && command -v apt-get >/dev/null; then
  echo "installing python3 for the sandbox tests"
  apt_install python3
fi
# The HTML report's browser tests (tests/html_report.rs, tests/compare_runs.rs)
# drive Debian's headless Chromium over the DevTools protocol.
if [ ! -x /usr/bin/chromium ] && [ -z "${HARNESS_CHROMIUM:-}" ] && command -v apt-get >/dev/null; then
  echo "installing chromium for the browser tests"
  apt_install chromium
fi
# The OCR spec's live check (tests/ocr.rs, tests/exec.rs) runs Debian's
# Tesseract 5 with its English and Russian language packs.
if ! command -v tesseract >/dev/null && command -v apt-get >/dev/null; then
  echo "installing tesseract for the OCR tests"
  apt_install tesseract-ocr tesseract-ocr-eng tesseract-ocr-rus
fi
mark "system packages (apt, when missing)" "$t"
t=$SECONDS
# The Slurm example's test (tests/cluster.rs) submits to a real single-node
# cluster: Debian's slurm-wlm and munge, daemons in the foreground.
scripts/slurm-cluster.sh ensure
mark "slurm: install when missing" "$t"
t=$SECONDS
# The live MCP tests (tests/mcp.rs, and specs/mcp_memory.toml through
# harness.toml's [[mcp]] wrappers, also under `harness check specs/`) run
# npm's server-memory and server-everything and a server on PyPI's `mcp`
# SDK, installed and cached.
mcp_paths="$(scripts/mcp-servers.sh ensure)"
eval "$mcp_paths"
export MCP_MEMORY_BIN MCP_EVERYTHING_BIN MCP_PYTHON
mark "MCP servers: install or reuse" "$t"
# llama-server and llama-cpp-python, from cold the longest build (about half
# an hour of two cores), build in the background beside the tests' build
# and then beside the tests that need no llama.cpp server; warm, they are
# reused at once. Under `nice` (the script does so): the tests go first.
# Job control puts it in a process group of its own, in this session: the
# kernel shares the CPU evenly between sessions whatever their `nice`
# (autogroups), and only within one does `nice` let the tests go first.
ensure_start=$SECONDS
ensure_log="$(mktemp)"
set -m
scripts/llama-server.sh ensure >/dev/null 2>"$ensure_log" &
ensure_pid=$!
set +m
build=0
wait "$build_pid" || build=$?
build_pid=""
mark "build the tests (beside the three above)" 0 "$(ended_at "$build_log")"
cat "$build_log"
[ "$build" -eq 0 ] || exit "$build"
t=$SECONDS
# A state directory of this run's own: a run killed before its trap leaves
# PID files, and perhaps daemons, in a shared one.
slurm_state="$(mktemp -d /tmp/harness-slurm.XXXXXX)"
export HARNESS_SLURM_STATE="$slurm_state"
# An assignment, not `eval "$(...)"`: errexit sees a failed start there.
slurm_env="$(scripts/slurm-cluster.sh start)"
eval "$slurm_env"
export SLURM_CONF
echo "slurm: a single-node cluster, SLURM_CONF=$SLURM_CONF"
mark "start the cluster" "$t"
export HARNESS_E2E=1

# The tests on llama.cpp servers: none runs in the first group, "the rest".
# Group A asks the shared servers (e2e_llama, the dialogue); group B
# llama-cpp-python's server, or llama-servers of its own; group C the
# long-slot servers, for the τ² conversation: its turns follow one another
# (about 6 minutes, never more than a core), so it runs from the start
# instead of at the end of another group. Two short tests whose requests
# follow one another (the agent episodes, the synthetic pairs) run in B,
# on third twins of the shared servers: at the end of A, alone, they left
# a core idle for about 100 s, and beside A on the same servers they would
# share its batches, which changes greedy output.
llama_a=(e2e_llama:: agent_user::a_dialogue_reproduces_live)
llama_b=(e2e_llama::llama_cpp_python:: e2e_llama::reasoning:: e2e_llama::synth:: e2e_tools::
  managed_llama:: pool_llama:: reasoning_controls::a_budget_sweep_reaches_the_managed_llama_server)
llama_c=(tau2_retail::golden_conversations_reproduce_live)
skip() { printf -- '--skip %s ' "$@"; }

# The rest first, alone: it holds the tests bound by 1 s limits, which
# failed when the llama tests raised the load to 10-14 beside them
# (docs/testing.md). From cold the llama.cpp build goes on beside it, under
# `nice`.
t=$SECONDS
rest=0
# shellcheck disable=SC2046 # the skips are separate words
cargo test --locked -- $(skip "${llama_a[@]}" "${llama_b[@]}" "${llama_c[@]}") || rest=$?
mark "the rest: unit and integration tests" "$t"

ensure=0
wait "$ensure_pid" || ensure=$?
ensure_pid=""
mark "llama-server and models: build or reuse (beside)" "$ensure_start" "$(ended_at "$ensure_log")"
cat "$ensure_log" >&2
rm -f "$ensure_log"
[ "$ensure" -eq 0 ] || exit "$ensure"

t=$SECONDS
# One thread each: the golden transcripts were recorded so, and thread count
# can change greedy output. Each model gets a twin (smollm2b, gemma3b),
# started the same way, and the live tests use each pair as a pool: one
# request at a time per server, so every answer is one server's alone as
# recorded, while the pairs keep both cores busy until the last answer.
serve() { scripts/llama-server.sh start "$1" -t 1; }
HARNESS_LLAMA_URL="$(serve smollm2)"
HARNESS_LLAMA2_URL="$(serve smollm2b)"
HARNESS_GEMMA_URL="$(serve gemma3)"
HARNESS_GEMMA2_URL="$(serve gemma3b)"
# The judge's SmolLM2 on servers of its own (a pool of two too): it works
# beside the models instead of after them, and never shares their batches.
HARNESS_JUDGE_URL="$(serve judge)"
HARNESS_JUDGE2_URL="$(serve judgeb)"
# Third twins for group B, which runs beside A (see the groups above).
LLAMA_B_URL="$(serve smollm2c)"
GEMMA_B_URL="$(serve gemma3c)"
# Both models once more with long slots (8,192 tokens): the τ² retail
# conversations (tests/tau2_retail.rs) need them, and were recorded on them.
HARNESS_LLAMA_LONG_URL="$(serve smollm2long)"
HARNESS_GEMMA_LONG_URL="$(serve gemma3long)"
# SmolLM2 once more on llama-cpp-python's server (one thread is its default
# here; its flags are not llama-server's).
HARNESS_LLAMA_PY_URL="$(scripts/llama-server.sh start smollm2py)"
export HARNESS_LLAMA_URL HARNESS_LLAMA2_URL HARNESS_GEMMA_URL HARNESS_GEMMA2_URL \
  HARNESS_JUDGE_URL HARNESS_JUDGE2_URL HARNESS_LLAMA_PY_URL \
  HARNESS_LLAMA_LONG_URL HARNESS_GEMMA_LONG_URL
echo "llama-server: smollm2 at $HARNESS_LLAMA_URL and $HARNESS_LLAMA2_URL," \
  "gemma3 at $HARNESS_GEMMA_URL and $HARNESS_GEMMA2_URL," \
  "the judge at $HARNESS_JUDGE_URL and $HARNESS_JUDGE2_URL;" \
  "llama-cpp-python: smollm2 at $HARNESS_LLAMA_PY_URL"
mark "start the servers" "$t"
# The managed-server tests (tests/managed_llama.rs) start their own llama-server
# from the binary and model file.
LLAMA_SERVER_BIN="$(scripts/llama-server.sh paths | sed -n 's/^LLAMA_SERVER_BIN=//p')"
SMOLLM2_MODEL="$(scripts/llama-server.sh paths | sed -n 's/^SMOLLM2_MODEL=//p')"
export LLAMA_SERVER_BIN SMOLLM2_MODEL

# The llama groups share no server, so they run side by side, each one
# test at a time (a test waiting its turn for a server would hold one of
# libtest's threads): together they keep both cores busy. --nocapture: the
# longest tests print how long their live runs took, and each line is
# stamped with the script's seconds, so that every test's time shows
# (`test NAME ...` starts it, its `ok` ends it).
stamp() { while IFS= read -r line; do printf '[%5d] %s\n' "$SECONDS" "$line"; done; }
llama_start=$SECONDS
logs=()
stampers=()
group() {  # group FILTERS...: one test process, its stamped lines to a log
  local log fd
  log="$(mktemp)"
  logs+=("$log")
  exec {fd}> >(stamp >"$log")
  stampers+=("$!")
  cargo test --locked --test tests -- --test-threads 1 --nocapture "$@" >&"$fd" 2>&1 &
  llama_pids+=("$!")
  # Only the tests hold the stamper's input now: it ends when they do.
  exec {fd}>&-
}
# shellcheck disable=SC2046 # the skips are separate words
group "${llama_a[@]}" $(skip e2e_llama::llama_cpp_python:: e2e_llama::reasoning:: e2e_llama::synth::)
# Group B's "shared" servers are the third twins: no request of B shares a batch with A's.
HARNESS_LLAMA_URL=$LLAMA_B_URL HARNESS_LLAMA2_URL=$LLAMA_B_URL \
  HARNESS_GEMMA_URL=$GEMMA_B_URL HARNESS_GEMMA2_URL=$GEMMA_B_URL group "${llama_b[@]}"
group "${llama_c[@]}"
codes=("$rest")
for pid in "${llama_pids[@]}"; do
  code=0
  wait "$pid" || code=$?
  codes+=("$code")
done
llama_pids=()
for pid in "${stampers[@]}"; do wait "$pid" || true; done
names=("A: e2e_llama, the dialogue" "B: llama-cpp-python, managed, pool, reasoning, tools, synth"
  "C: the τ² conversation")
for i in 0 1 2; do
  mark "llama tests ${names[$i]}" "$llama_start" "$(ended_at "${logs[$i]}")"
done
for i in 0 1 2; do
  echo "== llama tests ${names[$i]} (one at a time, beside the other groups)"
  cat "${logs[$i]}"
  rm -f "${logs[$i]}"
done
for code in "${codes[@]}"; do
  if [ "$code" -ne 0 ]; then exit "$code"; fi
done
t=$SECONDS
# The binary the tests ran, not `cargo run`'s: that builds again without the
# dev-dependencies' features (81 s on a cold run).
target_dir="$(cargo metadata --locked --no-deps --format-version 1 |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
"$target_dir/debug/harness" check specs/
mark "harness check specs/" "$t"
t=$SECONDS
# τ²-bench's evaluator agreed with these recorded episodes (bench/tau2_parity):
# replaying them must still give the verdicts it gave, with 0 requests.
python3 bench/tau2_parity/check.py --harness "$target_dir/debug/harness" --self-check
mark "tau2 parity: replay and compare" "$t"
