#!/usr/bin/env bash
# Scores the recorded tau2_retail episodes with τ²-bench's own evaluator:
# the goldens of the CI models (golden/tau2_retail) and the scripted agents'
# runs (bench/tau2_parity/episodes/tau2_retail, xz-compressed by record.sh). Writes
# output.jsonl and summary.json here; exits 1 when a verdict disagrees.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="$("$here/setup.sh")"
dirs=()
for d in "$root/golden/tau2_retail" "$here/episodes/tau2_retail"; do
    if compgen -G "$d/*.jsonl*" >/dev/null; then dirs+=("$d"); fi
done
cd "$here"
# No network: LiteLLM (imported by τ²) reads its bundled price map.
TAU2_DATA_DIR="$cache/src/data" LITELLM_LOCAL_MODEL_COST_MAP=True \
    nice "$cache/venv/bin/python" convert_and_evaluate.py --root "$root" \
    --out output.jsonl --summary summary.json "${dirs[@]}"
