# ---- Verification: every built file of a dataset checked against its structure and sidecar ------


# One stamp per dataset; `rule all` asks for it, so a build is only done once it verifies.
rule verify:
    input:
        files=verify_inputs,
    output:
        stamp=verified_stamp("{build}{view}"),
    log:
        "logs/verify/{build}{view}.log",
    benchmark:
        "benchmarks/verify/{build}{view}.tsv"
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
        format=FORMAT_VERSIONS["verify"],
        options=verify_options,
    message:
        "verify every file of {wildcards.build} (log: {log})"
    shell:
        "({params.job.cd}tokenmill verify --stamp {params.job.stamp:q} {params.options}) > {log:q} 2>&1"


# A blend's cache folders (every sequence length and seed): descriptions, arrays and their bounds.
rule verify_blend:
    input:
        caches=blend_caches,
    output:
        stamp=verified_blend_stamp("{blend}"),
    log:
        "logs/verify/blend/{blend}.log",
    benchmark:
        "benchmarks/verify/blend/{blend}.tsv"
    wildcard_constraints:
        blend=BLEND,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=cache_mem_mb,
        runtime=copy_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["verify"],
    message:
        "verify the caches of blend {wildcards.blend} (log: {log})"
    shell:
        "({params.job.cd}tokenmill verify {params.job.caches:q} --stamp {params.job.stamp:q}) > {log:q} 2>&1"


# An SFT pair: the tokens against the sidecar, the loss mask against the tokens; its OLMo parts against them.
rule verify_sft:
    input:
        pbin=sft_files("{name}")[0],
        loss_mask=sft_files("{name}")[1],
        meta=sidecar_path(sft_files("{name}")[0]),
        olmo=sft_olmo_folders,
    output:
        stamp=verified_sft_stamp("{name}{view}"),
    log:
        "logs/verify/sft/{name}{view}.log",
    benchmark:
        "benchmarks/verify/sft/{name}{view}.tsv"
    wildcard_constraints:
        name=SFT,
        view=VIEW,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=sft_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["verify"],
        options=sft_verify_options,
    message:
        "verify SFT set {wildcards.name} (log: {log})"
    shell:
        "({params.job.cd}tokenmill verify {params.options} --stamp {params.job.stamp:q}) > {log:q} 2>&1"
