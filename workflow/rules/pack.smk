# ---- Stage 2: tokenize and pack into .pbin (Modalities 0.5.0) and Megatron .bin/.idx, one pass --


# Tokenize one pack unit: a dataset's file (plain, through its raw index, or compressed, as a
# stream) or one byte-range shard of a big plain file, with one of the dataset's tokenizers. The
# .pbin and Megatron's .bin/.idx are written from the same tokens (no second pass to convert).
rule pack:
    input:
        jsonl=unit_jsonl,
        idx=unit_index,
        tokenizer=unit_tokenizer_path,
    output:
        pbin="data/packed/{unit}.pbin",
        meta="data/packed/{unit}.pbin.meta.json",
        bin="data/megatron/{unit}_text_document.bin",
        megatron_idx="data/megatron/{unit}_text_document.idx",
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
        format=f"{FORMAT_VERSIONS['pbin']} {FORMAT_VERSIONS['mmidx']}",
        options=pack_options,
        inputs=unit_identity,
        megatron=unit_megatron_prefix,
    shell:
        "tokenmill pack {input.jsonl:q} --tokenizer {input.tokenizer:q}"
        " {params.options} --workers {threads} -o {output.pbin:q} --megatron {params.megatron:q} > {log:q} 2>&1"


# Concatenate the units of a build, in input order, by block copy (one pass over the bytes of each format).
rule merge_units:
    input:
        units=merge_units,
        sidecars=merge_unit_sidecars,
        megatron=merge_unit_megatron_files,
    output:
        pbin="data/packed/{build}.pbin",
        meta="data/packed/{build}.pbin.meta.json",
        bin="data/megatron/{build}_text_document.bin",
        megatron_idx="data/megatron/{build}_text_document.idx",
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
        format=f"{FORMAT_VERSIONS['pbin']} {FORMAT_VERSIONS['mmidx']}",
        units=merge_units_shell,
        megatron_units=merge_units_megatron_shell,
        megatron=build_megatron_prefix,
    shell:
        "(tokenmill merge {params.units} -o {output.pbin:q} --force"
        " && tokenmill merge {params.megatron_units} -o {params.megatron:q} --force) > {log:q} 2>&1"


# The same job for the units of a merged build, whose files are temporary without keep_parts.
use rule pack as pack_unit with:
    output:
        pbin=part_file("data/packed/{unit}.pbin"),
        meta=part_file("data/packed/{unit}.pbin.meta.json"),
        bin=part_file("data/megatron/{unit}_text_document.bin"),
        megatron_idx=part_file("data/megatron/{unit}_text_document.idx"),
    log:
        "logs/pack/{unit}.log",
    benchmark:
        "benchmarks/pack/{unit}.tsv"
    wildcard_constraints:
        unit=UNIT_OF_MERGED,
