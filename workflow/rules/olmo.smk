# ---- Stage 3c: OLMo-core token files, for datasets whose `formats` name olmo ---------------------


# One folder per build: raw token parts (part-NNNNN.npy, at most olmo_max_tokens each, whole documents),
# each with its documents' start,end,id,src,loc (part-NNNNN.csv.gz), and metadata.json; converted from
# the build's .pbin (no second tokenizing). The number of parts follows from the tokens: the folder is
# the output.
rule olmo:
    input:
        pbin=packed_path("{build}"),
        meta=sidecar_path(packed_path("{build}")),
    output:
        folder=directory(olmo_folder("{build}")),
    log:
        "logs/olmo/{build}.log",
    benchmark:
        "benchmarks/olmo/{build}.tsv"
    wildcard_constraints:
        build=OLMO,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=document_index_mem_mb,
        runtime=copy_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["olmo"],
        options=olmo_options,
    message:
        "OLMo-core parts of {wildcards.build} -> {output.folder} (log: {log})"
    shell:
        "({params.job.cd}tokenmill to-olmo {params.job.pbin:q} -o {params.job.folder:q} {params.options})"
        " > {log:q} 2>&1"


# An SFT set's parts, each with its label mask (1 where a token is trained), from the set's pair.
rule sft_olmo:
    input:
        pbin=sft_files("{name}")[0],
        loss_mask=sft_files("{name}")[1],
        meta=sidecar_path(sft_files("{name}")[0]),
    output:
        folder=directory(sft_olmo_folder("{name}")),
    log:
        "logs/olmo/sft/{name}.log",
    benchmark:
        "benchmarks/olmo/sft/{name}.tsv"
    wildcard_constraints:
        name=SFT_OLMO,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=sft_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["olmo"],
    message:
        "OLMo-core parts of SFT set {wildcards.name} -> {output.folder} (log: {log})"
    shell:
        "({params.job.cd}tokenmill to-olmo {params.job.pbin:q} -o {params.job.folder:q}) > {log:q} 2>&1"
