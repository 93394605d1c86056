# Shared by slurm-local.sh and sge-local.sh (sourced): installing Debian's packages, and the daemons that a
# script started, known by the pid files it keeps in $STATE.

apt_install() {  # apt_install LOG PACKAGE...: install, after an apt-get update where the lists are stale
    local log=$1
    shift
    export DEBIAN_FRONTEND=noninteractive
    # the SLURM and Grid Engine tests may install at once: the second waits for dpkg's lock, not fails on it
    apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "$@" >"$log" 2>&1 && return
    apt-get -o DPkg::Lock::Timeout=600 update >>"$log" 2>&1 || true
    apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "$@" >>"$log" 2>&1
}

alive() {  # a zombie (a stopped daemon that PID 1 of a sandbox never reaps) is not alive
    [[ -r /proc/$1/stat ]] && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]
}

running() { [[ -s $1 ]] && alive "$(cat "$1")"; }

stop_daemon() {  # stop_daemon NAME [SECONDS]: the daemon whose pid is in $STATE/NAME.pid, waited for (10 s)
    local pid_file=$STATE/$1.pid pid
    running "$pid_file" || { rm -f "$pid_file"; return 0; }
    pid=$(cat "$pid_file")
    kill "$pid"
    for _ in $(seq $((${2:-10} * 10))); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && { echo "$1 (pid $pid) has not stopped after ${2:-10} s" >&2; return 1; }
    rm -f "$pid_file"
}
