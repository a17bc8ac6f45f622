#!/usr/bin/env bash
# Shards and merge at 100,000 instances against a zero-latency loopback server (see bench/shard_merge.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked --bench shard_merge
