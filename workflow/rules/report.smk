# ---- Report pages: `snakemake --report report.html` shows them --------------------------------
# Each page records the recipe it is made for (params.recipe, a digest of its own and its verify job's options): two
# configs that share a build but not its page remake it in turn, and `--report` refuses the other's (common.smk).


# One page per build: counts, skipped lines, tokenizer and engine, verify result, length histogram,
# its index caches and what best-fit packing bought.
rule report_dataset:
    input:
        pbin=packed_path("{build}"),
        meta=sidecar_path(packed_path("{build}")),
        verified=verified_stamp("{build}{view}"),
        caches=report_caches,
        best_fit=report_best_fit,
        files=report_files,
    output:
        page=report(
            report_page("{build}{view}"),
            category="Datasets",
            labels={"dataset": "{build}", "page": "statistics"},
        ),
    log:
        "logs/report_dataset/{build}{view}.log",
    benchmark:
        "benchmarks/report_dataset/{build}{view}.tsv"
    wildcard_constraints:
        build=BUILD,
        view=VIEW,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=document_index_mem_mb,
        runtime=copy_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["report"],
        options=report_options,
        recipe=report_recipe,
    message:
        "report page of {wildcards.build} -> {output.page} (log: {log})"
    shell:
        "({params.job.cd}tokenmill report {params.job.pbin:q} --verified {params.job.verified:q} {params.options}"
        " --recipe {params.recipe} -o {params.job.page:q}) > {log:q} 2>&1"


# One page per blend cache folder: weights asked vs shares realised, per split.
rule report_blend:
    input:
        cache=cache_dir(blend_cache_name("{blend}"), "{seq_length}", "{seed}"),
        best_fit=report_blend_best_fit,
    output:
        page=report(
            report_page(blend_cache_name("{blend}"), "{seq_length}", "{seed}"),
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
    params:
        job=job_files,
        format=FORMAT_VERSIONS["report"],
        best_fit=report_blend_best_fit_options,
        recipe=report_blend_recipe,
    message:
        "report page of blend {wildcards.blend} -> {output.page} (log: {log})"
    shell:
        "({params.job.cd}tokenmill report --blend {params.job.cache:q} -o {params.job.page:q}"
        " {params.best_fit} --recipe {params.recipe}) > {log:q} 2>&1"


# One page per SFT set: conversations, tokens and those trained, truncated and dropped conversations, bad
# lines, the chat template or message construction, and what best-fit rows bought.
rule report_sft:
    input:
        pbin=sft_files("{name}")[0],
        loss_mask=sft_files("{name}")[1],
        meta=sidecar_path(sft_files("{name}")[0]),
        verified=verified_sft_stamp("{name}{view}"),
        rows=sft_report_rows,
    output:
        page=report(
            sft_report_page("{name}{view}"),
            category="SFT sets",
            labels={"sft set": "{name}", "page": "statistics"},
        ),
    log:
        "logs/report_sft/{name}{view}.log",
    benchmark:
        "benchmarks/report_sft/{name}{view}.tsv"
    wildcard_constraints:
        name=SFT,
        view=VIEW,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=sft_mem_mb,
        runtime=copy_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["report"],
        options=sft_report_options,
        recipe=sft_report_recipe,
    message:
        "report page of instruction-tuning set {wildcards.name} -> {output.page} (log: {log})"
    shell:
        "({params.job.cd}tokenmill report --sft {params.job.pbin:q} --verified {params.job.verified:q}"
        " {params.options} --recipe {params.recipe} -o {params.job.page:q}) > {log:q} 2>&1"
