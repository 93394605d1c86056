#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, to run the workflow through workflow/profiles/slurm for real.
#
#   bash .ci/slurm-local.sh start    install Debian's slurm-wlm + munge if missing (root, apt), write
#                                    /etc/slurm/slurm.conf for this node, start munged, slurmctld, slurmd
#   bash .ci/slurm-local.sh status   sinfo and squeue
#   bash .ci/slurm-local.sh stop     stop the daemons that `start` started, by their pid files
#
# Exit codes: 0 ok; 3 SLURM cannot be set up here (not root, no apt, install failed) — tests skip on it.
# No systemd and no cgroups are needed: the daemons are started by hand, with proctrack/linuxproc.
# Without slurmdbd there is no `sacct`: the profile polls job states with `squeue`, which sees a
# finished job for MinJobAge (300 s) seconds. A slurm.conf not written by this script is never replaced.
set -euo pipefail

STATE=/run/tokenmill-slurm          # pid files of the daemons this script started
CONF=/etc/slurm/slurm.conf
MARK="# written by tokenmill .ci/slurm-local.sh"

unavailable() { echo "slurm-local: $*" >&2; exit 3; }

. "$(dirname "$0")/daemons.sh"

install_slurm() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
        && command -v munged >/dev/null && return
    [[ $(id -u) == 0 ]] || unavailable "SLURM is not installed and installing it needs root"
    command -v apt-get >/dev/null || unavailable "SLURM is not installed and there is no apt-get to install it"
    apt_install /tmp/slurm-local-apt.log slurmctld slurmd slurm-client munge \
        || unavailable "apt-get install slurmctld slurmd slurm-client munge failed (/tmp/slurm-local-apt.log)"
}

write_conf() {
    if [[ -e $CONF ]] && ! grep -qF "$MARK" "$CONF"; then
        unavailable "$CONF exists and was not written by this script: refusing to replace it"
    fi
    local cpus memory_mb
    cpus=$(nproc)
    memory_mb=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.85}' /proc/meminfo)  # must not exceed the real RAM
    mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
    cat > "$CONF" <<EOF
$MARK
ClusterName=local
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SchedulerType=sched/backfill
MinJobAge=300
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
    install_slurm
    [[ $(id -u) == 0 ]] || unavailable "starting the SLURM daemons needs root"
    mkdir -p "$STATE"
    write_conf
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    if [[ ! -s /etc/munge/munge.key ]]; then
        mungekey --create --keyfile=/etc/munge/munge.key
        chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    fi
    if ! running "$STATE/munged.pid"; then
        rm -f /run/munge/munged.pid
        runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid  # it refuses to run as root
        for _ in $(seq 50); do [[ -s /run/munge/munged.pid ]] && break; sleep 0.1; done
        cp /run/munge/munged.pid "$STATE/munged.pid"
    fi
    munge -n | unmunge >/dev/null || unavailable "munge does not work"
    running "$STATE/slurmctld.pid" || /usr/sbin/slurmctld
    running "$STATE/slurmd.pid" || /usr/sbin/slurmd -N localhost  # the node is "localhost", whatever the hostname
    for _ in $(seq 100); do
        sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)' && break
        sinfo -h -o %t 2>/dev/null | grep -qE 'drain|down' && scontrol update NodeName=localhost State=RESUME
        sleep 0.3
    done
    sinfo -h -o %t | grep -qE '^(idle|mix|alloc)' || unavailable "the node did not come up: $(sinfo -h 2>&1)"
    echo "slurm-local: up — one node, $(nproc) CPUs, partition debug"
}

stop() {
    stop_daemon slurmd
    stop_daemon slurmctld
    stop_daemon munged
    echo "slurm-local: stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) sinfo && squeue ;;
    *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
