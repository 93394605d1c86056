"""`tokenmill inspect`: counts, decoded documents and samples traced back to source file and line."""

import json
from pathlib import Path
import shutil

import pytest

from conftest import GPT2, GPT2_EOD, run_tokenmill, write_jsonl_bytes
from tokenmill.views.inspect_file import source_of


def test_source_line_skips_the_skipped_lines():
    meta = {"sources": [
        {"path": "a.jsonl", "documents": 3, "skipped": {"blank line": {"count": 2, "first_lines": [2, 4]}}},
        {"path": "b.jsonl", "documents": 2, "skipped": {}},
    ]}
    # a.jsonl lines: 1 doc0, 2 blank, 3 doc1, 4 blank, 5 doc2; then b.jsonl lines 1, 2
    assert [source_of(meta, i) for i in range(5)] == [("a.jsonl", 1), ("a.jsonl", 3), ("a.jsonl", 5),
                                                      ("b.jsonl", 1), ("b.jsonl", 2)]
    meta["sources"][0]["skipped"]["blank line"]["count"] = 40  # more skipped lines than the sidecar lists
    assert source_of(meta, 1) == ("a.jsonl", None)



def test_an_sft_document_names_its_own_line_whatever_was_dropped_or_skipped_before_it(tmp_path):
    """A conversation dropped (nothing trained, or longer than seq_length) or skipped as a bad line gives no document:
    inspect --doc N shows N's tokens beside N's own line and turns, never a line earlier conversations left out."""
    from conftest import chat_cases
    from tokenmill.pack.sft import write_sft
    from tokenmill.views.inspect_file import show_document

    cases = chat_cases()
    folder = cases.make_folder("chatml_tools", tmp_path / "tokenizer")
    lines = [{"messages": [{"role": "user", "content": "Hi"}]},  # dropped: nothing trained
             {"messages": [{"role": "robot", "content": "x"}]},  # skipped: a bad line
             cases.CONVERSATIONS[0], cases.CONVERSATIONS[4],  # dropped: longer than seq_length
             cases.CONVERSATIONS[1]]
    chats = tmp_path / "chats.jsonl"
    write_jsonl_bytes(chats, [json.dumps(line, ensure_ascii=False).encode() for line in lines])
    write_sft("chats", {"tokenizers": {"chatml": {"path": str(folder / "tokenizer.json"), "eod": None}},
                        "sft": {"chats": {"inputs": [str(chats)], "tokenizer": "chatml", "chat_template": "tokenizer",
                                          "seq_length": 140, "truncation": "drop", "on_bad_line": "skip"}}},
              tmp_path / "c.pbin")
    assert source_of(json.loads((tmp_path / "c.pbin.meta.json").read_text()), 0) == (str(chats), 3)
    shown = show_document(tmp_path / "c.pbin", 1)
    assert f"source: {chats}, line 5" in shown
    at = shown.index("turns (5, as the source line has them):")
    assert shown[at + 1:at + 3] == ["  0 system: You answer briefly.", "  1 user: Name a prime."]
    assert any(line.startswith("text: <|im_start|>system\\nYou answer briefly.") for line in shown)


def test_an_sft_sidecar_of_an_older_format_with_left_out_lines_names_no_line():
    """Before sft/4 a sidecar listed no line it left out: where any was dropped or skipped, the line is unknown."""
    meta = {"loss_mask": "c.loss_mask.pbin", "dropped": 1, "skipped": {},
            "sources": [{"path": "c.jsonl", "documents": 2, "lines": 3}]}
    assert source_of(meta, 1) == ("c.jsonl", None)
    assert source_of({**meta, "dropped": 0}, 1) == ("c.jsonl", 2)


@pytest.mark.slow
def test_document_and_sample_lead_back_to_their_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    texts = [f"document number {i}: " + "word " * (i % 7 + 3) for i in range(400)]
    lines = [json.dumps({"text": text, "id": f"doc-{i}", "n": i}).encode() for i, text in enumerate(texts)]
    lines.insert(10, b"")  # line 11 is blank and skipped
    write_jsonl_bytes(tmp_path / "x.jsonl", lines)
    (tmp_path / "data/packed").mkdir(parents=True)
    (tmp_path / "data/megatron").mkdir()
    run_tokenmill("pack", "x.jsonl", "--tokenizer", GPT2, "--eod", GPT2_EOD, "--on-bad-line", "skip",
                  "-o", "data/packed/x.pbin")
    run_tokenmill("to-megatron", "data/packed/x.pbin", "-o", "data/megatron/x_text_document")

    shown = run_tokenmill("inspect", "data/packed/x.pbin", "--doc", "10").stdout
    assert "text: document number 10: word" in shown and "source: x.jsonl, line 12" in shown
    assert shown.endswith("\nid: doc-10\n")  # the line's own id
    shown = run_tokenmill("inspect", "data/megatron/x_text_document", "--doc", "10", "--id-field", "n").stdout
    assert shown.endswith("source: x.jsonl, line 12\nid (n): 10\n")
    without = run_tokenmill("inspect", "data/packed/x.pbin", "--doc", "10", "--id-field", "none").stdout
    assert without.endswith("source: x.jsonl, line 12\n")
    assert "skipped lines: {'blank line': 1}" in run_tokenmill("inspect", "data/packed/x.pbin").stdout

    run_tokenmill("sample-index", "data/megatron/x_text_document", "-o", "data/cache/x/seq32_seed5", "--seq-length",
                  "32", "--seed", "5", "--split", "1,0,0", "--epochs", "1", "--vocab-size", "50257")
    sample = run_tokenmill("inspect", "data/megatron/x_text_document", "--sample", "0", "--seq-length", "32",
                           "--seed", "5").stdout.splitlines()
    assert sample[0].startswith("sample 0 of train (seq 32, seed 5) = built sample ")
    pieces = [line for line in sample[1:] if line.startswith("  sequence ")]
    texts_shown = [line.strip() for line in sample[1:] if line.startswith("    ")]
    assert pieces and len(pieces) == len(texts_shown)
    for piece, text in zip(pieces, texts_shown):
        sequence = int(piece.split()[1].rstrip(":"))
        line = int(piece.rsplit("line ", 1)[1])
        assert line == sequence + 1 + (sequence >= 10)  # the blank line 11 shifts later documents
        if ": tokens 0-" in piece:  # a piece from a document's start shows that document's own text
            assert text.startswith(f"document number {sequence}:")

    # the same sample from the .pbin (the workflow's layout leads to its Megatron dataset and cache) and
    # from the cache folder alone (its description names the dataset)
    by_pbin = run_tokenmill("inspect", "data/packed/x.pbin", "--sample", "0", "--seq-length", "32", "--seed", "5")
    by_cache = run_tokenmill("inspect", "data/cache/x/seq32_seed5", "--sample", "0")
    assert by_pbin.stdout.splitlines() == by_cache.stdout.splitlines() == sample

    # a cache built for the job's spelling of the path, where a bare copy of the Megatron files lies on this
    # machine too (no .pbin beside it to give text and source): the workflow's own files are shown
    job = tmp_path / "job/megatron"
    job.mkdir(parents=True)
    for suffix in (".bin", ".idx"):
        shutil.copy(f"data/megatron/x_text_document{suffix}", job / f"x_text_document{suffix}")
    run_tokenmill("sample-index", "data/megatron/x_text_document", "-o", "data/cache/x/seq32_seed5", "--seq-length",
                  "32", "--seed", "5", "--split", "1,0,0", "--epochs", "1", "--vocab-size", "50257",
                  "--job-data-path", job / "x_text_document")
    for description in Path("data/cache/x/seq32_seed5").glob("*description.txt"):  # only the job's cache left
        if str(job) not in description.read_text():
            for stale in Path("data/cache/x/seq32_seed5").glob(description.name.removesuffix("description.txt") + "*"):
                stale.unlink()
    assert run_tokenmill("inspect", "data/cache/x/seq32_seed5", "--sample", "0").stdout.splitlines() == sample
    missing = run_tokenmill("inspect", "data/packed/x.pbin", "--sample", "0", check=False)
    assert missing.returncode == 1 and "--sample needs a cache folder" in missing.stderr

    # another dataset's cache is refused, never shown as pieces of this one
    run_tokenmill("pack", "x.jsonl", "--tokenizer", GPT2, "--eod", GPT2_EOD, "--on-bad-line", "skip",
                  "--jq", '.text + " twice " + .text', "-o", "data/packed/y.pbin")
    run_tokenmill("to-megatron", "data/packed/y.pbin", "-o", "data/megatron/y_text_document")
    wrong = run_tokenmill("inspect", "data/megatron/y_text_document", "--sample", "0", "--cache",
                          "data/cache/x/seq32_seed5", check=False)
    assert wrong.returncode == 1 and wrong.stderr == (
        "tokenmill: error: data/cache/x/seq32_seed5: its train cache was built from another dataset than "
        "data/megatron/y_text_document (its fingerprint differs); name the cache folder of "
        "data/megatron/y_text_document\n")


def test_an_sft_document_shows_its_turns_and_what_is_trained(tmp_path):
    """An SFT .pbin rendered with a chat template: inspect --doc lists the source line's turns (role, text) and
    the tokens in runs of the loss mask, each decoded: the assistant's answers and their end of turn trained,
    the prompt not."""
    from conftest import chat_cases
    from tokenmill.pack.sft import write_sft
    from tokenmill.views.inspect_file import show_document

    cases = chat_cases()
    folder = cases.make_folder("chatml_tools", tmp_path / "tokenizer")
    write_jsonl_bytes(tmp_path / "chats.jsonl", [json.dumps(cases.CONVERSATIONS[n], ensure_ascii=False).encode()
                                                 for n in (0, 1, 4)])
    write_sft("chats", {"tokenizers": {"chatml": {"path": str(folder / "tokenizer.json"), "eod": None}},
                        "sft": {"chats": {"inputs": [str(tmp_path / "chats.jsonl")], "tokenizer": "chatml",
                                          "chat_template": "tokenizer", "seq_length": 512}}}, tmp_path / "c.pbin")

    shown = show_document(tmp_path / "c.pbin", 1)
    at = shown.index("turns (5, as the source line has them):")
    assert shown[at + 1:at + 6] == ["  0 system: You answer briefly.", "  1 user: Name a prime.",
                                    "  2 assistant: Seven.", "  3 user: Another?",
                                    "  4 assistant:  Eleven, of course. "]
    runs = shown[shown.index(next(line for line in shown if line.startswith("loss mask: "))):]
    assert runs[0].startswith("loss mask: ") and runs[0].endswith("tokens trained, in 4 runs:")
    assert [line.split(": ", 1)[1] for line in runs[1:]] == [
        "<|im_start|>system\\nYou answer briefly.<|im_end|>\\n<|im_start|>user\\nName a prime.<|im_end|>\\n"
        "<|im_start|>assistant\\n",
        "Seven.<|im_end|>\\n",
        "<|im_start|>user\\nAnother?<|im_end|>\\n<|im_start|>assistant\\n",
        " Eleven, of course. <|im_end|>\\n"]
    assert [line.split()[2] for line in runs[1:]] == ["not", "trained:", "not", "trained:"]
    trained = int(runs[0].split()[2])
    assert trained == sum(int(line.split()[1].split("-")[1]) - int(line.split()[1].split("-")[0]) + 1
                          for line in runs[1:] if " not trained: " not in line)
    # a tool call is shown as JSON in its turn
    tools = show_document(tmp_path / "c.pbin", 2)
    assert any(line.startswith("  1 assistant: tool calls: [{") and "get_weather" in line for line in tools)
    # a document without its mask file says so in one line
    (tmp_path / "c.loss_mask.pbin").unlink()
    assert show_document(tmp_path / "c.pbin", 0)[-1].startswith("loss mask: cannot read ")


def test_an_sft_best_fit_rows_folder_shows_its_rows_and_a_rows_conversations(tmp_path, monkeypatch):
    """``inspect`` of the folder ``tokenmill best-fit PAIR.pbin`` writes (data/sft/<name>.best_fit): the rows,
    conversations and padding; ``--sample K``: row K's conversations, each with its turns and trained tokens."""
    from conftest import REPO
    from tokenmill.pack.sft import write_sft
    from tokenmill.best_fit.sft_packing import load_sft_best_fit

    monkeypatch.chdir(tmp_path)
    config = {"tokenizers": {"gpt2": {"path": str(GPT2)}},
              "sft": {"chat": {"inputs": [str(REPO / "data/raw/chat.jsonl")], "tokenizer": "gpt2",
                               "special_tokens": {"bos_token": GPT2_EOD, "eos_token": GPT2_EOD},
                               "loss_masking_jq_patterns": ['.conversations | select(.from == "human")',
                                                            ".instruction", ".role"],
                               "message_construction": ["role", "instruction", "conversations"],
                               "seq_length": 2048}}}
    Path("data/sft").mkdir(parents=True)
    write_sft("chat", config, Path("data/sft/chat.pbin"))
    run_tokenmill("best-fit", "data/sft/chat.pbin", "-o", "data/sft/chat.best_fit", "--seq-length", "2048")
    assert run_tokenmill("verify", "data/sft/chat.best_fit").returncode == 0

    shown = run_tokenmill("inspect", "data/sft/chat.best_fit").stdout.splitlines()
    assert shown == ["SFT best-fit rows: data/sft/chat.best_fit (of data/sft/chat.pbin)",
                     "rows: 27 of 2048 tokens, 65 conversations, 54071 tokens",
                     "padding: 1225 tokens (2.2%; one conversation per row would pad 59.4%)"]

    _, pieces, offsets = load_sft_best_fit("data/sft/chat.best_fit")
    members = pieces[offsets[3]:offsets[4]].tolist()
    row = run_tokenmill("inspect", "data/sft/chat.best_fit", "--sample", "3").stdout.splitlines()
    used = sum(count for _, _, count in members)
    assert row[0] == (f"row 3 of data/sft/chat.best_fit (seq 2048): {len(members)} conversations, {used} tokens, "
                      f"{2048 - used} padding")
    heads = [line for line in row if line.startswith("  conversation ")]
    assert [line.split(",")[0] for line in heads] == [f"  conversation {document}: {count} tokens"
                                                      for document, _, count in members]
    assert all(f"from {REPO / 'data/raw/chat.jsonl'} line " in line for line in heads)
    # each conversation as inspect --doc shows it in the pair: its turns, then its trained tokens
    document = members[0][0]
    alone = run_tokenmill("inspect", "data/sft/chat.pbin", "--doc", str(document)).stdout.splitlines()
    from_mask = alone[next(i for i, line in enumerate(alone) if line.startswith("loss mask: ")):]
    at = row.index(heads[0]) + 1
    block = row[at:row.index(heads[1]) if len(heads) > 1 else len(row)]
    assert [line[4:] for line in block[-len(from_mask):]] == from_mask and "tokens trained" in from_mask[0]
    missing = run_tokenmill("inspect", "data/sft/chat.best_fit", "--sample", "27", check=False)
    assert (missing.returncode, missing.stderr) == (1, "tokenmill: error: data/sft/chat.best_fit: 27 SFT rows, "
                                                       "no row 27\n")


def test_a_best_fit_sample_of_a_cache_folder_is_read_from_its_best_fit_sibling(tmp_path, monkeypatch):
    """The workflow builds a build's packed index in data/cache/<b>/seq<L>_seed<S>_best_fit
    (tokenmill.plan.layout.packed_index_dir): ``inspect`` of the plain cache folder (or of the .pbin with
    --seq-length/--seed) with ``--best-fit`` reads it there."""
    monkeypatch.chdir(tmp_path)
    lines = [json.dumps({"text": f"document {i}: " + "word " * (i % 9 + 2)}).encode() for i in range(60)]
    write_jsonl_bytes(tmp_path / "x.jsonl", lines)
    for folder in ("data/packed", "data/megatron", "data/cache/x/seq32_seed5"):
        Path(folder).mkdir(parents=True)
    run_tokenmill("pack", "x.jsonl", "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", "data/packed/x.pbin")
    run_tokenmill("to-megatron", "data/packed/x.pbin", "-o", "data/megatron/x_text_document")
    run_tokenmill("best-fit", "data/megatron/x_text_document", "-o", "data/cache/x/seq32_seed5_best_fit",
                  "--seq-length", "32", "--seed", "5", "--split", "1,0,0")
    direct = run_tokenmill("inspect", "data/cache/x/seq32_seed5_best_fit", "--sample", "0", "--best-fit",
                           "truncate").stdout
    assert direct.startswith("sample 0 of train, best fit (seq 32, seed 5, truncate): ")
    by_cache = run_tokenmill("inspect", "data/cache/x/seq32_seed5", "--sample", "0", "--best-fit", "truncate")
    by_pbin = run_tokenmill("inspect", "data/packed/x.pbin", "--sample", "0", "--seq-length", "32", "--seed", "5",
                            "--best-fit", "truncate")
    assert by_cache.stdout == by_pbin.stdout == direct
    other = run_tokenmill("inspect", "data/cache/x/seq32_seed5", "--sample", "0", "--best-fit", "fragment",
                          check=False)
    assert other.returncode == 1 and other.stderr.startswith(
        "tokenmill: error: data/cache/x/seq32_seed5_best_fit/best_fit-fragment-train-description.json: no packed "
        "index")
