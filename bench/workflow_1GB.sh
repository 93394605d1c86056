#!/usr/bin/env bash
# The whole chain on a 1 GB corpus through Snakemake, timed: raw index, pack, Megatron .bin/.idx,
# index caches for 2 sequence lengths x 2 seeds (one epoch), verify.
#
#   bash bench/make_corpus.sh 1GB            # → /tmp/corpus/real-1GB.jsonl
#   bash bench/workflow_1GB.sh [CORPUS] [CORES]        # prints Snakemake's per-rule benchmark files
#
# Runs in a scratch copy of the workflow (/tmp/tokenmill-1GB) whose config is only this dataset.
set -euo pipefail
corpus=${1:-/tmp/corpus/real-1GB.jsonl}
cores=${2:-2}
repo=$(cd "$(dirname "$0")/.." && pwd)
scratch=/tmp/tokenmill-1GB
rm -rf "$scratch" && mkdir -p "$scratch/config" "$scratch/data"
cp -r "$repo/Snakefile" "$repo/workflow" "$repo/environment.yml" "$scratch/"
cp -r "$repo/data/tokenizers" "$scratch/data/"
cat > "$scratch/config/config.yaml" <<YAML
tokenizers:
  gpt2: {path: data/tokenizers/gpt2.tokenizer.json, eod: "<|endoftext|>"}
datasets:
  corpus: {inputs: ["$corpus"], tokenizer: gpt2}
sampling: {seq_lengths: [1024, 4096], seeds: [1, 2], epochs: 1}
YAML
cd "$scratch"
start=$(date +%s.%N)
snakemake --cores "$cores" --quiet rules
end=$(date +%s.%N)
echo "wall: $(echo "$end - $start" | bc) s for $(du -b "$corpus" | cut -f1) bytes with --cores $cores"
for tsv in benchmarks/*/*.tsv benchmarks/*/*/*.tsv; do
    [ -e "$tsv" ] && echo "$tsv: $(tail -1 "$tsv" | cut -f1,3) (s, max RSS MB)"
done
