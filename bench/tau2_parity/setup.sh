#!/usr/bin/env bash
# Builds a venv with tau2-bench installed from a git mirror, cached per commit.
# Prints the cache directory (holding venv/ and src/) on stdout.
#
# Environment:
#   TAU2_REPO    git dir of sierra-research/tau2-bench
#                (default /work/.mirror/sierra-research+tau2-bench/repo)
#   TAU2_COMMIT  commit to install (default a2c0247)
#   TAU2_PYTHON  a Python >= 3.12, < 3.14 (default: python3.12 on PATH, then
#                pyenv's 3.12.1). On a new machine: `pyenv install 3.12`, or
#                `uv python install 3.12`, or the distribution's python3.12.
set -euo pipefail

repo="${TAU2_REPO:-/work/.mirror/sierra-research+tau2-bench/repo}"
commit="${TAU2_COMMIT:-a2c0247}"
full="$(git --git-dir="$repo" rev-parse --verify "$commit^{commit}")"
cache="${HOME}/.cache/harness/tau2-${full:0:12}"
constraints="$(cd "$(dirname "$0")" && pwd)/constraints.txt"
# The venv is ready for this commit and these pins (a changed pin rebuilds it).
ready="$full $(sha256sum <"$constraints" | cut -d' ' -f1)"

if [ -x "$cache/venv/bin/python" ] && [ "$(cat "$cache/.ready" 2>/dev/null)" = "$ready" ]; then
    echo "$cache"
    exit 0
fi

fits() {
    "$1" -c 'import sys; sys.exit(not ((3, 12) <= sys.version_info[:2] < (3, 14)))' \
        >/dev/null 2>&1
}
py="${TAU2_PYTHON:-}"
if [ -z "$py" ]; then
    # A pyenv shim may exist on PATH yet fail to run, so each is tried.
    for candidate in python3.12 python3.13 /root/.pyenv/versions/3.12.1/bin/python3; do
        if fits "$candidate"; then
            py="$candidate"
            break
        fi
    done
fi
if [ -z "$py" ] || ! fits "$py"; then
    echo "setup.sh: need Python >= 3.12 and < 3.14 (set TAU2_PYTHON)" >&2
    exit 1
fi

rm -rf "$cache"
mkdir -p "$cache/src"
# The mirror is a bare repository whose largest blobs may be absent: export
# only the package and the retail domain's data.
# (git archive reads every blob, so a throwaway index and a checkout of
# named paths are used instead).
GIT_INDEX_FILE="$cache/index" git --git-dir="$repo" --work-tree="$cache/src" \
    checkout "$full" -- src pyproject.toml README.md LICENSE \
    data/tau2/domains/retail/db.json data/tau2/domains/retail/tasks.json \
    data/tau2/domains/retail/policy.md data/tau2/domains/retail/split_tasks.json
rm -f "$cache/index"
"$py" -m venv "$cache/venv"
"$cache/venv/bin/python" -m pip install --quiet --upgrade pip >&2
# Non-editable install: tau2 then finds its data through TAU2_DATA_DIR.
# constraints.txt pins every dependency as the committed output was made
# (a `pip freeze` of a clean install), so a rerun evaluates alike.
"$cache/venv/bin/python" -m pip install --quiet -c "$constraints" "$cache/src" >&2
echo "$ready" >"$cache/.ready"
echo "$cache"
