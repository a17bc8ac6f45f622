#!/usr/bin/env bash
# The project's test command (README): unit, integration and snapshot tests,
# then `harness check specs/` on the shipped specs.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --locked
cargo run --quiet --locked -- check specs/
