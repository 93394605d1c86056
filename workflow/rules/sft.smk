# ---- Instruction tuning: conversations → tokens .pbin + loss-mask .pbin (same document index) ---


# The resolved config entry goes in through stdin, so an edit of this entry (params) reruns it.
rule sft:
    input:
        files=sft_inputs,
    output:
        pbin=sft_files("{name}")[0],
        loss_mask=sft_files("{name}")[1],
        meta=sidecar_path(sft_files("{name}")[0]),
    log:
        "logs/sft/{name}.log",
    benchmark:
        "benchmarks/sft/{name}.tsv"
    wildcard_constraints:
        name=SFT,
    conda:
        "../envs/tokenmill.yaml"
    threads: sft_threads
    resources:
        mem_mb=sft_mem_mb,
        runtime=sft_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["sft"],
        config=sft_config,
        inputs=sft_identity,
        pins=sft_pins,
    message:
        "instruction-tuning set {wildcards.name} -> {output.pbin} (log: {log})"
    shell:
        "({params.job.cd}echo {params.config:q} | tokenmill sft - {wildcards.name} {params.pins}"
        " -o {params.job.pbin:q} --workers {threads})"
        " > {log:q} 2>&1"
