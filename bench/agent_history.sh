#!/usr/bin/env bash
# Time per agent turn as the history grows (see bench/agent_history.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked --bench agent_history "$@"
