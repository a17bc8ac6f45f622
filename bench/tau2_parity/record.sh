#!/usr/bin/env bash
# Records the scripted agents' tau2_retail episodes (agent.py's five
# variants, user.py as the simulated user): exec programs, no model server.
# They are blessed as golden transcripts into a scratch directory, then kept
# xz-compressed in episodes/tau2_retail/: each record holds the final
# database (~170 KB as JSON, nearly the same in every record), 20 MB in all
# as text, 150 KB compressed (xz's window spans records; gzip's does not).
# HARNESS names the binary (default: `harness` on PATH).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cd "$root"
# Every task, not only the spec's golden subset (full_spec.py).
spec="$(python3 "$here/full_spec.py" "$scratch")"
# A failing episode is a verdict, not an error: `run` exits 1 then.
"${HARNESS:-harness}" run "$spec" --config "$here/harness.toml" \
    -m tau2_gold -m tau2_wrong -m tau2_silent -m tau2_stray -m tau2_endless --user-model tau2_user \
    --results "$scratch/results" --golden "$scratch/golden" --bless --no-progress --no-cache ||
    [ "$?" -eq 1 ]
mkdir -p "$here/episodes/tau2_retail"
for f in "$scratch"/golden/tau2_retail/*.jsonl; do
    xz -9 -c "$f" >"$here/episodes/tau2_retail/$(basename "$f").xz"
done
