#!/usr/bin/env bash
# Runner overhead against a zero-latency loopback server (see bench/overhead.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked --bench overhead
