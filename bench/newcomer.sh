#!/usr/bin/env bash
# A newcomer's first hour, scripted (issue 23): a fresh clone, the README's demo command, then a corpus
# of one's own in a data folder outside the clone, checked item by item against what issue 23 found.
#
#   bash bench/newcomer.sh [SCRATCH]      # default /tmp/tokenmill-newcomer; ~2 min on 2 cores
#
# Prints one `PASS item N: ...`, `FAIL item N: ...` or `SKIP item N: ...` line per check (and a
# `PASS set-up` line), and exits 1 if any check failed. Everything happens under SCRATCH: the clone
# this script lives in is only read (`git clone` takes its committed HEAD, not the working tree).
#
#   SCRATCH/clone      git clone of this repository; the README's demo command runs in it (.venv)
#   SCRATCH/fakebin    a fake `scontrol` that sleeps 9 s, first on PATH for the whole run: a SLURM
#                      client with no controller answering, as on the machines of item 7
#   SCRATCH/mydata     the newcomer's own data folder: raw/a.jsonl (200 demo lines), raw/b.jsonl.gz (100
#                      more, gzipped), tokenizers/, my.yaml; built with -s CLONE/Snakefile from inside it
#   SCRATCH/elsewhere  a third directory, where inspect, verify and the library run from
#   SCRATCH/copy       workflow/ + Snakefile + config/ copied with plain `cp -r` (item 8)
#   SCRATCH/pty        36 MB packed in a pseudo-terminal that reports 0 x 0 (item 6's progress bar)
#   SCRATCH/logs       every command's output
#
# Item 9 (wording) is covered by the test suite and not repeated here.
set -euo pipefail

scratch=$(realpath -m "${1:-/tmp/tokenmill-newcomer}")
repo=$(cd "$(dirname "$0")/.." && pwd)

# rm -rf only a folder this script made before (it leaves a marker), never an arbitrary one.
if [ -e "$scratch" ] && [ ! -e "$scratch/.tokenmill-newcomer" ]; then
    echo "bench/newcomer.sh: $scratch exists and was not made by this script; remove it or name another" >&2
    exit 2
fi
case "$repo/" in "$scratch"/*) echo "bench/newcomer.sh: $scratch holds this clone" >&2; exit 2 ;; esac
rm -rf "$scratch"
mkdir -p "$scratch/logs" "$scratch/fakebin" "$scratch/elsewhere"
touch "$scratch/.tokenmill-newcomer"
clone=$scratch/clone data=$scratch/mydata logs=$scratch/logs elsewhere=$scratch/elsewhere

failures=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
skip() { echo "SKIP $*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
below() { awk -v t="$1" -v limit="$2" 'BEGIN { exit !(t < limit) }'; }
# The one line of a file (empty if it has none or several): "one line" is checked by comparing with it.
only_line() { [ "$(wc -l < "$1")" -eq 1 ] && cat "$1" || true; }

# A SLURM client whose controller does not answer: `scontrol show config` waits ~9 s, which the
# SLURM executor plugin's import used to add to every snakemake start (item 7). It logs each call.
cat > "$scratch/fakebin/scontrol" <<EOF
#!/usr/bin/env bash
echo "scontrol \$*" >> "$scratch/fakebin/calls"
sleep 9
echo "slurm_load_ctl_conf error: Unable to contact slurm controller (connect failure)" >&2
exit 1
EOF
chmod +x "$scratch/fakebin/scontrol"
: > "$scratch/fakebin/calls"
unset VIRTUAL_ENV SNAKEMAKE_PROFILE PYTHONPATH
export PATH="$scratch/fakebin:$PATH"

# ---- set-up: a fresh clone and the README's demo command, verbatim -----------------------------------
setup() {
    git clone --quiet "$repo" "$clone"
    # The command the README shows, extracted as .ci/run extracts the test command, so the two cannot drift.
    local demo_command
    demo_command=$(awk '/<!-- demo-command -->/ {found=1; next} found && /^```bash/ {inside=1; next}
                        inside && /^```/ {exit} inside {print}' "$clone/README.md")
    if [ -z "$demo_command" ]; then
        fail "set-up: no command after <!-- demo-command --> in README.md"
        exit 1
    fi
    local start rc=0
    start=$(now)
    (cd "$clone" && bash -euo pipefail -c "$demo_command") > "$logs/demo.log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
        fail "set-up: the README's demo command exited $rc (tail of $logs/demo.log below)"
        tail -20 "$logs/demo.log"
        exit 1
    fi
    pass "set-up: clone of $(git -C "$clone" rev-parse --short HEAD), README demo command in $(since "$start") s: $demo_command"
    # From here on, the demo's venv is the newcomer's (after the fake scontrol on PATH).
    export PATH="$scratch/fakebin:$clone/.venv/bin:${PATH#"$scratch/fakebin:"}"
}

# ---- item 7: snakemake starts in < 3 s in the README's venv, with a SLURM client and no controller ------
item7() {
    [ "$(command -v scontrol)" = "$scratch/fakebin/scontrol" ] || { fail "item 7: the fake scontrol is not first on PATH"; return; }
    [ "$(command -v snakemake)" = "$clone/.venv/bin/snakemake" ] || { fail "item 7: snakemake is not the demo venv's"; return; }
    : > "$scratch/fakebin/calls"
    local start version_s dry_s rc=0
    start=$(now)
    (cd "$clone" && snakemake --version) > "$logs/item7-version.log" 2>&1 || rc=$?
    version_s=$(since "$start")
    start=$(now)
    (cd "$clone" && snakemake -n --cores 2) > "$logs/item7-dry-run.log" 2>&1 || rc=$?
    dry_s=$(since "$start")
    local plugin=absent
    pip show snakemake-executor-plugin-slurm > /dev/null 2>&1 && plugin=installed
    if [ "$rc" -ne 0 ]; then
        fail "item 7: snakemake --version / -n failed in the demo venv ($logs/item7-*.log)"
    elif below "$version_s" 3 && below "$dry_s" 3 && [ "$plugin" = absent ]; then
        pass "item 7: snakemake --version ${version_s} s, -n ${dry_s} s (< 3 s) with a 9 s scontrol first on PATH; SLURM plugin $plugin, scontrol called $(wc -l < "$scratch/fakebin/calls") times"
    else
        fail "item 7: snakemake --version ${version_s} s, -n ${dry_s} s (limit 3 s); SLURM plugin $plugin in the demo venv, scontrol called $(wc -l < "$scratch/fakebin/calls") times"
    fi
}

# ---- item 8: the schema is a real file, and a plain `cp -r` of the workflow runs -------------------------
item8() {
    local schema=$clone/workflow/schemas/config.schema.yaml links
    if [ -L "$schema" ] || [ ! -f "$schema" ]; then
        fail "item 8: $schema is not a regular file ($(ls -l "$schema" 2>&1))"
        return
    fi
    links=$(cd "$clone" && find Snakefile workflow config -type l)
    [ -z "$links" ] || { fail "item 8: symlinks a copy without -L breaks: $links"; return; }
    # What cluster staging does: copy the workflow and its config, no -L, with the demo's inputs.
    mkdir -p "$scratch/copy/data"
    cp -r "$clone/Snakefile" "$clone/workflow" "$clone/config" "$scratch/copy/"
    cp -r "$clone/data/raw" "$clone/data/tokenizers" "$scratch/copy/data/"
    local rc=0
    (cd "$scratch/copy" && snakemake -n --cores 2) > "$logs/item8-copy.log" 2>&1 || rc=$?
    # Snakemake's job table ends with "total N": the demo's jobs, planned in the copy.
    local planned
    planned=$(awk '$1 == "total" && $2 ~ /^[0-9]+$/ {print $2; exit}' "$logs/item8-copy.log")
    if [ "$rc" -eq 0 ] && [ "${planned:-0}" -gt 1 ] && ! grep -q "FileNotFoundError" "$logs/item8-copy.log"; then
        pass "item 8: config.schema.yaml is a regular file; a cp -r copy of workflow/, Snakefile and config/ plans $planned jobs with snakemake -n"
    else
        fail "item 8: snakemake -n in a cp -r copy exited $rc: $(grep -m1 -iE 'error|exception' "$logs/item8-copy.log" || tail -1 "$logs/item8-copy.log")"
    fi
}

# ---- the newcomer's own corpus, in a data folder outside the clone --------------------------------------
make_data() {
    mkdir -p "$data/raw" "$data/tokenizers"
    head -n 200 "$clone/data/raw/demo.jsonl" > "$data/raw/a.jsonl"
    sed -n '201,300p' "$clone/data/raw/demo.jsonl" | gzip -c > "$data/raw/b.jsonl.gz"
    cp "$clone/data/tokenizers/gpt2.tokenizer.json" "$data/tokenizers/"
    # Paths relative to the data folder; the job spells --data-path /data/megatron/... (item 2).
    cat > "$data/my.yaml" <<'YAML'
tokenizers:
  gpt2: {path: tokenizers/gpt2.tokenizer.json, eod: "<|endoftext|>"}
datasets:
  mycorpus:
    inputs: [raw/a.jsonl, raw/b.jsonl.gz]
    tokenizer: gpt2
sampling:
  seq_lengths: [256]
  seeds: [7]
  split: "90,8,2"               # 300 documents: Megatron's 969,30,1 leaves the test split none
  num_samples: {train: 200, valid: 20, test: 5}
  megatron_path_prefix: "/data/megatron/"
YAML
}

# README "Your own corpus" step 2 with "Outputs outside the clone": the default profile, from the data folder.
build() {
    local start rc=0
    start=$(now)
    (cd "$data" && snakemake -s "$clone/Snakefile" --profile "$clone/workflow/profiles/default" \
        --configfile my.yaml --cores 2) > "$logs/build.log" 2>&1 || rc=$?
    build_s=$(since "$start")
    if [ "$rc" -ne 0 ] || [ ! -s "$data/data/packed/mycorpus.pbin" ]; then
        fail "item 4: snakemake -s CLONE/Snakefile --configfile my.yaml from the data folder exited $rc: $(grep -m1 -i error "$logs/build.log" || tail -1 "$logs/build.log")"
        return 1
    fi
    # Outputs go to the working directory (the data folder), none into the clone beside the Snakefile.
    local strays
    strays=$(find "$clone" -path "$clone/.git" -prune -o -name '*mycorpus*' -print | head -3)
    if [ -n "$strays" ]; then
        fail "item 4: the data folder's build wrote into the clone: $strays"
        return 1
    fi
    pass "item 4: built my.yaml from $data with -s $clone/Snakefile in $build_s s; outputs in the data folder, none in the clone"
}

# ---- item 6: the default profile's output: short, no shell commands, one line per job, a summary --------
item6() {
    local out=$logs/build.log lines jobs messages without_log missing_logs=""
    lines=$(wc -l < "$out")
    # Snakemake's last progress line, "N of N steps (100%) done": the jobs this run ran, `all` included.
    jobs=$(grep -oE '^[0-9]+ of [0-9]+ steps' "$out" | tail -1 | awk '{print $3}' || true)
    messages=$(grep -cE '^Job [0-9]+: ' "$out" || true)
    without_log=$(grep -E '^Job [0-9]+: ' "$out" | grep -vE '\(log: logs/[^ )]+\)' | grep -v 'every file of the config' || true)
    for log in $(grep -oE '\(log: logs/[^ )]+\)' "$out" | sed -E 's/^\(log: //; s/\)$//'); do
        [ -f "$data/$log" ] || missing_logs+=" $log"
    done
    # The summary ends the output: its first line names the dataset and the config, then "Next:".
    local summary_at next_at
    summary_at=$(grep -nE '^tokenmill: 1 dataset of my.yaml in ' "$out" | tail -1 | cut -d: -f1 || true)
    next_at=$(grep -n '^Next:' "$out" | tail -1 | cut -d: -f1 || true)
    local problems=()
    [ -n "$jobs" ] || problems+=("no 'N of N steps' line in the output")
    [ "${messages:-0}" -eq "${jobs:-x}" ] 2>/dev/null || problems+=("$messages one-line job messages for ${jobs:-?} jobs")
    [ -z "$without_log" ] || problems+=("job messages without their log: $(echo "$without_log" | head -2 | tr '\n' '|')")
    [ -z "$missing_logs" ] || problems+=("logs named but absent:$missing_logs")
    # A job printed as Snakemake's multi-line block (rule X: / input: / output: / log: / jobid:).
    if grep -qE '^\s+(jobid|output): ' "$out"; then
        problems+=("multi-line rule blocks, e.g. '$(grep -m1 -E '^(local)?rule ' "$out")'")
    fi
    # The rules' shell commands (the summary's own next commands, after summary_at, are meant to be there).
    local shell_lines
    shell_lines=$(head -n "$(( ${summary_at:-$lines} - 1 ))" "$out" \
        | grep -cE 'tokenmill (pack|index|merge|to-megatron|sample-index|blend|verify|report) ' || true)
    [ "$shell_lines" -eq 0 ] || problems+=("$shell_lines shell command lines printed")
    if [ -z "$summary_at" ] || [ -z "$next_at" ] || [ $((lines - summary_at)) -gt 25 ]; then
        problems+=("no one-screen summary at the end (summary line ${summary_at:-none}, Next: ${next_at:-none}, of $lines)")
    elif ! sed -n "${summary_at},\$p" "$out" | grep -q 'data/packed/mycorpus.pbin'; then
        problems+=("the summary does not name data/packed/mycorpus.pbin")
    fi
    # The progress bar on a terminal that reports 0 x 0 (many containers and CI runners): drawn, with the
    # document count. tqdm redraws at most every 0.1 s, so the input must take a second: 36 MB, the demo x 10.
    mkdir -p "$scratch/pty"
    for _ in 1 2 3 4 5 6 7 8 9 10; do cat "$clone/data/raw/demo.jsonl"; done > "$scratch/pty/big.jsonl"
    (cd "$scratch/pty" && script -qec "stty rows 0 cols 0; tokenmill pack big.jsonl --tokenizer $data/tokenizers/gpt2.tokenizer.json --eod '<|endoftext|>' -o big.pbin" /dev/null) \
        > "$logs/item6-pty.log" 2>&1 || problems+=("pack in a 0x0 pty failed ($logs/item6-pty.log)")
    local bar
    bar=$(tr '\r' '\n' < "$logs/item6-pty.log" | grep -aE '^pack big\.jsonl: +[0-9]+%\|.*, [0-9,]+ docum' | tail -1 || true)
    [ -n "$bar" ] || problems+=("no progress bar with a document count in a 0x0 pty ($logs/item6-pty.log)")
    if [ ${#problems[@]} -eq 0 ]; then
        pass "item 6: default profile: $lines lines for $jobs jobs, each job one line naming its log, no shell commands, summary in the last $((lines - summary_at + 1)) lines; a 0x0 pty draws the bar: '$bar'"
    else
        fail "item 6: $lines lines of output: $(IFS=';'; echo "${problems[*]}")"
    fi
}

# The datasets a Snakemake report's front page lists (workflow/report/workflow.rst, rendered into the
# report's JSON: "...made with: datasets\n<strong>demo</strong>"), or nothing.
report_datasets() {
    [ -f "$1" ] || return 0
    grep -oE 'made with: datasets(\\n|[[:space:]])*<strong>[^<]*</strong>' "$1" | head -1 \
        | sed -E 's/.*<strong>(.*)<\/strong>/\1/' || true
}

# ---- item 1: the report command the summary printed reports my.yaml's dataset, not the demo ------------
item1() {
    local line command rc=0
    line=$(grep -- '--report report.html' "$logs/build.log" | tail -1 || true)
    command=$(echo "$line" | sed -E 's/^ +//; s/ +# .*$//')
    if [ -z "$command" ] || [[ "$command" != *"--configfile my.yaml"* ]] || [[ "$command" != *"-s $clone/Snakefile"* ]]; then
        fail "item 1: the summary's report command lacks -s CLONE/Snakefile or --configfile my.yaml: '${command:-none printed}'"
        return
    fi
    (cd "$data" && bash -c "$command") > "$logs/item1-report.log" 2>&1 || rc=$?
    local report=$data/report.html
    if [ "$rc" -ne 0 ] || [ ! -s "$report" ]; then
        fail "item 1: '$command' exited $rc ($logs/item1-report.log)"
        return
    fi
    # The front page names the config's datasets ("datasets <strong>a, b</strong>"); each has a page
    # data/report/<build>.html labelled with its dataset.
    local listed problems=()
    listed=$(report_datasets "$report")
    [ "$listed" = mycorpus ] || problems+=("the front page lists datasets '$listed', not 'mycorpus'")
    grep -q '"labels": {"dataset": "mycorpus"' "$report" || problems+=("no page labelled dataset mycorpus")
    ! grep -qE 'data/report/demo\.html|"dataset": "demo"' "$report" || problems+=("a page of dataset demo")
    # Control: the same reading of the demo's report (the clone's build, reported without --configfile,
    # as the newcomer of the issue did) finds demo, so the check above tells the two apart.
    (cd "$clone" && snakemake --report demo-report.html) > "$logs/item1-demo-report.log" 2>&1 || true
    local control
    control=$(report_datasets "$clone/demo-report.html")
    [ "$control" = demo ] || problems+=("control: the demo's report reads as '$control', not 'demo'")
    if [ ${#problems[@]} -eq 0 ]; then
        pass "item 1: the summary's '$command' reports datasets '$listed' (its pages too), no demo; the demo's report, read alike, lists '$control'"
    else
        fail "item 1: '$command': $(IFS=';'; echo "${problems[*]}")"
    fi
}

# ---- item 4: inspect and verify give the same answers from any directory -------------------------------
item4() {
    local pbin=$data/data/packed/mycorpus.pbin cache=$data/data/cache/mycorpus/seq256_seed7 rc=0
    # Document 3 is line 4 of raw/a.jsonl; inspect shows its text JSON-escaped.
    local expected
    expected=$(python -c 'import json, sys; line = open(sys.argv[1], encoding="utf-8").readlines()[3]
print(json.dumps(json.loads(line)["text"], ensure_ascii=False)[1:41])' "$data/raw/a.jsonl")
    (cd "$elsewhere" && tokenmill inspect "$pbin" --doc 3) > "$logs/item4-inspect-elsewhere.log" 2>&1 || rc=$?
    (cd "$data" && tokenmill inspect data/packed/mycorpus.pbin --doc 3) > "$logs/item4-inspect-data.log" 2>&1 || rc=$?
    (cd "$scratch" && tokenmill inspect mydata/data/packed/mycorpus.pbin --doc 3) > "$logs/item4-inspect-scratch.log" 2>&1 || rc=$?
    local text problems=()
    text=$(grep -m1 '^text: ' "$logs/item4-inspect-elsewhere.log" || true)
    [ "$rc" -eq 0 ] || problems+=("inspect exited $rc")
    [[ "$text" == "text: $expected"* ]] || problems+=("from $elsewhere: '${text:-no text: line}' is not line 4's text")
    grep -qE 'a\.jsonl.*line 4' "$logs/item4-inspect-elsewhere.log" || problems+=("document 3 not traced to a.jsonl line 4")
    for where in data scratch; do
        diff <(grep -E '^(document|ids|text):' "$logs/item4-inspect-elsewhere.log") \
             <(grep -E '^(document|ids|text):' "$logs/item4-inspect-$where.log") > /dev/null \
            || problems+=("inspect from $where differs from inspect from elsewhere")
    done
    # verify re-encodes every document from the sidecar's inputs and tokenizer: paths resolved from the sidecar.
    rc=0
    (cd "$elsewhere" && tokenmill verify "$pbin" "$data/data/megatron/mycorpus_text_document" "$cache" \
        --against-tokenizer 1.0) > "$logs/item4-verify.log" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] && grep -q 'no problem found' "$logs/item4-verify.log" \
        || problems+=("verify from elsewhere: $(tail -1 "$logs/item4-verify.log")")
    # The README's --directory form, from a third directory, sees the same build: nothing to do.
    rc=0
    (cd "$elsewhere" && snakemake -s "$clone/Snakefile" --directory "$data" --configfile "$data/my.yaml" -n) \
        > "$logs/item4-directory.log" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] && grep -q 'Nothing to be done' "$logs/item4-directory.log" \
        || problems+=("snakemake --directory DATA -n from elsewhere exited $rc: $(grep -m1 -E 'rule|rror' "$logs/item4-directory.log")")
    if [ ${#problems[@]} -eq 0 ]; then
        pass "item 4: inspect --doc 3 from 3 directories shows line 4's text ('${text:6:40}...'); verify --against-tokenizer 1.0 from elsewhere passes; --directory -n from elsewhere: nothing to do"
    else
        fail "item 4: $(IFS=';'; echo "${problems[*]}")"
    fi
}

# ---- item 3: a misspelt key, and a wrong path: one stderr line naming the file and the key --------------
item3() {
    local problems=()
    sed 's/    tokenizer: gpt2/    tokenizer: gpt2\n    on_bad_lines: skip/' "$data/my.yaml" > "$data/typo.yaml"
    sed 's#tokenizers/gpt2.tokenizer.json#tokenizers/gtp2.tokenizer.json#' "$data/my.yaml" > "$data/wrongpath.yaml"
    grep -q 'on_bad_lines: skip' "$data/typo.yaml" || { fail "item 3: could not write typo.yaml"; return; }
    local rc=0 line
    (cd "$data" && snakemake -s "$clone/Snakefile" --configfile typo.yaml -n) \
        > "$logs/item3-typo.out" 2> "$logs/item3-typo.err" || rc=$?
    line=$(only_line "$logs/item3-typo.err")
    [ "$rc" -ne 0 ] || problems+=("typo.yaml was accepted")
    [ -n "$line" ] || problems+=("$(wc -l < "$logs/item3-typo.err") stderr lines for the typo")
    [[ "$line" == *typo.yaml* && "$line" == *datasets.mycorpus* && "$line" == *"'on_bad_lines'"* \
        && "$line" == *"did you mean 'on_bad_line'"* ]] || problems+=("typo line lacks file/key/suggestion: '$line'")
    ! grep -q Traceback "$logs/item3-typo.err" "$logs/item3-typo.out" || problems+=("a traceback for the typo")
    rc=0
    (cd "$data" && snakemake -s "$clone/Snakefile" --configfile wrongpath.yaml -n) \
        > "$logs/item3-path.out" 2> "$logs/item3-path.err" || rc=$?
    local path_line
    path_line=$(only_line "$logs/item3-path.err")
    [ "$rc" -ne 0 ] || problems+=("wrongpath.yaml was accepted")
    [[ "$path_line" == *wrongpath.yaml* && "$path_line" == *tokenizers.gpt2* && "$path_line" == *gtp2.tokenizer.json* ]] \
        || problems+=("wrong path: $(wc -l < "$logs/item3-path.err") stderr lines, first '$(head -1 "$logs/item3-path.err")'")
    if [ ${#problems[@]} -eq 0 ]; then
        pass "item 3: one stderr line each, no traceback: '$line' / '$path_line'"
    else
        fail "item 3: $(IFS=';'; echo "${problems[*]}")"
    fi
}

# ---- item 5: pack refuses to run without an EOD choice; --no-eod is said by inspect and verify ----------
item5() {
    local problems=() rc=0 line out=$scratch/noeod.pbin
    (cd "$elsewhere" && tokenmill pack "$data/raw/a.jsonl" --tokenizer "$data/tokenizers/gpt2.tokenizer.json" -o "$out") \
        > "$logs/item5-pack.out" 2> "$logs/item5-pack.err" || rc=$?
    line=$(only_line "$logs/item5-pack.err")
    [ "$rc" -ne 0 ] || problems+=("pack without --eod succeeded")
    [ ! -e "$out" ] || problems+=("pack without --eod wrote $out")
    [[ "$line" == *--eod* && "$line" == *--no-eod* ]] || problems+=("not one line naming --eod and --no-eod: '$(head -2 "$logs/item5-pack.err" | tr '\n' '|')'")
    # The explicit choice works and is visible afterwards.
    rc=0
    (cd "$elsewhere" && tokenmill pack "$data/raw/a.jsonl" --tokenizer "$data/tokenizers/gpt2.tokenizer.json" --no-eod -o "$out" \
        && tokenmill inspect "$out" && tokenmill verify "$out") > "$logs/item5-no-eod.log" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || problems+=("pack/inspect/verify with --no-eod exited $rc")
    grep -qiE 'eod:? none' "$logs/item5-no-eod.log" || problems+=("inspect does not show eod none")
    grep -q 'warning: packed without an EOD' "$logs/item5-no-eod.log" || problems+=("verify does not warn about the missing EOD")
    if [ ${#problems[@]} -eq 0 ]; then
        pass "item 5: pack without --eod refused in one line: '$line'; --no-eod shown by inspect and warned by verify"
    else
        fail "item 5: $(IFS=';'; echo "${problems[*]}")"
    fi
}

# ---- item 2: a Nanoset with another spelling of the dataset path warns; verify flags the second cache -----
item2() {
    if ! pip show torch > /dev/null 2>&1; then
        # The CPU build .[test] pins (pip finds it on this project's machines); an unpinned torch pulls GBs of CUDA.
        local start rc=0
        start=$(now)
        timeout 300 pip install --quiet 'torch==2.13.0' > "$logs/item2-torch.log" 2>&1 || rc=$?
        if [ "$rc" -ne 0 ]; then
            skip "item 2: torch is not in the demo venv and 'pip install torch==2.13.0' did not install it within 300 s (exit $rc, $logs/item2-torch.log)"
            return
        fi
        echo "     (torch installed into the newcomer venv in $(since "$start") s for item 2)"
    fi
    local cache=$data/data/cache/mycorpus/seq256_seed7 before after rc=0
    before=$(find "$cache" -type f | wc -l)
    # From a third directory, with the workflow's caches spelled /data/megatron/mycorpus_text_document:
    # first as the job spells it (the caches are used: no warning, no file), then the local spelling.
    (cd "$elsewhere" && python - "$data/data/megatron/mycorpus_text_document" "$cache" <<'PY') > "$logs/item2-nanoset.out" 2> "$logs/item2-nanoset.err" || rc=$?
import logging
import sys

from tokenmill.training.datasets import NanosetBuilder, NanosetConfig
from tokenmill.megatron.gpt_indices import null_tokenizer_identifiers

logging.basicConfig(format="%(levelname)s %(message)s")
prefix, cache = sys.argv[1:]


def build(dataset_path=None):
    splits = NanosetBuilder(NanosetConfig(
        prefix, cache, seq_length=256, seed=7, split="90,8,2", dataset_path=dataset_path,
        tokenizer_identifiers=null_tokenizer_identifiers(50257),
        num_samples={"train": 200, "valid": 20, "test": 5}, eod_id=50256)).build()
    return len(splits["train"])


print("job spelling:", build("/data/megatron/mycorpus_text_document"), file=sys.stderr)
print("local spelling:", build(), file=sys.stderr)
PY
    after=$(find "$cache" -type f | wc -l)
    local problems=() warnings
    warnings=$(grep -c '^WARNING' "$logs/item2-nanoset.err" || true)
    local warning
    warning=$(grep -m1 '^WARNING' "$logs/item2-nanoset.err" || true)
    [ "$rc" -eq 0 ] || problems+=("the Nanoset script exited $rc: $(tail -1 "$logs/item2-nanoset.err")")
    # The job's spelling is printed before any warning: the workflow's caches were used silently.
    [ "$(grep -m1 -E '^(WARNING|job spelling)' "$logs/item2-nanoset.err" | cut -c1-12)" = "job spelling" ] \
        || problems+=("a warning with the job's own spelling")
    [ "$warnings" -eq 1 ] || problems+=("$warnings warnings for the local spelling, expected 1")
    # One line: the line after it is the script's own next print.
    grep -A1 '^WARNING' "$logs/item2-nanoset.err" | tail -1 | grep -q '^local spelling:' \
        || problems+=("the warning is not one line")
    [[ "$warning" == *"'/data/megatron/mycorpus_text_document'"* && "$warning" == *"$data/data/megatron/mycorpus_text_document"* \
        && "$warning" == *dataset_path=* ]] || problems+=("warning lacks both paths or dataset_path=: '$warning'")
    [ "$after" -gt "$before" ] || problems+=("no second cache was built ($before -> $after files): nothing to flag")
    rc=0
    (cd "$elsewhere" && tokenmill verify "$cache") > "$logs/item2-verify.log" 2>&1 || rc=$?
    local flagged
    flagged=$(grep -cE 'GPTDataset (train|valid|test) caches of one dataset' "$logs/item2-verify.log" || true)
    [ "$rc" -ne 0 ] && [ "$flagged" -ge 1 ] && grep -q 'GPTDataset train caches of one dataset' "$logs/item2-verify.log" \
        || problems+=("verify on the cache folder exited $rc with $flagged duplicate-cache lines: $(head -1 "$logs/item2-verify.log")")
    if [ ${#problems[@]} -eq 0 ]; then
        pass "item 2: the job's spelling reuses the caches silently; the local one builds a second set ($before -> $after files) with one warning naming both paths and dataset_path=; verify flags $flagged splits with two caches (exit $rc)"
    else
        fail "item 2: $(IFS=';'; echo "${problems[*]}")"
    fi
}

# ---- round two (issue 32): each item checked on the same clone and data folder ------------------------
# "II.N" is issue 32's item N. Runs after the build of my.yaml (the summary is in $logs/build.log); the checks
# that read that build's files come before those that build other configs in the same folder.
round_two() {
    local rc problems
    # II.1: the test command installs nothing unasked: the SLURM test sets SLURM up only with TOKENMILL_TEST_SLURM=1
    if grep -q 'TOKENMILL_TEST_SLURM=1' "$clone/README.md" && grep -q 'export TOKENMILL_TEST_SLURM=1' "$clone/.ci/run" \
        && grep -q 'OPT_IN = "TOKENMILL_TEST_SLURM"' "$clone/tests/e2e/test_slurm.py"; then
        pass "II.1: the README names TOKENMILL_TEST_SLURM, .ci/run sets it, tests/e2e/test_slurm.py skips without it"
    else
        fail "II.1: the SLURM opt-in is not documented, set by .ci/run and checked by the test"
    fi
    # II.2: the summary gives the job's tokenizer identifiers, as the caches were named
    if grep -q "tokenizer_identifiers=job_tokenizer_identifiers('0.19', '--tokenizer-type NullTokenizer --vocab-size 50257')" "$logs/build.log"; then
        pass "II.2: the summary gives tokenizer_identifiers=job_tokenizer_identifiers(...) with the job's flags"
    else
        fail "II.2: no job_tokenizer_identifiers line in the summary"
    fi
    # II.7: the report's front page gives the command as this build spelled it
    if grep -qF "snakemake -s $clone/Snakefile --configfile my.yaml --report report.html" "$data/.snakemake/tokenmill/workflow.rst"; then
        pass "II.7: the report's front page gives 'snakemake -s CLONE/Snakefile --configfile my.yaml --report report.html'"
    else
        fail "II.7: the front page's command: $(grep -m1 'snakemake' "$data/.snakemake/tokenmill/workflow.rst" 2>&1)"
    fi
    # II.8: the folder Megatron's HuggingFaceTokenizer loads lies beside the data, named by the summary
    if grep -q '"eos_token": "<|endoftext|>"' "$data/data/megatron/tokenizers/gpt2/tokenizer_config.json" 2>/dev/null \
        && cmp -s "$data/data/megatron/tokenizers/gpt2/tokenizer.json" "$data/tokenizers/gpt2.tokenizer.json" \
        && grep -q -- '--tokenizer-model data/megatron/tokenizers/gpt2' "$logs/build.log"; then
        pass "II.8: data/megatron/tokenizers/gpt2/ holds tokenizer.json and eos_token; the summary names it"
    else
        fail "II.8: no tokenizer folder for HuggingFaceTokenizer beside the data, or not in the summary"
    fi
    # II.5: an EOD text that is one token is answered with the string to give; Ctrl-C while starting is one line
    rc=0
    (cd "$data" && tokenmill pack raw/a.jsonl --tokenizer tokenizers/gpt2.tokenizer.json --eod $'\n\n' -o x.pbin) \
        > "$logs/II5.log" 2>&1 || rc=$?
    problems=()
    grep -q "encodes to the one id 628, whose vocabulary string is 'ĊĊ': give that" "$logs/II5.log" \
        || problems+=("eod '\\n\\n': $(tail -1 "$logs/II5.log")")
    python3 - "$data" > "$logs/II5-interrupt.log" 2>&1 <<'PY' || problems+=("Ctrl-C while starting: $(tail -1 "$logs/II5-interrupt.log")")
import signal, subprocess, sys, time
for delay in (0.1, 0.2, 0.3):
    job = subprocess.Popen(["tokenmill", "pack", "raw/a.jsonl", "--tokenizer", "tokenizers/gpt2.tokenizer.json",
                            "--eod", "<|endoftext|>", "-o", "y.pbin"], cwd=sys.argv[1], stderr=subprocess.PIPE,
                           text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    job.send_signal(signal.SIGINT)
    said = job.communicate()[1]
    if "Traceback" in said or said not in ("", "tokenmill: interrupted\n") and job.returncode != 0:
        sys.exit(f"at {delay} s: {said!r}")
PY
    if [ ${#problems[@]} -eq 0 ]; then
        pass "II.5: eod '\\n\\n' is answered with 'ĊĊ' (id 628); Ctrl-C at 0.1-0.3 s of a start is one line"
    else
        fail "II.5: $(IFS=';'; echo "${problems[*]}")"
    fi
    # II.3: a failed job ends the run with its one-line error and its log
    printf '{"text": "fine"}\nnot json\n' > "$data/raw/broken.jsonl"
    { cat "$data/my.yaml"; printf '  broken: {inputs: [raw/broken.jsonl], tokenizer: gpt2}\n'; } > "$data/broken.yaml"
    python3 - "$data/broken.yaml" <<'PY'
import sys
text = open(sys.argv[1]).read().splitlines()
datasets = text.index("datasets:")
moved = text.pop()  # the broken dataset, appended last: under datasets:
text.insert(datasets + 1, moved)
open(sys.argv[1], "w").write("\n".join(text) + "\n")
PY
    rc=0
    (cd "$data" && snakemake -s "$clone/Snakefile" --profile "$clone/workflow/profiles/default" \
        --configfile broken.yaml --cores 2 data/packed/broken.pbin) > "$logs/II3.log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ] && tail -2 "$logs/II3.log" | head -1 | grep -q '^tokenmill: error: raw/broken.jsonl:2: invalid JSON' \
        && tail -1 "$logs/II3.log" | grep -q '^  log: logs/pack/broken.log$' \
        && ! grep -qE 'RuleException|Error in rule|WorkflowError|tokenmill pack ' "$logs/II3.log"; then
        pass "II.3: the failed run ends with 'tokenmill: error: raw/broken.jsonl:2: invalid JSON ...' and its log, no Snakemake error block"
    else
        fail "II.3: exit $rc, the run's end: $(tail -6 "$logs/II3.log" | tr '\n' '|')"
    fi
    # II.4: adding datatrove to a built dataset converts it, never tokenizes it again
    local packed=$data/data/packed/mycorpus.pbin before
    before=$(stat -c %y "$packed")
    sed 's/^    tokenizer: gpt2$/    tokenizer: gpt2\n    formats: [pbin, megatron, datatrove]/' "$data/my.yaml" > "$data/formats.yaml"
    rc=0
    (cd "$data" && snakemake -s "$clone/Snakefile" --profile "$clone/workflow/profiles/default" \
        --configfile formats.yaml --cores 2) > "$logs/II4.log" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ] && [ -s "$data/data/datatrove/mycorpus/mycorpus.ds" ] && ! grep -qE '^Job [0-9]+: pack ' "$logs/II4.log" \
        && [ "$(stat -c %y "$packed")" = "$before" ]; then
        pass "II.4: datatrove added to my.yaml's dataset: its .ds converted, no pack job, the .pbin untouched"
    else
        fail "II.4: exit $rc; pack jobs: $(grep -cE '^Job [0-9]+: pack ' "$logs/II4.log"); $(grep -m1 -i error "$logs/II4.log")"
    fi
}

start_all=$(now)
setup
item7
item8
make_data
if build; then
    item6
    item1
    item4
    round_two  # before item 2, whose second cache set (on purpose) makes the folder fail verify
    item2
else
    for item in 6 1 2; do fail "item $item: not checked, the build failed"; done
fi
item3
item5
echo "total: $(since "$start_all") s, $failures failed; logs in $logs"
[ "$failures" -eq 0 ]
