#!/usr/bin/env bash
# The screenshots in docs/reports.md: the shipped replay (`harness run specs/`)
# written to a temporary folder and its HTML report shot by headless Chromium
# at 1280 px, the overview as docs/report.png and the instance list as
# docs/report-instances.png. Needs Debian's chromium (apt-get install chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
chromium="${HARNESS_CHROMIUM:-/usr/bin/chromium}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Golden transcripts are copied so that the run writes no .new files here.
cp -r golden "$tmp/golden"
cargo run --locked --quiet -- run specs/ --no-progress \
  --results "$tmp/results" --golden "$tmp/golden" >/dev/null || [ $? -eq 1 ]
html="$(ls "$tmp"/results/reports/report_*.html)"
shot() { # view file height
  "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$tmp/profile" --hide-scrollbars --force-device-scale-factor=1 \
    --window-size="1280,$3" --screenshot="$2" "file://$html#$1" 2>/dev/null
  echo "wrote $2"
}
shot overview docs/report.png 1180
shot instances docs/report-instances.png 760
