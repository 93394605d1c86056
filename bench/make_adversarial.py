"""Write an adversarial JSONL corpus for the proof's budget: multilingual words, emoji and combining marks.

    python bench/make_adversarial.py /tmp/corpus/emoji-40MB.jsonl                     # ~40 MB, 30,000 documents
    python bench/make_adversarial.py /tmp/corpus/special-40MB.jsonl --special 0.5     # half the words special tokens

Every document is made of words drawn (seeded, so the file is the same on every run) from Latin
with accents in decomposed form (combining marks after the letter), Cyrillic, Greek, Arabic,
Devanagari, CJK (some outside the BMP), mathematical letters (outside the BMP), Zalgo text (a
letter under 2-6 combining marks), emoji with skin tones, ZWJ families and flags, and ASCII words;
with ``--special S``, a share S of the words are special-token strings of GPT-2 and Tekken
(``<|endoftext|>``, ``</s>``, ``[INST]``, ...). Lines break every 8-30 words. So nearly every
document holds every kind of spot the proof treats as risky (code points outside the BMP,
combining marks, added-token strings): the case where checking every risky document whole would
re-encode most of the job with Hugging Face. Document sizes are log-uniform around the mean
(``--bytes / --docs``), a few ten times longer.

Cost: ~10 s for 40 MB.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

_LATIN = ["cafe\u0301", "re\u0301sume\u0301", "nai\u0308ve", "jalapen\u0303o", "se\u0301ance", "u\u0308ber",
          "ac\u0327a\u0303o", "Zu\u0308rich", "the", "and", "with", "from", "language", "model", "token"]
_CYRILLIC = ["привет", "мир", "язык", "данные", "модель", "йод", "ёлка"]
_GREEK = ["γλώσσα", "κόσμος", "δεδομένα", "ἀρχή", "ὕδωρ"]
_ARABIC = ["مرحبا", "بالعالم", "اللغة", "البيانات"]
_DEVANAGARI = ["नमस्ते", "दुनिया", "भाषा", "क्षत्रिय"]
_CJK = ["東京", "晴れ", "中文字符", "日本語", "한국어", "텍스트", "\U00020000\U00020001", "\U0002A6A5字", "𠮷野家"]
_MATH = ["\U0001D400\U0001D401\U0001D402", "\U0001D4D0\U0001D4D1", "\U0001D7D8\U0001D7D9"]
_EMOJI = ["🙂", "🙃", "😂", "🎉", "👍🏽", "👩‍👩‍👧‍👦", "👨🏽‍💻", "🏳️‍🌈", "🇫🇷", "🇯🇵", "❤️", "🧑‍🚀", "🐍", "🔥🔥"]
_COMBINING = [chr(code) for code in range(0x0300, 0x0370)] + ["\u20d7", "\u1ab0", "\u1dc0", "\ufe20"]
_SPECIAL = ["<|endoftext|>", "</s>", "<s>", "[INST]", "[/INST]", "<unk>", "<SPECIAL_12>", "[TOOL_CALLS]"]


def _zalgo(rng: random.Random) -> str:
    return "".join(rng.choice("aeiouxyz") + "".join(rng.choices(_COMBINING, k=rng.randint(2, 6)))
                   for _ in range(rng.randint(2, 6)))


# (cumulative share, words) of each kind; the rest are emoji.
_KINDS = [(0.22, _LATIN), (0.34, _CYRILLIC), (0.42, _GREEK), (0.48, _ARABIC), (0.54, _DEVANAGARI), (0.66, _CJK),
          (0.71, _MATH), (0.78, None)]


def _word(rng: random.Random, special: float) -> str:
    if special and rng.random() < special:
        return rng.choice(_SPECIAL)
    kind = rng.random()
    words = next((words for share, words in _KINDS if kind < share), _EMOJI)
    return _zalgo(rng) if words is None else rng.choice(words)


def document(rng: random.Random, target_bytes: int, special: float) -> str:
    """One document of about ``target_bytes`` of UTF-8."""
    lines, size = [], 0
    while size < target_bytes:
        line = " ".join(_word(rng, special) for _ in range(rng.randint(8, 30)))
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--docs", type=int, default=30_000)
    parser.add_argument("--bytes", type=float, default=40e6, help="about this many bytes of JSONL")
    parser.add_argument("--special", type=float, default=0.0, help="share of words that are special-token strings")
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    mean = args.bytes / args.docs
    with open(args.out, "w", encoding="utf-8") as out:
        for number in range(args.docs):
            # log-uniform between mean/8 and 4*mean (mean ~1.0x the target), one in 500 ten times longer
            size = math.exp(rng.uniform(math.log(mean / 8), math.log(mean * 4))) * 0.84
            if rng.random() < 0.002:
                size *= 10
            text = document(rng, int(size), args.special)
            out.write(json.dumps({"id": f"adv-{number}", "text": text}, ensure_ascii=False) + "\n")
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.1f} MB, {args.docs} documents")


if __name__ == "__main__":
    main()
