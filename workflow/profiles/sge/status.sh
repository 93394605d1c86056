#!/usr/bin/env bash
# Job status for snakemake-executor-plugin-cluster-generic on Grid Engine (SGE, SoGE, OGS, UGE):
# `status.sh JOB_ID` prints running, success or failed.
#   - qstat knows the job (among this user's, not the whole cluster's: it runs once per job and check): running
#     (pending, held, transferring, running), or failed in an error state (E);
#   - else qacct knows it: success where it ran and exited 0 (failed 0, exit_status 0), else failed
#     (killed for h_rt or h_vmem, or a non-zero exit);
#   - else running: the job has left qstat and its record is not yet in the accounting file (the qmaster
#     writes it every accounting_flush_time seconds). Where accounting is off (reporting_params
#     accounting=false), a finished job stays "running" for ever: turn it on, or drop the status command
#     from the profile and let Snakemake watch its own marker files (a job the scheduler kills is then
#     never seen to end).
set -uo pipefail
job=${1:?usage: status.sh JOB_ID}
if states=$(qstat -u "$(id -un)" 2>/dev/null | awk -v id="$job" '$1 == id {print $5}') && [[ -n $states ]]; then
    [[ $states == *E* ]] && echo failed || echo running
    exit 0
fi
if accounting=$(qacct -j "$job" 2>/dev/null); then
    awk '$1 == "failed" {failed = $2} $1 == "exit_status" {status = $2}
         END {print (failed == "0" && status == "0") ? "success" : "failed"}' <<<"$accounting"
    exit 0
fi
echo running
