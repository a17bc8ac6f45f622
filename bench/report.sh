#!/usr/bin/env bash
# The HTML report at 10,000 records: write time, file size, and open, list and
# filter times in headless Chromium (see bench/report.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked --bench report
