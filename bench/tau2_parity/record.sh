#!/usr/bin/env bash
# Records the scripted agents' tau2_retail episodes (agent.py's three
# variants, user.py as the simulated user) into episodes/ as golden
# transcripts: exec programs, no model server. HARNESS names the binary
# (default: `harness` on PATH).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT
cd "$root"
# A failing episode is a verdict, not an error: `run` exits 1 then.
"${HARNESS:-harness}" run specs/tau2_retail.toml --config "$here/harness.toml" \
    -m tau2_gold -m tau2_wrong -m tau2_silent --user-model tau2_user \
    --results "$results" --golden "$here/episodes" --bless --no-progress --no-cache ||
    [ "$?" -eq 1 ]
