# ---- Stage 3: Megatron-LM MMIDIDX .bin/.idx -----------------------------------------------------


# One document per .pbin document (EOD included), dtype from the sidecar's vocabulary size.
rule megatron:
    input:
        pbin="data/packed/{name}.pbin",
        meta="data/packed/{name}.pbin.meta.json",
    output:
        bin="data/megatron/{name}_text_document.bin",
        idx="data/megatron/{name}_text_document.idx",
    log:
        "logs/megatron/{name}.log",
    benchmark:
        "benchmarks/megatron/{name}.tsv"
    wildcard_constraints:
        name=BUILD,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=document_index_mem_mb,
        runtime=copy_runtime,
    params:
        format=FORMAT_VERSIONS["mmidx"],
        prefix=megatron_prefix,
    shell:
        "tokenmill to-megatron {input.pbin:q} -o {params.prefix:q} > {log:q} 2>&1"
