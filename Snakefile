# tokenmill: raw JSONL → raw line index → packed .pbin → Megatron .bin/.idx → index caches
# (see README.md).
#
#   snakemake --cores 2                          build the whole matrix in config/config.yaml
#   snakemake --cores 2 data/packed/demo.pbin    build one target


from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/raw_index.smk"
include: "workflow/rules/pack.smk"
include: "workflow/rules/megatron.smk"
include: "workflow/rules/sample_index.smk"
include: "workflow/rules/verify.smk"
include: "workflow/rules/sft.smk"


# Everything the config asks for.
rule all:
    input:
        all_targets(),
    default_target: True
