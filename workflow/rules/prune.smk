# ---- The tree equals the plan: outputs of an earlier plan out of where trainers look ---------------


# Runs once everything of the config is built (it needs every target), and again whenever the plan's
# files change (its params and inputs): moves what the output folders hold beyond them to data/stale/, and
# deletes from there what runs before the last keep_stale_runs moved.
rule prune:
    input:
        all_targets(),
    output:
        stamp=last_run_stamp(CONFIG.key),
    log:
        "logs/prune.log",
    benchmark:
        "benchmarks/prune.tsv"
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        config=json.dumps(with_urls_redacted(config), sort_keys=True),
        # the config's file(s), resolved: its identity (tokenmill.plan.records)
        configfiles=CONFIG.paths,
        # the bound on data/stale/: the last N runs' moves are kept (null in the config: all)
        keep_stale_runs="all" if config["keep_stale_runs"] is None else config["keep_stale_runs"],
    message:
        "move files of an earlier plan out of where trainers look, beside {output.stamp} (log: {log})"
    shell:
        "tokenmill prune --config-json {params.config:q} --configfile {params.configfiles:q} "
        "--keep-stale-runs {params.keep_stale_runs} --stamp {output.stamp:q} > {log:q} 2>&1"
