# ---- Stage 3: Megatron-LM MMIDIDX .bin/.idx -----------------------------------------------------


# One document per .pbin document (EOD included), dtype from the sidecar's vocabulary size.
rule megatron:
    input:
        pbin="data/packed/{name}.pbin",
        meta="data/packed/{name}.pbin.meta.json",
    output:
        bin="data/megatron/{name}_text_document.bin",
        idx="data/megatron/{name}_text_document.idx",
    params:
        format=FORMAT_VERSIONS["mmidx"],
        prefix=megatron_prefix,
    log:
        "logs/megatron/{name}.log",
    benchmark:
        "benchmarks/megatron/{name}.tsv"
    threads: 1
    resources:
        mem_mb=2000,
    conda:
        "../../environment.yml"
    wildcard_constraints:
        name=NAME,
    shell:
        "tokenmill to-megatron {input.pbin:q} -o {params.prefix:q} > {log:q} 2>&1"
