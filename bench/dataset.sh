#!/usr/bin/env bash
# Dataset loading + prompt rendering: 100,000 RRR rows (see bench/dataset.rs).
# DATASET_ROWS=N changes the row count.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked --bench dataset
