# ---- Stage 2: tokenize and pack into every format a dataset asks for, in one pass ---------------


# Tokenize one pack unit: a dataset's file (plain, through its raw index, or compressed, as a
# stream) or one byte-range shard of a big plain file, with one of the dataset's tokenizers. The
# .pbin, Megatron's .bin/.idx and datatrove's .ds files are written from the same tokens (no second
# pass to convert); the variants below differ only in which of them a dataset's `formats` ask for.
rule pack:
    input:
        jsonl=unit_jsonl,
        idx=unit_index,
        tokenizer=unit_tokenizer_path,
    output:
        pbin=packed_path("{unit}"),
        meta=sidecar_path(packed_path("{unit}")),
        bin=f"{megatron_prefix('{unit}')}.bin",
        megatron_idx=f"{megatron_prefix('{unit}')}.idx",
    log:
        "logs/pack/{unit}.log",
    benchmark:
        "benchmarks/pack/{unit}.tsv"
    wildcard_constraints:
        unit=SINGLE_UNIT[True],
    conda:
        "../envs/tokenmill.yaml"
    threads: pack_threads
    resources:
        mem_mb=pack_mem_mb,
        runtime=tokenize_runtime,
    params:
        job=job_files,
        format=pack_format,
        options=pack_options,
        on_bad_line=unit_bad_line_option,
        inputs=unit_identity,
        jsonl=pack_inputs,
        outputs=pack_outputs,
    message:
        "pack {wildcards.unit} -> {output.pbin} and its build's other formats (log: {log})"
    # Its log takes every progress line (5 s apart); fd 3, the job's own stderr (the console of a local
    # run), gets one every 10 s (TOKENMILL_CONSOLE_FD: src/tokenmill/progress.py), so a long pack shows it runs.
    shell:
        "({params.job.cd}TOKENMILL_CONSOLE_FD=3 tokenmill pack {params.jsonl} --tokenizer {params.job.tokenizer:q}"
        " {params.options} {params.on_bad_line} --workers {threads} {params.outputs}) 3>&2 > {log:q} 2>&1"


use rule pack as pack_without_megatron with:
    output:
        pbin=packed_path("{unit}"),
        meta=sidecar_path(packed_path("{unit}")),
    wildcard_constraints:
        unit=SINGLE_UNIT[False],


use rule pack as pack_unit with:
    output:
        pbin=part_file(part_pbin_path("{unit}")),
        meta=part_file(sidecar_path(part_pbin_path("{unit}"))),
        bin=part_file(f"{part_megatron_prefix('{unit}')}.bin"),
        megatron_idx=part_file(f"{part_megatron_prefix('{unit}')}.idx"),
    log:
        "logs/pack/{unit}.log",
    benchmark:
        "benchmarks/pack/{unit}.tsv"
    wildcard_constraints:
        unit=UNIT_OF_MERGED[True],


use rule pack as pack_unit_without_megatron with:
    output:
        pbin=part_file(part_pbin_path("{unit}")),
        meta=part_file(sidecar_path(part_pbin_path("{unit}"))),
    log:
        "logs/pack/{unit}.log",
    benchmark:
        "benchmarks/pack/{unit}.tsv"
    wildcard_constraints:
        unit=UNIT_OF_MERGED[False],


# Concatenate the units of a build, in input order, by block copy (one pass over the bytes of each format).
rule merge_units:
    input:
        units=merge_units,
        sidecars=merge_unit_sidecars,
        megatron=merge_unit_megatron_files,
    output:
        pbin=packed_path("{build}"),
        meta=sidecar_path(packed_path("{build}")),
        bin=f"{megatron_prefix('{build}')}.bin",
        megatron_idx=f"{megatron_prefix('{build}')}.idx",
    log:
        "logs/merge_units/{build}.log",
    benchmark:
        "benchmarks/merge_units/{build}.tsv"
    wildcard_constraints:
        build=MERGED[True],
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=document_index_mem_mb,
        runtime=copy_runtime,
    params:
        job=job_files,
        format=f"{FORMAT_VERSIONS['pbin']} {FORMAT_VERSIONS['mmidx']}",
        commands=merge_commands,
    message:
        "merge the units of {wildcards.build} -> {output.pbin} (log: {log})"
    shell:
        "({params.job.cd}{params.commands}) > {log:q} 2>&1"


use rule merge_units as merge_units_without_megatron with:
    output:
        pbin=packed_path("{build}"),
        meta=sidecar_path(packed_path("{build}")),
    wildcard_constraints:
        build=MERGED[False],


# A dataset of tokens already made (`tokens`: Megatron .bin/.idx prefixes or .pbin files): its .pbin and
# Megatron's files written from them, checked against the tokenizer's vocabulary and EOD; nothing is tokenized.
rule tokens_in:
    input:
        tokens=tokens_in_files,
        tokenizer=tokens_in_tokenizer,
    output:
        pbin=packed_path("{build}"),
        meta=sidecar_path(packed_path("{build}")),
        bin=f"{megatron_prefix('{build}')}.bin",
        megatron_idx=f"{megatron_prefix('{build}')}.idx",
    log:
        "logs/tokens_in/{build}.log",
    benchmark:
        "benchmarks/tokens_in/{build}.tsv"
    wildcard_constraints:
        build=TOKENS_IN[True],
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=document_index_mem_mb,
        runtime=copy_runtime,
    params:
        job=job_files,
        format=" ".join(FORMAT_VERSIONS[name] for name in ("pbin", "mmidx", "tokens_in")),
        options=tokens_in_options,
        inputs=tokens_identity,
        outputs=tokens_in_outputs,
    message:
        "tokens in {wildcards.build} -> {output.pbin} and Megatron's files, nothing tokenized (log: {log})"
    shell:
        "({params.job.cd}tokenmill tokens-in {params.options} --tokenizer {params.job.tokenizer:q}"
        " {params.outputs}) > {log:q} 2>&1"


use rule tokens_in as tokens_in_without_megatron with:
    output:
        pbin=packed_path("{build}"),
        meta=sidecar_path(packed_path("{build}")),
    wildcard_constraints:
        build=TOKENS_IN[False],
    params:
        job=job_files,
        format=FORMAT_VERSIONS["pbin"],
        options=tokens_in_options,
        inputs=tokens_identity,
        outputs=tokens_in_outputs,
    message:
        "tokens in {wildcards.build} -> {output.pbin}, nothing tokenized (log: {log})"
