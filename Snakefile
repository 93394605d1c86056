# tokenmill: raw JSONL → raw line index → packed .pbin → Megatron .bin/.idx → index caches
# (see README.md).
#
#   snakemake --cores 2                          build the whole matrix in config/config.yaml
#   snakemake --cores 2 data/packed/demo.pbin    build one target


from snakemake.utils import min_version

min_version("9.0")


# The demo matrix, unless a config of your own is given (`--configfile my.yaml` stands alone: the
# demo's datasets are not added to it).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/raw_index.smk"
include: "workflow/rules/pack.smk"
include: "workflow/rules/datatrove.smk"
include: "workflow/rules/olmo.smk"
include: "workflow/rules/sample_index.smk"
include: "workflow/rules/best_fit.smk"
include: "workflow/rules/verify.smk"
include: "workflow/rules/sft.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/handoff.smk"
include: "workflow/rules/prune.smk"


report: REPORT_FRONT_PAGE


# `all` only collects targets: on a cluster it runs on the submitting host, not through sbatch.
localrules:
    all,
    prune,


# Everything the config asks for.
rule all:
    default_target: True
    input:
        all_targets(),
        prune_stamp(),
    message:
        "every file of the config is built"


# When a real run starts (not a dry run): this config's plan recorded under its identity (data/plans/), as prune
# records it again at the end, so that a run that fails before its prune keeps its outputs from another
# config's prune (tokenmill.plan.records). Not under a storage prefix, where prune neither runs nor records.
# And this run marked alive in the folder, so that a second run says so in one line (tokenmill.plan.running).
onstart:
    from tokenmill.plan.records import record_plan
    from tokenmill.plan.running import mark_running

    mark_running(CONFIG.described())
    if not STORAGE_PREFIX:
        record_plan(PLAN, CONFIG)


# After a successful run (not a dry run, nor one with nothing to do): one screen of what was built
# where and what to run next, the report command with this run's --configfile included.
onsuccess:
    from tokenmill.plan.running import clear_running
    from tokenmill.plan.summary import print_summary

    clear_running()
    print_summary(PLAN, workflow.overwrite_configfiles, workflow.main_snakefile, storage_prefix=STORAGE_PREFIX)


# After a failed run: each failed job's own one-line error and its log. (With `--logger tokenmill`, as the
# workflow profile profiles/default/ sets, which Snakemake finds beside this file by itself, that logger
# prints them instead, last, in place of Snakemake's error blocks; this is for `--workflow-profile none`.)
onerror:
    from tokenmill.plan.running import clear_running
    from tokenmill.plan.summary import print_failures

    clear_running()
    if "tokenmill" not in getattr(workflow.output_settings, "log_handler_settings", {}):
        print_failures(STARTED, os.path.join(STORAGE_ROOT, "logs"))
