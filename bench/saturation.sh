#!/usr/bin/env bash
# Saturation: does `harness run` keep llama-server's 4 slots as busy as a
# minimal client does? The same 32 requests (t06 instances, max_tokens 32,
# temperature 0) are fired by harness (concurrency 4, no cache) and by curl
# through `xargs -P 4`, alternating three times; the medians and their
# ratio are printed. Uses scripts/llama-server.sh (builds/reuses the server).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-32}"
ROUNDS="${ROUNDS:-3}"

cargo build --release --quiet --locked
HARNESS="$PWD/${CARGO_TARGET_DIR:-target}/release/harness"
[ -x "$HARNESS" ] || HARNESS="${CARGO_TARGET_DIR:-$PWD/target}/release/harness"
scripts/llama-server.sh ensure >/dev/null
started_here=0
if ! url="$(cat "${HARNESS_LLAMA_STATE:-/tmp/harness-llama}/smollm2.url" 2>/dev/null)" || ! curl -sf "$url/health" >/dev/null; then
    url="$(scripts/llama-server.sh start smollm2)"
    started_here=1
fi
work="$(mktemp -d)"
cleanup() {
    rm -rf "$work"
    if [ "$started_here" = 1 ]; then scripts/llama-server.sh stop smollm2 >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

mkdir -p "$work/specs" "$work/bodies"
cp specs/t06_mathematics.toml "$work/specs/"
printf '[models.sat]\nprovider = "openai"\nmodel = "smollm2"\nbase_url = "%s/v1"\nconcurrency = 4\noptions = { max_tokens = 32 }\n' "$url" >"$work/harness.toml"

# The minimal client sends byte-for-byte what harness sends: bodies built from harness's own journal.
(cd "$work" && "$HARNESS" run specs/t06_mathematics.toml -m sat --runs "$N" --no-cache --no-progress --results warm >/dev/null 2>&1)
python3 - "$work" <<'PY'
import json, glob, sys
work = sys.argv[1]
journal = glob.glob(f"{work}/warm/runs/*/journal.jsonl")[0]
for line in open(journal):
    r = json.loads(line)
    body = {"model": "smollm2", "messages": r["messages"], "temperature": 0.0, "max_tokens": 32}
    with open(f"{work}/bodies/{r['instance']:05d}.json", "w") as f:
        json.dump(body, f, ensure_ascii=False)
PY

now() { date +%s.%N; }
harness_times=() client_times=()
for round in $(seq "$ROUNDS"); do
    t0=$(now)
    ls "$work"/bodies/*.json | xargs -P 4 -I{} curl -sf -o /dev/null -H 'Content-Type: application/json' --data-binary @{} "$url/v1/chat/completions"
    t1=$(now)
    (cd "$work" && "$HARNESS" run specs/t06_mathematics.toml -m sat --runs "$N" --no-cache --no-progress --results "r$round" >/dev/null 2>&1)
    t2=$(now)
    client_times+=("$(python3 -c "print(round($t1 - $t0, 3))")")
    harness_times+=("$(python3 -c "print(round($t2 - $t1, 3))")")
    echo "round $round: curl ${client_times[-1]} s, harness ${harness_times[-1]} s"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mc=$(median "${client_times[@]}"); mh=$(median "${harness_times[@]}")
echo "saturation: $N requests, 4 slots: curl median ${mc} s, harness median ${mh} s, ratio harness/curl $(python3 -c "print(round($mh / $mc, 3))")"
