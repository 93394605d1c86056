# ---- Stage 2: tokenize and pack into .pbin (Modalities 0.5.0 layout) + sidecar ----------------


# Tokenize one JSONL file (a single-file dataset, or one part of a multi-file one).
rule pack:
    input:
        jsonl=stem_jsonl,
        idx="data/index/{stem}.idx",
        tokenizer=stem_tokenizer_path,
    output:
        pbin="data/packed/{stem}.pbin",
        meta="data/packed/{stem}.pbin.meta.json",
    params:
        format=FORMAT_VERSIONS["pbin"],
        options=pack_options,
    log:
        "logs/pack/{stem}.log",
    benchmark:
        "benchmarks/pack/{stem}.tsv"
    threads: 8
    resources:
        mem_mb=pack_mem_mb,
    conda:
        "../../environment.yml"
    wildcard_constraints:
        stem=STEM,
    shell:
        "tokenmill pack {input.jsonl:q} --index {input.idx:q} --tokenizer {input.tokenizer:q}"
        " {params.options} --workers {threads} -o {output.pbin:q} > {log:q} 2>&1"


# Concatenate the parts of a multi-file dataset, in input order, by block copy.
rule merge_parts:
    input:
        parts=merge_parts,
    output:
        pbin="data/packed/{name}.pbin",
        meta="data/packed/{name}.pbin.meta.json",
    params:
        format=FORMAT_VERSIONS["pbin"],
    log:
        "logs/merge_parts/{name}.log",
    benchmark:
        "benchmarks/merge_parts/{name}.tsv"
    threads: 1
    resources:
        mem_mb=2000,
    conda:
        "../../environment.yml"
    wildcard_constraints:
        name=MERGED,
    shell:
        "tokenmill merge {input.parts:q} -o {output.pbin:q} --force > {log:q} 2>&1"
