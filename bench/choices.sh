#!/usr/bin/env bash
# `loglikelihood` requests per second against the text path (see bench/choices.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked --bench choices
