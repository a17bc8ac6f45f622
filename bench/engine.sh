#!/usr/bin/env bash
# Spec engine throughput and `harness check specs/` wall time (see bench/engine.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked --bench engine
