#!/usr/bin/env bash
# harness view at scale: a results folder of HARNESS_VIEW_RECORDS records
# (default 1,000,000) over 50 runs; prints how long the index takes, the run
# list's first paint and a drill-down in headless Chromium, and the server's
# memory (tests/view/browser.rs, scale_a_results_folder_of_a_million_records).
# PROFILE=release (the default) measures the optimized binary.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=()
[ "${PROFILE:-release}" = release ] && profile=(--release)
cargo test --locked "${profile[@]}" --test tests view::browser::scale_a_results_folder -- --ignored --nocapture
