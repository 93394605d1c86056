# ---- Verification: every built file of a dataset checked against its structure and sidecar ------


# One stamp per dataset; `rule all` asks for it, so a build is only done once it verifies.
rule verify:
    input:
        files=verify_inputs,
    output:
        stamp="data/verified/{name}.ok",
    log:
        "logs/verify/{name}.log",
    benchmark:
        "benchmarks/verify/{name}.tsv"
    wildcard_constraints:
        name=BUILD,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=document_index_mem_mb,
        runtime=copy_runtime,
    params:
        format=FORMAT_VERSIONS["verify"],
        options=verify_options,
    shell:
        "tokenmill verify {params.options} --stamp {output.stamp:q} > {log:q} 2>&1"
