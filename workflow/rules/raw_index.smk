# ---- Stage 1: raw line index (Modalities create_raw_index format) -----------------------------


# One (byte offset, byte length) pair per line of a plain JSONL input file, shared by every
# tokenizer and shard of it. Compressed inputs have none: pack reads them as a stream.
rule raw_index:
    input:
        jsonl=file_jsonl,
    output:
        idx=raw_index_path("{stem}"),
    log:
        "logs/raw_index/{stem}.log",
    benchmark:
        "benchmarks/raw_index/{stem}.tsv"
    wildcard_constraints:
        stem=FILE_STEM,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=line_index_mem_mb,
        runtime=copy_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["raw_index"],
        inputs=file_identity,
    message:
        "raw line index of {input.jsonl} -> {output.idx} (log: {log})"
    shell:
        "({params.job.cd}tokenmill index {params.job.jsonl:q} -o {params.job.idx:q}) > {log:q} 2>&1"
