# ---- Verification: every built file of a dataset checked against its structure and sidecar ------


# One stamp per dataset; `rule all` asks for it, so a build is only done once it verifies.
rule verify:
    input:
        files=verify_inputs,
    output:
        stamp="data/verified/{name}.ok",
    params:
        format=FORMAT_VERSIONS["verify"],
        options=verify_options,
    log:
        "logs/verify/{name}.log",
    benchmark:
        "benchmarks/verify/{name}.tsv"
    threads: 1
    resources:
        mem_mb=2000,
    conda:
        "../../environment.yml"
    wildcard_constraints:
        name=DATASET,
    shell:
        "tokenmill verify {params.options} --stamp {output.stamp:q} > {log:q} 2>&1"
