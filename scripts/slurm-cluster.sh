#!/usr/bin/env bash
# slurm-cluster.sh — a single-node Slurm cluster on this machine, for trying
# the shipped sbatch scripts and for the Slurm test: Debian's slurm-wlm and
# munge, every daemon in the foreground under this script's watch,
# proctrack/linuxproc and no cgroup plugins (containers and CI machines
# rarely give slurmd a cgroup tree of its own).
#
# Usage:
#   scripts/slurm-cluster.sh ensure   # install slurm-wlm and munge if missing (apt-get)
#   scripts/slurm-cluster.sh start    # write the config, start munged, slurmctld, slurmd; wait for an idle node
#                                     # prints `export SLURM_CONF=...` for the client commands
#   scripts/slurm-cluster.sh env      # prints `export SLURM_CONF=...` again
#   scripts/slurm-cluster.sh status   # the daemons this script started, and sinfo
#   scripts/slurm-cluster.sh stop     # stops the daemons this script started (by recorded PID)
#
# Environment:
#   HARNESS_SLURM_STATE   state dir: config, key, sockets, logs, pids (default /tmp/harness-slurm)
#   HARNESS_SLURM_CPUS    CPUs the node offers (default: all)
set -euo pipefail

STATE_DIR="${HARNESS_SLURM_STATE:-/tmp/harness-slurm}"
CONF="$STATE_DIR/slurm.conf"
MUNGE_SOCKET="$STATE_DIR/munge/munge.socket"
DAEMONS=(munged slurmctld slurmd)

log() { printf '[slurm-cluster.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

cmd_ensure() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
        && command -v munged >/dev/null && command -v sbatch >/dev/null; then
        return 0
    fi
    command -v apt-get >/dev/null || die "no apt-get: install slurm-wlm and munge yourself"
    log "installing slurm-wlm and munge (apt-get)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge) >/dev/null
}

# A TCP port nobody listens on now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

write_config() {
    local host cpus mem
    host="$(hostname -s)"
    cpus="${HARNESS_SLURM_CPUS:-$(nproc)}"
    # Leave the node's memory unchecked beyond what slurmd itself reports.
    mem="$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')"
    mkdir -p "$STATE_DIR"/{munge,ctld,spool,logs}
    chmod 700 "$STATE_DIR/munge"
    cat >"$CONF" <<EOF
# Written by scripts/slurm-cluster.sh: one node, this machine.
ClusterName=harness
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$STATE_DIR/ctld
SlurmdSpoolDir=$STATE_DIR/spool
SlurmctldPidFile=$STATE_DIR/slurmctld.pidfile
SlurmdPidFile=$STATE_DIR/slurmd.pidfile
SlurmctldLogFile=$STATE_DIR/logs/slurmctld.log
SlurmdLogFile=$STATE_DIR/logs/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
MaxArraySize=10001
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

# Starts "$@" in the background, its output to logs/NAME.out, and records its PID.
spawn() {
    local name="$1"
    shift
    "$@" >"$STATE_DIR/logs/$name.out" 2>&1 &
    echo $! >"$STATE_DIR/$name.pid"
}

running() {
    local pidf="$STATE_DIR/$1.pid"
    [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null
}

cmd_start() {
    cmd_ensure
    for d in "${DAEMONS[@]}"; do
        running "$d" && die "$d already running (pid $(cat "$STATE_DIR/$d.pid")); stop first"
        # A PID file whose process is gone is left by a run that was killed
        # before it could stop the cluster; waiting would read it as a crash.
        if [ -f "$STATE_DIR/$d.pid" ]; then
            log "removing the stale PID file of $d (pid $(cat "$STATE_DIR/$d.pid"), not running)"
            rm -f "$STATE_DIR/$d.pid"
        fi
    done
    write_config
    local key="$STATE_DIR/munge/munge.key"
    [ -f "$key" ] || { dd if=/dev/urandom of="$key" bs=1024 count=1 status=none; chmod 400 "$key"; }
    # --force: munged refuses root-owned state and sockets without it.
    spawn munged munged --foreground --force --key-file="$key" --socket="$MUNGE_SOCKET" \
        --pid-file="$STATE_DIR/munge/munged.pid" --seed-file="$STATE_DIR/munge/seed" \
        --log-file="$STATE_DIR/logs/munged.log"
    wait_for "munge" test -S "$MUNGE_SOCKET"
    export SLURM_CONF="$CONF"
    # -D: foreground; -i: ignore state saved by an earlier cluster in this dir.
    spawn slurmctld slurmctld -D -i -f "$CONF"
    wait_for "slurmctld" scontrol ping
    spawn slurmd slurmd -D -f "$CONF"
    wait_for "an idle node" node_idle
    log "cluster up: $(sinfo -h -o '%P %D %t %c CPUs')"
    echo "export SLURM_CONF=$CONF"
}

node_idle() {
    sinfo -h -o '%t' 2>/dev/null | grep -qx 'idle'
}

# Waits up to 60 s for a command to succeed; shows the logs if it never does.
wait_for() {
    local what="$1" deadline=$((SECONDS + 60))
    shift
    until "$@" >/dev/null 2>&1; do
        for d in "${DAEMONS[@]}"; do
            if [ -f "$STATE_DIR/$d.pid" ] && ! running "$d"; then
                tail -n 20 "$STATE_DIR/logs/$d.out" "$STATE_DIR/logs/$d.log" 2>/dev/null >&2 || true
                die "$d exited while waiting for $what"
            fi
        done
        if [ "$SECONDS" -ge "$deadline" ]; then
            tail -n 20 "$STATE_DIR"/logs/*.log 2>/dev/null >&2 || true
            die "no $what after 60 s"
        fi
        sleep 0.2
    done
}

cmd_stop() {
    local d pid i
    # Reverse order: the node first, the controller, then authentication.
    for d in slurmd slurmctld munged; do
        [ -f "$STATE_DIR/$d.pid" ] || continue
        pid="$(cat "$STATE_DIR/$d.pid")"
        if kill -0 "$pid" 2>/dev/null; then
            log "stopping $d (pid $pid)"
            kill -TERM "$pid" 2>/dev/null || true
            for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
            kill -KILL "$pid" 2>/dev/null || true
        fi
        rm -f "$STATE_DIR/$d.pid"
    done
}

cmd_status() {
    local d
    for d in "${DAEMONS[@]}"; do
        if running "$d"; then echo "$d running pid=$(cat "$STATE_DIR/$d.pid")"; else echo "$d stopped"; fi
    done
    if running slurmctld; then SLURM_CONF="$CONF" sinfo; fi
}

case "${1:-}" in
    ensure) cmd_ensure ;;
    start) cmd_start ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    status) cmd_status ;;
    stop) cmd_stop ;;
    *) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
