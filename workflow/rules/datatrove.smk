# ---- Stage 3b: datatrove/nanotron .ds files, for datasets whose `formats` name datatrove ------


# One folder per build (nanotron's Nanoset takes a folder per dataset and reads every .ds in it): the
# bytes datatrove's DocumentTokenizer writes for the same documents, converted from the build's .pbin
# (no second tokenizing: a format added to a built dataset is derived from its tokens).
rule datatrove:
    input:
        pbin=packed_path("{build}"),
        meta=sidecar_path(packed_path("{build}")),
    output:
        ds=f"{datatrove_name('{build}')}.ds",
        index=f"{datatrove_name('{build}')}.ds.index",
        metadata=f"{datatrove_name('{build}')}.ds.metadata",
    log:
        "logs/datatrove/{build}.log",
    benchmark:
        "benchmarks/datatrove/{build}.tsv"
    wildcard_constraints:
        build=DATATROVE,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=document_index_mem_mb,
        runtime=copy_runtime,
    params:
        job=job_files,
        format=FORMAT_VERSIONS["datatrove"],
        options=datatrove_options,
    message:
        "datatrove .ds of {wildcards.build} -> {output.ds} (log: {log})"
    shell:
        "({params.job.cd}tokenmill to-datatrove {params.job.pbin:q} -o {params.job.ds:q} {params.options}) > {log:q} 2>&1"
