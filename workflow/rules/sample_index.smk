# ---- Stage 4: Megatron GPTDataset index caches (document/sample/shuffle .npy per split) --------


# One cache folder per dataset × sequence length × seed; hand it to Megatron as --data-cache-path.
rule sample_index:
    input:
        bin=f"{megatron_prefix('{build}')}.bin",
        idx=f"{megatron_prefix('{build}')}.idx",
        meta=sidecar_path(packed_path("{build}")),
    output:
        cache=directory(cache_dir("{build}", "{seq_length}", "{seed}")),
    log:
        "logs/sample_index/{build}/seq{seq_length}_seed{seed}.log",
    benchmark:
        "benchmarks/sample_index/{build}/seq{seq_length}_seed{seed}.tsv"
    wildcard_constraints:
        build=BUILD,
        seq_length=r"[0-9]+",
        seed=r"[0-9]+",
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=cache_mem_mb,
        runtime=copy_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["sample_index"],
        prefix=build_megatron_prefix,
        options=sample_index_options,
    message:
        "index caches of {wildcards.build}, seq {wildcards.seq_length}, seed {wildcards.seed} -> {output.cache} (log: {log})"
    shell:
        "({params.job.cd}tokenmill sample-index {params.prefix:q} -o {params.job.cache:q}"
        " --seq-length {wildcards.seq_length} --seed {wildcards.seed} {params.options}) > {log:q} 2>&1"


# A named blend: the BlendedDataset caches plus its datasets' GPTDataset caches, in one folder.
rule blend:
    input:
        megatron=blend_megatron_files,
    output:
        cache=directory(cache_dir(blend_cache_name("{blend}"), "{seq_length}", "{seed}")),
    log:
        "logs/blend/{blend}/seq{seq_length}_seed{seed}.log",
    benchmark:
        "benchmarks/blend/{blend}/seq{seq_length}_seed{seed}.tsv"
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
    params:
        job=job_files,
        format=FORMAT_VERSIONS["sample_index"],
        options=blend_options,
    message:
        "blend caches of {wildcards.blend}, seq {wildcards.seq_length}, seed {wildcards.seed} -> {output.cache} (log: {log})"
    shell:
        "({params.job.cd}tokenmill blend {params.options} -o {params.job.cache:q} --seq-length {wildcards.seq_length}"
        " --seed {wildcards.seed}) > {log:q} 2>&1"
