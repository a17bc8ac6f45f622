#!/usr/bin/env bash
# Adaptive concurrency against a loopback fake rate limit (see bench/adaptive.rs):
# `concurrency = "auto"` beside a fixed concurrency too high and one too low.
set -euo pipefail
cd "$(dirname "$0")/.."
uptime
cargo bench --locked --bench adaptive
