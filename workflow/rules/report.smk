# ---- Report pages: `snakemake --report report.html` shows them --------------------------------


# One page per build: counts, skipped lines, tokenizer and engine, verify result, length histogram,
# and its index caches.
rule report_dataset:
    input:
        pbin="data/packed/{name}.pbin",
        meta="data/packed/{name}.pbin.meta.json",
        verified="data/verified/{name}.ok",
        caches=report_caches,
    output:
        page=report(
            "data/report/{name}.html",
            category="Datasets",
            labels={"dataset": "{name}", "page": "statistics"},
        ),
    log:
        "logs/report_dataset/{name}.log",
    benchmark:
        "benchmarks/report_dataset/{name}.tsv"
    wildcard_constraints:
        name=BUILD,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=document_index_mem_mb,
        runtime=copy_runtime,
    params:
        caches=report_cache_options,
    shell:
        "tokenmill report {input.pbin:q} --verified {input.verified:q} {params.caches} -o {output.page:q}"
        " > {log:q} 2>&1"


# One page per blend cache folder: weights asked vs shares realised, per split.
rule report_blend:
    input:
        cache="data/cache/blend_{blend}/seq{seq_length}_seed{seed}",
    output:
        page=report(
            "data/report/blend_{blend}/seq{seq_length}_seed{seed}.html",
            category="Blends",
            labels={"blend": "{blend}", "cache": "seq{seq_length}_seed{seed}"},
        ),
    log:
        "logs/report_blend/{blend}/seq{seq_length}_seed{seed}.log",
    benchmark:
        "benchmarks/report_blend/{blend}/seq{seq_length}_seed{seed}.tsv"
    wildcard_constraints:
        blend=BLEND,
        seq_length=r"[0-9]+",
        seed=r"[0-9]+",
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=cache_mem_mb,
        runtime=copy_runtime,
    shell:
        "tokenmill report --blend {input.cache:q} -o {output.page:q} > {log:q} 2>&1"
