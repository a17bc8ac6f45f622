#!/usr/bin/env bash
# Sandboxed against bare `python3 -c pass`, interleaved in one run (see bench/sandbox.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked --bench sandbox
