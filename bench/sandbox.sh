#!/usr/bin/env bash
# Sandboxed against bare `python3 -c pass`, and the code rule's verdicts against
# bare `python3 file.py` per task, interleaved in one run (see bench/sandbox.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked --bench sandbox
