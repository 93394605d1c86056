"""The seed config's SFT settings (config/config.yaml's ``sft.chat``) for the bundled data/raw/chat.jsonl: what
tests/training/test_sft_datasets.py reads on access and tests/pack/test_sft.py pre-tokenizes."""

from conftest import REPO

CHAT = REPO / "data/raw/chat.jsonl"
FIELDS = [".role", ".instruction", ".conversations"]
SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}
MASKING = ['.conversations | select(.from == "human")', ".instruction", ".role"]  # the seed config's patterns
ORDER = ["role", "instruction", "conversations"]
