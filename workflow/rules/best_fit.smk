# ---- Stage 4b: best-fit packing, for datasets with packing: best_fit -----------------------------


# One packed index per build × sequence length × seed, beside the build's GPTDataset caches: which whole
# documents (or fragments) fill each sample, per split, in the seed's order (tokenmill.training.packed_samples);
# verified against the packer again before the job ends.
rule best_fit:
    input:
        bin=f"{megatron_prefix('{build}')}.bin",
        idx=f"{megatron_prefix('{build}')}.idx",
    output:
        index=directory(packed_index_dir("{build}", "{seq_length}", "{seed}")),
    log:
        "logs/best_fit/{build}/seq{seq_length}_seed{seed}.log",
    benchmark:
        "benchmarks/best_fit/{build}/seq{seq_length}_seed{seed}.tsv"
    wildcard_constraints:
        build=BEST_FIT,
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
        format=FORMAT_VERSIONS["packing"],
        prefix=build_megatron_prefix,
        options=best_fit_options,
    message:
        "best-fit packing of {wildcards.build}, seq {wildcards.seq_length}, seed {wildcards.seed} -> {output.index} (log: {log})"
    shell:
        "({params.job.cd}tokenmill best-fit {params.prefix:q} -o {params.job.index:q}"
        " --seq-length {wildcards.seq_length} --seed {wildcards.seed} {params.options}"
        " && tokenmill verify {params.job.index:q}) > {log:q} 2>&1"


# OLMo-core's packing caches of a build's parts for one sequence length, in the work_dir a job names
# (its dataset-common/ files, the config fragment tokenmill-olmo-packing.yaml and the sidecar).
rule olmo_best_fit:
    input:
        parts=olmo_folder("{build}"),
    output:
        work_dir=directory(olmo_packing_dir("{build}", "{seq_length}")),
    log:
        "logs/olmo_best_fit/{build}/seq{seq_length}.log",
    benchmark:
        "benchmarks/olmo_best_fit/{build}/seq{seq_length}.tsv"
    wildcard_constraints:
        build=BEST_FIT,
        seq_length=r"[0-9]+",
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=cache_mem_mb,
        runtime=copy_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["packing"],
        options=olmo_best_fit_options,
    message:
        "OLMo-core packing of {wildcards.build}, seq {wildcards.seq_length} -> {output.work_dir} (log: {log})"
    shell:
        "({params.job.cd}tokenmill best-fit {params.job.parts:q} -o {params.job.work_dir:q}"
        " --seq-length {wildcards.seq_length} {params.options}"
        " && tokenmill verify {params.job.work_dir:q}) > {log:q} 2>&1"


# A blend's packed blend per sequence length and seed: each dataset's packed index (dataset-<i>/) and the
# blend's samples drawn from them by its weights (tokenmill.training.packed_samples.PackedBlend); verified
# against the packer again before the job ends.
rule best_fit_blend:
    input:
        megatron=blend_megatron_files,
    output:
        index=directory(packed_index_dir(blend_cache_name("{blend}"), "{seq_length}", "{seed}")),
    log:
        "logs/best_fit_blend/{blend}/seq{seq_length}_seed{seed}.log",
    benchmark:
        "benchmarks/best_fit_blend/{blend}/seq{seq_length}_seed{seed}.tsv"
    wildcard_constraints:
        blend=BEST_FIT_BLEND,
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
        format=FORMAT_VERSIONS["packing"],
        options=blend_best_fit_options,
    message:
        "best-fit packing of blend {wildcards.blend}, seq {wildcards.seq_length}, seed {wildcards.seed} -> {output.index} (log: {log})"
    shell:
        "({params.job.cd}tokenmill best-fit {params.options} -o {params.job.index:q}"
        " --seq-length {wildcards.seq_length} --seed {wildcards.seed}"
        " && tokenmill verify {params.job.index:q}) > {log:q} 2>&1"


# An SFT set's best-fit rows: its pair's conversations packed whole into rows of its seq_length
# (tokenmill.training.sft_datasets.PackedConversations); verified against the packer again before the job ends.
rule sft_best_fit:
    input:
        pbin=sft_files("{name}")[0],
        meta=sidecar_path(sft_files("{name}")[0]),
    output:
        rows=directory(sft_packing_dir("{name}")),
    log:
        "logs/sft_best_fit/{name}.log",
    benchmark:
        "benchmarks/sft_best_fit/{name}.tsv"
    wildcard_constraints:
        name=SFT_BEST_FIT,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=sft_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["packing"],
        seq_length=sft_seq_length,
    message:
        "best-fit rows of SFT set {wildcards.name} -> {output.rows} (log: {log})"
    shell:
        "({params.job.cd}tokenmill best-fit {params.job.pbin:q} -o {params.job.rows:q} --seq-length {params.seq_length}"
        " && tokenmill verify {params.job.rows:q}) > {log:q} 2>&1"


# OLMo-core's packing caches of an SFT set's parts, in the work_dir a job names: documents from the parts'
# .csv.gz (use_array_if_local: false), the label masks named in the config fragment beside them.
rule sft_olmo_best_fit:
    input:
        parts=sft_olmo_folder("{name}"),
    output:
        work_dir=directory(sft_olmo_packing_dir("{name}")),
    log:
        "logs/sft_olmo_best_fit/{name}.log",
    benchmark:
        "benchmarks/sft_olmo_best_fit/{name}.tsv"
    wildcard_constraints:
        name=SFT_OLMO_BEST_FIT,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=sft_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["packing"],
        options=sft_olmo_best_fit_options,
    message:
        "OLMo-core packing of SFT set {wildcards.name} -> {output.work_dir} (log: {log})"
    shell:
        "({params.job.cd}tokenmill best-fit {params.job.parts:q} -o {params.job.work_dir:q} {params.options}"
        " && tokenmill verify {params.job.work_dir:q}) > {log:q} 2>&1"
