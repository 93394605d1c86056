# ---- Stage 2: tokenize and pack into .pbin (Modalities 0.5.0 layout) + sidecar ----------------


# Tokenize one pack unit: a dataset's file (plain, through its raw index, or compressed, as a
# stream) or one byte-range shard of a big plain file, with one of the dataset's tokenizers.
rule pack:
    input:
        jsonl=unit_jsonl,
        idx=unit_index,
        tokenizer=unit_tokenizer_path,
    output:
        pbin="data/packed/{unit}.pbin",
        meta="data/packed/{unit}.pbin.meta.json",
    log:
        "logs/pack/{unit}.log",
    benchmark:
        "benchmarks/pack/{unit}.tsv"
    wildcard_constraints:
        unit=SINGLE_UNIT,
    conda:
        "../envs/tokenmill.yaml"
    threads: pack_threads
    resources:
        mem_mb=pack_mem_mb,
        runtime=tokenize_runtime,
    params:
        format=FORMAT_VERSIONS["pbin"],
        options=pack_options,
        inputs=unit_identity,
    shell:
        "tokenmill pack {input.jsonl:q} --tokenizer {input.tokenizer:q}"
        " {params.options} --workers {threads} -o {output.pbin:q} > {log:q} 2>&1"


# Concatenate the units of a build, in input order, by block copy (one pass over the bytes).
rule merge_units:
    input:
        units=merge_units,
        sidecars=merge_unit_sidecars,
    output:
        pbin="data/packed/{build}.pbin",
        meta="data/packed/{build}.pbin.meta.json",
    log:
        "logs/merge_units/{build}.log",
    benchmark:
        "benchmarks/merge_units/{build}.tsv"
    wildcard_constraints:
        build=MERGED,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=document_index_mem_mb,
        runtime=copy_runtime,
    params:
        format=FORMAT_VERSIONS["pbin"],
        units=merge_units_shell,
    shell:
        "tokenmill merge {params.units} -o {output.pbin:q} --force > {log:q} 2>&1"


# The same job for the units of a merged build, whose .pbin are temporary without keep_parts.
use rule pack as pack_unit with:
    output:
        pbin=part_file("data/packed/{unit}.pbin"),
        meta=part_file("data/packed/{unit}.pbin.meta.json"),
    log:
        "logs/pack/{unit}.log",
    benchmark:
        "benchmarks/pack/{unit}.tsv"
    wildcard_constraints:
        unit=UNIT_OF_MERGED,
