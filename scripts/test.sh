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
llama_pid=""
slurm_state=""
# errexit holds inside traps too: a failed kill (the process already
# waited for) must not skip stopping the servers and the cluster.
trap '{ [ -z "$build_pid" ] || kill "$build_pid" 2>/dev/null; } || true; { [ -z "$llama_pid" ] || kill "$llama_pid" 2>/dev/null; } || true; scripts/llama-server.sh stop all >/dev/null 2>&1 || true; scripts/slurm-cluster.sh stop >/dev/null 2>&1 || true; { [ -z "$slurm_state" ] || rm -rf "$slurm_state"; }; rm -f "$build_log"; print_timings' EXIT

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
scripts/llama-server.sh ensure >/dev/null
mark "llama-server and models: build or reuse" "$t"
t=$SECONDS
# The live MCP tests (tests/mcp.rs, and specs/mcp_memory.toml through
# harness.toml's [[mcp]] wrappers, also under `harness check specs/`) run
# npm's server-memory and server-everything and a server on PyPI's `mcp`
# SDK, installed and cached.
mcp_paths="$(scripts/mcp-servers.sh ensure)"
eval "$mcp_paths"
export MCP_MEMORY_BIN MCP_EVERYTHING_BIN MCP_PYTHON
mark "MCP servers: install or reuse" "$t"
t=$SECONDS
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
# One thread each: the golden transcripts were recorded so, and thread count
# can change greedy output. Each model gets a twin (smollm2b, gemma3b),
# started the same way, and the live tests use each pair as a pool: one
# request at a time per server, so every answer is one server's alone as
# recorded, while the pairs keep both cores busy until the last answer.
# Under `nice`: the rest of the tests, some bound by wall-clock limits, come
# first, and the servers take whatever CPU those leave.
serve() { nice -n 10 scripts/llama-server.sh start "$1" -t 1; }
HARNESS_LLAMA_URL="$(serve smollm2)"
HARNESS_LLAMA2_URL="$(serve smollm2b)"
HARNESS_GEMMA_URL="$(serve gemma3)"
HARNESS_GEMMA2_URL="$(serve gemma3b)"
# The judge's SmolLM2 on servers of its own (a pool of two too): it works
# beside the models instead of after them, and never shares their batches.
HARNESS_JUDGE_URL="$(serve judge)"
HARNESS_JUDGE2_URL="$(serve judgeb)"
# Both models once more with long slots (8,192 tokens): the τ² retail
# conversations (tests/tau2_retail.rs) need them, and were recorded on them.
HARNESS_LLAMA_LONG_URL="$(serve smollm2long)"
HARNESS_GEMMA_LONG_URL="$(serve gemma3long)"
# SmolLM2 once more on llama-cpp-python's server (one thread is its default
# here; its flags are not llama-server's).
HARNESS_LLAMA_PY_URL="$(nice -n 10 scripts/llama-server.sh start smollm2py)"
export HARNESS_LLAMA_URL HARNESS_LLAMA2_URL HARNESS_GEMMA_URL HARNESS_GEMMA2_URL \
  HARNESS_JUDGE_URL HARNESS_JUDGE2_URL HARNESS_LLAMA_PY_URL \
  HARNESS_LLAMA_LONG_URL HARNESS_GEMMA_LONG_URL HARNESS_E2E=1
echo "llama-server: smollm2 at $HARNESS_LLAMA_URL and $HARNESS_LLAMA2_URL," \
  "gemma3 at $HARNESS_GEMMA_URL and $HARNESS_GEMMA2_URL," \
  "the judge at $HARNESS_JUDGE_URL and $HARNESS_JUDGE2_URL;" \
  "llama-cpp-python: smollm2 at $HARNESS_LLAMA_PY_URL"
mark "start the cluster and the servers" "$t"
# The managed-server tests (tests/managed_llama.rs) start their own llama-server
# from the binary and model file.
LLAMA_SERVER_BIN="$(scripts/llama-server.sh paths | sed -n 's/^LLAMA_SERVER_BIN=//p')"
SMOLLM2_MODEL="$(scripts/llama-server.sh paths | sed -n 's/^SMOLLM2_MODEL=//p')"
export LLAMA_SERVER_BIN SMOLLM2_MODEL

# The tests on llama.cpp servers take turns: those on the shared servers
# (e2e_llama, e2e_tools; llama.cpp batches concurrent requests, which changes
# greedy output), then those that start llama-servers of their own
# (managed_llama, pool_llama). A test waiting its turn would hold one of
# libtest's threads, and they sort together, so they run one at a time in a
# process of their own, beside the rest and under `nice` like the shared
# servers: the rest, some of it bound by wall-clock limits, goes first.
# The live conversations (a simulated user on the same servers) join them.
# (A second process for the tests on servers no other test asks, beside
# the first, raised the load to 10-14 while the rest ran, and tests bound
# by 1 s limits failed: docs/testing.md.)
llama_tests=(e2e_llama:: e2e_tools:: managed_llama:: pool_llama::
  agent_user::dialogues_reproduce_live tau2_retail::golden_conversations_reproduce_live)
llama_log="$(mktemp)"
llama_start=$SECONDS
# --nocapture: the longest tests print how long their live runs took, and
# each line is stamped with the script's seconds, so that every test's time
# shows (`test NAME ...` starts it, its `ok` ends it).
stamp() { while IFS= read -r line; do printf '[%5d] %s\n' "$SECONDS" "$line"; done; }
exec {stamp_fd}> >(stamp >"$llama_log")
stamp_pid=$!
nice -n 10 cargo test --locked --test tests -- --test-threads 1 --nocapture "${llama_tests[@]}" >&"$stamp_fd" 2>&1 &
llama_pid=$!
# Only the tests hold the stamper's input now: it ends when they do.
exec {stamp_fd}>&-
t=$SECONDS
rest=0
cargo test --locked -- $(printf -- '--skip %s ' "${llama_tests[@]}") || rest=$?
mark "the rest: unit and integration tests" "$t"
llama=0
wait "$llama_pid" || llama=$?
llama_pid=""
wait "$stamp_pid" || true
mark "llama tests: e2e_llama, e2e_tools, managed_llama, pool_llama (beside)" "$llama_start" "$(ended_at "$llama_log")"
echo "== the tests on llama-servers (one at a time)"
cat "$llama_log"
rm -f "$llama_log"
for code in "$rest" "$llama"; do
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
