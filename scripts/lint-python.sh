#!/usr/bin/env bash
# Lints the harness's own Python (the code rule's checker and server,
# src/verify/code/*.py, and the benches' helpers under bench/) with a pinned
# Ruff from PyPI, installed once into a venv under ~/.cache/harness/tools
# keyed by its version; rules in ruff.toml.
set -euo pipefail
cd "$(dirname "$0")/.."

ruff_version="0.17.6"
venv="$HOME/.cache/harness/tools/ruff-$ruff_version"
if [ ! -x "$venv/bin/ruff" ]; then
  echo "installing ruff $ruff_version into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "ruff==$ruff_version"
fi
"$venv/bin/ruff" check --no-cache src/verify/code/ src/sandbox/warm.py bench/
