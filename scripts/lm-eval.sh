#!/usr/bin/env bash
# lm-eval.sh — a cached virtual environment with lm-evaluation-harness from
# PyPI (`lm-eval[api]`, no torch), the reference side of the multiple-choice
# parity rig in bench/lm_eval_parity/.
#
# Usage:
#   scripts/lm-eval.sh ensure   # install or reuse the venv; prints LM_EVAL=... and LM_EVAL_PYTHON=...
#   scripts/lm-eval.sh paths    # prints the same lines; exit 1 if the venv is missing or broken
#
# Environment:
#   HARNESS_CACHE_DIR   cache root (default: $HOME/.cache/harness)
#   HARNESS_PYTHON      python interpreter with venv and pip (default: python3; lm-eval needs >= 3.10)
#
# Every package is pinned: lm-eval by LM_EVAL_VERSION, the rest by
# bench/lm_eval_parity/constraints.txt (a `pip freeze` of a clean install).
# The venv's directory name carries the version and a hash of the
# constraints, so a changed pin builds a new venv beside the old one.
set -euo pipefail

readonly LM_EVAL_VERSION="0.4.13"

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly CONSTRAINTS="$(dirname "$SCRIPT_DIR")/bench/lm_eval_parity/constraints.txt"
CACHE_DIR="${HARNESS_CACHE_DIR:-$HOME/.cache/harness}"
PYTHON="${HARNESS_PYTHON:-python3}"

log() { printf '[lm-eval.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ -f "$CONSTRAINTS" ] || die "missing $CONSTRAINTS"
PIN_HASH="$(sha256sum "$CONSTRAINTS" | cut -c1-12)"
VENV="$CACHE_DIR/lm-eval-$LM_EVAL_VERSION/venv-$PIN_HASH"

venv_ok() {
    [ -x "$VENV/bin/lm_eval" ] && [ -x "$VENV/bin/python" ] \
        && "$VENV/bin/python" -c 'import lm_eval.models.openai_completions' >/dev/null 2>&1
}

print_paths() {
    printf 'LM_EVAL=%q\n' "$VENV/bin/lm_eval"
    printf 'LM_EVAL_PYTHON=%q\n' "$VENV/bin/python"
}

build_venv() {
    venv_ok && return 0
    local t0 stage="$VENV.tmp.$$"
    t0=$(date +%s)
    rm -rf "$stage"
    mkdir -p "$(dirname "$VENV")"
    log "installing lm-eval[api]==$LM_EVAL_VERSION (pinned by $(basename "$CONSTRAINTS")) into $VENV"
    # Built beside its final place and renamed only when complete, so an
    # interrupted install never looks like a cached one.
    "$PYTHON" -m venv "$stage" >&2 || die "$PYTHON -m venv failed (Debian: apt-get install python3-venv)"
    "$stage/bin/python" -m pip --disable-pip-version-check --no-input install --quiet \
        --constraint "$CONSTRAINTS" "lm-eval[api]==$LM_EVAL_VERSION" >&2 \
        || { rm -rf "$stage"; die "pip install of lm-eval failed"; }
    if "$stage/bin/python" -c 'import torch' >/dev/null 2>&1; then
        rm -rf "$stage"
        die "torch got installed; the constraints must keep it out"
    fi
    rm -rf "$VENV"
    mv "$stage" "$VENV"
    # Console scripts carry the staging path in their shebang line.
    grep -rlF "$stage" "$VENV/bin" 2>/dev/null | while read -r f; do
        sed -i "s|$stage|$VENV|g" "$f"
    done
    venv_ok || die "lm-eval does not import from $VENV"
    log "lm-eval $LM_EVAL_VERSION installed in $(( $(date +%s) - t0 ))s"
}

with_lock() {  # serialize concurrent `ensure` runs
    mkdir -p "$CACHE_DIR"
    if command -v flock >/dev/null 2>&1; then
        ( flock 9; "$@" ) 9>"$CACHE_DIR/.lock-lm-eval"
    else
        "$@"
    fi
}

case "${1:-}" in
    ensure) with_lock build_venv; print_paths ;;
    paths)
        print_paths
        venv_ok || { log "missing or broken: $VENV (run: $0 ensure)"; exit 1; }
        ;;
    -h | --help | help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
    *) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
