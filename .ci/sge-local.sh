#!/usr/bin/env bash
# A one-node Grid Engine (SGE 8.1.9, Debian's gridengine) on this machine, to run the workflow through
# workflow/profiles/sge for real.
#
#   bash .ci/sge-local.sh start    install gridengine-master, -exec and -client if missing (root, apt), make
#                                  this host the master, an admin, submit and execution host, add the queue
#                                  all.q (this host's CPUs as slots) and the parallel environment smp, start
#                                  sge_qmaster and sge_execd
#   bash .ci/sge-local.sh status   qhost and qstat -f
#   bash .ci/sge-local.sh stop     stop the daemons that `start` started, by their pid files
#
# Exit codes: 0 ok; 3 Grid Engine cannot be set up here (not root, no apt, install failed) — tests skip on it.
# No systemd is needed: the daemons are started by hand. The host is called "localhost" throughout: its
# name (e.g. "vm") resolves to 127.0.0.1, whose name is localhost, and the qmaster refuses a client whose
# own name and resolved name differ; SGE's host_aliases file makes the two one host.
# The cell is configured for a test machine: jobs of root run (min_uid 0), no load threshold (a busy
# 2-core machine would put the queue in alarm and schedule nothing), a scheduling pass every second, and a
# finished job's accounting record written at once (qacct is how the profile's status.sh sees a job end).
# A cell this script did not configure (no $MARK in its host_aliases) is never changed.
set -euo pipefail

export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
COMMON=$SGE_ROOT/$SGE_CELL/common
STATE=/run/tokenmill-sge            # pid files of the daemons this script started
MARK="# written by tokenmill .ci/sge-local.sh"
HOST=localhost
QMASTER_PID=/var/spool/gridengine/qmaster/qmaster.pid     # where the daemons write them (bootstrap's spool dirs)
LOG=/tmp/sge-local.log             # qconf's output
EXECD_PID=/var/spool/gridengine/execd/$HOST/execd.pid

unavailable() { echo "sge-local: $*" >&2; exit 3; }

. "$(dirname "$0")/daemons.sh"

install_sge() {
    command -v qsub >/dev/null && [[ -x /usr/sbin/sge_qmaster && -x /usr/sbin/sge_execd ]] && return
    [[ $(id -u) == 0 ]] || unavailable "Grid Engine is not installed and installing it needs root"
    command -v apt-get >/dev/null || unavailable "Grid Engine is not installed and there is no apt-get to install it"
    # postinst makes the cell (spool, global configuration, complexes) for the master named here
    echo "gridengine-common shared/gridenginemaster string $HOST" | debconf-set-selections
    apt_install /tmp/sge-local-apt.log gridengine-master gridengine-exec gridengine-client \
        || unavailable "apt-get install gridengine-master gridengine-exec gridengine-client failed (/tmp/sge-local-apt.log)"
}

wait_for() {  # wait_for SECONDS COMMAND...: until the command succeeds
    local tries=$(($1 * 5)); shift
    for _ in $(seq "$tries"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
    return 1
}

q() {  # qconf, its chatter (on stderr, even when it succeeds) kept in the log
    qconf "$@" >>"$LOG" 2>&1 || unavailable "qconf $* failed: $(tail -1 "$LOG")"
}

configure() {  # once per cell: the hosts, the queue, the PE, the scheduler and global settings
    local spec
    spec=$(mktemp -d)
    q -as "$HOST"
    printf '%s\n' "hostname $HOST" "load_scaling NONE" "complex_values NONE" "user_lists NONE" \
        "xuser_lists NONE" "projects NONE" "xprojects NONE" "usage_scaling NONE" "report_variables NONE" \
        > "$spec/exechost"
    qconf -se "$HOST" >/dev/null 2>&1 || q -Ae "$spec/exechost"
    printf '%s\n' "pe_name smp" "slots 9999" "user_lists NONE" "xuser_lists NONE" "start_proc_args NONE" \
        "stop_proc_args NONE" "allocation_rule \$pe_slots" "control_slaves FALSE" "job_is_first_task TRUE" \
        "urgency_slots min" "accounting_summary FALSE" "qsort_args NONE" > "$spec/pe"
    qconf -sp smp >/dev/null 2>&1 || q -Ap "$spec/pe"
    qconf -sq | sed -e 's/^qname .*/qname all.q/' -e "s/^hostlist .*/hostlist $HOST/" \
        -e 's/^load_thresholds .*/load_thresholds NONE/' -e "s/^slots .*/slots $(nproc)/" \
        -e 's/^pe_list .*/pe_list smp/' -e 's/^shell_start_mode .*/shell_start_mode unix_behavior/' > "$spec/queue"
    qconf -sq all.q >/dev/null 2>&1 || q -Aq "$spec/queue"
    qconf -ssconf | sed -e 's/^schedule_interval .*/schedule_interval 0:0:1/' \
        -e 's/^flush_submit_sec .*/flush_submit_sec 1/' -e 's/^flush_finish_sec .*/flush_finish_sec 1/' \
        -e 's/^job_load_adjustments .*/job_load_adjustments NONE/' > "$spec/sconf"
    q -Msconf "$spec/sconf"
    qconf -sconf | sed -e '1d' -e 's/^min_uid .*/min_uid 0/' -e 's/^min_gid .*/min_gid 0/' \
        -e 's/^load_report_time .*/load_report_time 00:00:05/' \
        -e 's/ flush_time=[0-9:]*/ flush_time=00:00:15 accounting_flush_time=00:00:00/' > "$spec/global"
    q -Mconf "$spec/global"
    rm -r "$spec"
}

start() {
    [[ $(id -u) == 0 ]] || unavailable "starting the Grid Engine daemons needs root"
    install_sge
    if [[ -s $COMMON/host_aliases ]] && ! grep -qF "$MARK" "$COMMON/host_aliases"; then
        unavailable "$COMMON/host_aliases exists and was not written by this script: refusing to change the cell"
    fi
    local fresh=0
    [[ -s $COMMON/host_aliases ]] || fresh=1
    printf '%s\n%s\n' "$MARK" "$HOST $(hostname)" > "$COMMON/host_aliases"
    echo "$HOST" > "$COMMON/act_qmaster"
    mkdir -p "$STATE" /var/spool/gridengine/execd
    chown sgeadmin:sgeadmin /var/spool/gridengine/execd
    if ! running "$STATE/qmaster.pid"; then
        rm -f "$QMASTER_PID"
        /usr/sbin/sge_qmaster  # daemonizes
        wait_for 10 test -s "$QMASTER_PID" || unavailable "sge_qmaster did not start"
        cp "$QMASTER_PID" "$STATE/qmaster.pid"
    fi
    wait_for 20 qconf -sh || unavailable "the qmaster does not answer: $(qconf -sh 2>&1 | head -1)"
    [[ $fresh == 0 ]] && qconf -sq all.q >/dev/null 2>&1 || configure
    if ! running "$STATE/execd.pid"; then
        rm -f "$EXECD_PID"
        /usr/sbin/sge_execd  # daemonizes
        wait_for 10 test -s "$EXECD_PID" || unavailable "sge_execd did not start"
        cp "$EXECD_PID" "$STATE/execd.pid"
    fi
    # the queue instance is usable once the execd has reported its load (no "au" state)
    wait_for 60 bash -c "qstat -f -q all.q 2>/dev/null | awk '/^all.q@/ && NF == 5' | grep -q ." \
        || unavailable "the queue did not come up: $(qstat -f 2>&1 | tail -2)"
    echo "sge-local: up — one host, $(nproc) slots in all.q, parallel environment smp"
}

stop() {
    stop_daemon execd
    stop_daemon qmaster 60  # it takes ~9 s to shut down
    echo "sge-local: stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) qhost && qstat -f ;;
    *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
