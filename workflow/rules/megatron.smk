# ---- Stage 3: Megatron-LM MMIDIDX .bin/.idx -----------------------------------------------------


# One document per .pbin document (EOD included), dtype from the sidecar's vocabulary size.
rule megatron:
    input:
        pbin="data/packed/{build}.pbin",
        meta="data/packed/{build}.pbin.meta.json",
    output:
        bin="data/megatron/{build}_text_document.bin",
        idx="data/megatron/{build}_text_document.idx",
    log:
        "logs/megatron/{build}.log",
    benchmark:
        "benchmarks/megatron/{build}.tsv"
    wildcard_constraints:
        build=BUILD,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=document_index_mem_mb,
        runtime=copy_runtime,
    params:
        format=FORMAT_VERSIONS["mmidx"],
        prefix=build_megatron_prefix,
    shell:
        "tokenmill to-megatron {input.pbin:q} -o {params.prefix:q} > {log:q} 2>&1"
