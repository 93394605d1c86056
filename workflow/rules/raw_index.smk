# ---- Stage 1: raw line index (Modalities create_raw_index format) -----------------------------


# One (byte offset, byte length) pair per line of a pack unit's JSONL file.
rule raw_index:
    input:
        jsonl=stem_jsonl,
    output:
        idx="data/index/{stem}.idx",
    params:
        format=FORMAT_VERSIONS["raw_index"],
    log:
        "logs/raw_index/{stem}.log",
    benchmark:
        "benchmarks/raw_index/{stem}.tsv"
    threads: 1
    resources:
        mem_mb=2000,
    conda:
        "../../environment.yml"
    wildcard_constraints:
        stem=STEM,
    shell:
        "tokenmill index {input.jsonl:q} -o {output.idx:q} > {log:q} 2>&1"
