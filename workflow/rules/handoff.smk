# ---- Hand-off: the tokenizer folder a Megatron job's HuggingFaceTokenizer loads ------------------------


# Megatron's HuggingFaceTokenizer takes --tokenizer-model as a folder with a tokenizer_config.json naming the
# eos_token (its end-of-document id); a config tokenizer given as a bare tokenizer.json gets that folder
# beside the Megatron data, so the job can point at it.
rule hf_tokenizer_folder:
    input:
        tokenizer=hf_tokenizer_json,
    output:
        tokenizer=f"{hf_tokenizer_folder('{tokenizer}')}/tokenizer.json",
        config=f"{hf_tokenizer_folder('{tokenizer}')}/tokenizer_config.json",
    log:
        "logs/hf_tokenizer_folder/{tokenizer}.log",
    benchmark:
        "benchmarks/hf_tokenizer_folder/{tokenizer}.tsv"
    wildcard_constraints:
        tokenizer=HF_TOKENIZER_FOLDERS,
    conda:
        "../envs/tokenmill.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        job=job_files,
        options=hf_tokenizer_options,
    message:
        "tokenizer folder for Megatron's HuggingFaceTokenizer -> {output.tokenizer} (log: {log})"
    shell:
        "({params.job.cd}tokenmill hf-tokenizer-folder {params.options}) > {log:q} 2>&1"
