#!/usr/bin/env bash
# Submits the shards array and its merge: `examples/slurm/submit.sh [SHARDS]`
# from the repository root (default 4 shards). Prints the merge job's id.
# With WAIT=1 it waits for both jobs and exits with the merge's code.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shards="${1:-4}"
wait_flag=()
if [ "${WAIT:-0}" = 1 ]; then wait_flag=(--wait); fi
array="$(sbatch --parsable --array="0-$((shards - 1))" "$here/shards.sbatch")"
array="${array%%;*}"
echo "shards: job $array ($shards array tasks)" >&2
SHARDS_JOB="$array" exec sbatch --parsable "${wait_flag[@]}" \
    --dependency="afterok:$array" --kill-on-invalid-dep=yes \
    --export="ALL,SHARDS_JOB=$array" "$here/merge.sbatch"
