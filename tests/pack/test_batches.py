"""pack/batches: indexed lines cut into batches of about batch_bytes of whole lines; each batch prepared (read,
parsed, its proof sample chosen) and finished (encoded, proven, the EOD appended where a text does not already
end with it) in threads; results back strictly in batch order whatever the worker count."""

import gzip
import random
import threading
import time
from collections import deque

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from conftest import GPT2, GPT2_EOD, GPT2_EOD_ID, write_jsonl_bytes
from tokenmill.inputs.jsonl import stream_line_batches
from tokenmill.inputs.raw_index import scan_lines
from tokenmill.inputs.utf8_texts import Utf8Texts
from tokenmill.pack.batches import line_batches, ordered_results, preload_engine, start_engine
from tokenmill.pack.settings import PackSettings
from tokenmill.tokenization.engine import gigatoken_installed


def test_lines_are_cut_into_batches_of_about_batch_bytes_of_whole_lines():
    lines = np.array([[0, 9], [10, 9], [20, 29], [50, 4], [55, 4]], dtype=np.int64)  # offset, length (no \n)
    sizes = deque()
    tasks = list(line_batches("x.jsonl", lines, 7, 20, "hf", sizes))
    # a batch ends with the last line that ends by a multiple of 20 bytes (the third line spans both 20 and 40)
    assert [(task[1], task[2][:, 0].tolist()) for task in tasks] == [(7, [0, 10]), (9, [20, 50, 55])]
    assert list(sizes) == [20, 40]  # each batch's bytes, its last newline included
    assert all(task[0] == "x.jsonl" and task[3] == "hf" and task[4] is None for task in tasks)
    assert list(line_batches("x.jsonl", lines[:0], 1, 20, "hf", deque())) == []


@settings(max_examples=50, deadline=None)
@given(lengths=st.lists(st.integers(0, 50), min_size=1, max_size=40), batch_bytes=st.integers(1, 200))
def test_batches_hold_every_line_once_in_order(lengths, batch_bytes):
    offsets = np.concatenate([[0], np.cumsum(np.array(lengths) + 1)[:-1]])
    lines = np.stack([offsets, lengths], axis=1).astype(np.int64)
    sizes = deque()
    tasks = list(line_batches("x", lines, 1, batch_bytes, "hf", sizes))
    assert np.array_equal(np.concatenate([task[2] for task in tasks]), lines)
    assert [task[1] for task in tasks] == list(np.cumsum([0] + [len(task[2]) for task in tasks[:-1]]) + 1)
    assert sum(sizes) == int(offsets[-1] + lengths[-1]) + 1
    # a batch past batch_bytes holds one line more than fits, never a cut line
    assert all(len(task[2]) == 1 or size <= batch_bytes + max(lengths) + 1 for task, size in zip(tasks, sizes))


class Shuffled:
    """A job whose stages take random times, as batches of different texts do."""

    def __init__(self):
        self.threads = set()

    def prepare(self, task):
        time.sleep(random.random() / 500)
        return task

    def finish(self, task):
        self.threads.add(threading.get_ident())
        time.sleep(random.random() / 500)
        return task * 2


def test_results_come_back_in_task_order_whatever_the_workers():
    for workers in (1, 3, 8):
        job = Shuffled()
        assert list(ordered_results(range(60), job, workers, lambda: 2)) == [2 * i for i in range(60)]
        assert len(job.threads) <= workers


def test_a_batch_of_real_lines_is_encoded_with_one_eod_per_document_and_its_bad_lines_named(tmp_path):
    texts = ["Hello world", "ends with its own <|endoftext|>", "third"]
    lines = [f'{{"text": "{text}"}}'.encode() for text in texts]
    lines.insert(1, b"not json")
    source = write_jsonl_bytes(tmp_path / "x.jsonl", lines)
    job = start_engine(PackSettings(str(GPT2), eod=GPT2_EOD, on_bad_line="skip", engine="hf"), "hf", 100, "")
    try:
        (task,) = line_batches(str(source), scan_lines(source), 1, 1 << 20, "hf", deque())
        tokens, lengths, bad, _, eod_in_text, eod_within = job.finish(job.prepare(task))
    finally:
        job.close()
    reference = Tokenizer.from_file(str(GPT2))
    expected = [reference.encode(text).ids for text in texts]
    expected = [ids if ids[-1] == GPT2_EOD_ID else ids + [GPT2_EOD_ID] for ids in expected]
    assert tokens.tolist() == [token for ids in expected for token in ids]
    assert lengths.tolist() == [len(ids) for ids in expected]
    assert [line for line, _ in bad] == [2] and eod_in_text.tolist() == [1] and eod_within == 0


def test_preloading_names_the_fast_engine_start_engine_will_load_and_none_under_hf():
    from tokenmill.tokenization.engine import preferred_fast_engine

    assert preload_engine(PackSettings(str(GPT2), eod=GPT2_EOD, engine="hf")) is None
    settings = PackSettings(str(GPT2), eod=GPT2_EOD, engine="auto")
    assert preload_engine(settings) == preferred_fast_engine("auto", GPT2) == (
        "gigatoken" if gigatoken_installed() else "fastokens")
    job = start_engine(settings, "auto", 1e9, "")  # gigatoken's load has ended before HF's began
    try:
        assert job.chosen.name == preload_engine(settings)
    finally:
        job.close()


@pytest.mark.skipif(not gigatoken_installed(), reason="gigatoken is an optional extra")
def test_gigatoken_reads_a_batch_it_can_parse_in_c_as_one_buffer_and_a_batch_with_a_bad_line_as_before(tmp_path):
    """The C parser's batch (one UTF-8 buffer, no str per text) gives the ids HF gives; a bad line anywhere sends
    the batch to orjson, which names it as before."""
    texts = ["Hello world", "caf\u00e9 \U0001f642 \"quoted\"\n\ttab", "ends with its own <|endoftext|>", "x" * 300]
    good = [orjson.dumps({"id": i, "meta": {"text": 1}, "text": text}) for i, text in enumerate(texts)]
    reference = Tokenizer.from_file(str(GPT2))
    expected = [ids if ids[-1] == GPT2_EOD_ID else ids + [GPT2_EOD_ID]
                for ids in (reference.encode(text).ids for text in texts)]
    job = start_engine(PackSettings(str(GPT2), eod=GPT2_EOD, on_bad_line="skip", engine="gigatoken"), "gigatoken",
                       1e9, "")
    try:
        for name, lines, bad_lines in (("good", good, []), ("bad", good[:2] + [b'{"text": NaN}'] + good[2:], [3])):
            source = write_jsonl_bytes(tmp_path / f"{name}.jsonl", lines)
            (task,) = line_batches(str(source), scan_lines(source), 1, 1 << 20, "gigatoken", deque())
            prepared = job.prepare(task)
            assert isinstance(prepared.texts, Utf8Texts) == (name == "good")
            tokens, lengths, bad, checked, _, _ = job.finish(prepared)
            assert tokens.tolist() == [token for ids in expected for token in ids]
            assert lengths.tolist() == [len(ids) for ids in expected]
            assert [line for line, _ in bad] == bad_lines and checked.texts == 4
    finally:
        job.close()


@pytest.mark.skipif(not gigatoken_installed(), reason="gigatoken is an optional extra")
def test_a_compressed_batch_with_a_line_over_max_line_bytes_names_it_bad_with_gigatoken(tmp_path):
    """A compressed input's block holds a line over max_line_bytes whole where it fits one read, or gives it at
    offset -1 with none of its bytes: either is a bad line, as in a plain input, and neither reaches the C parser
    (which took the first and raised ValueError on the second)."""
    texts = ["short", "caf\u00e9", "x" * 40, "last"]
    lines = [orjson.dumps({"text": text}) for text in texts[:2]] + [orjson.dumps({"text": "y" * 60})]
    lines += [orjson.dumps({"text": text}) for text in texts[2:]] + [orjson.dumps({"text": "z" * 300})]
    source = tmp_path / "x.jsonl.gz"
    source.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    reference = Tokenizer.from_file(str(GPT2))
    expected = [ids + [GPT2_EOD_ID] for ids in (reference.encode(text).ids for text in texts)]
    job = start_engine(PackSettings(str(GPT2), eod=GPT2_EOD, on_bad_line="skip", engine="gigatoken",
                                    max_line_bytes=70), "gigatoken", 1e9, "")
    try:
        results = [job.finish(job.prepare((str(source), first, batch_lines, "gigatoken", block)))
                   for first, batch_lines, block in stream_line_batches(source, "gzip", 200, 70)]
    finally:
        job.close()
    assert -1 in [int(offset) for _, batch_lines, _ in stream_line_batches(source, "gzip", 200, 70)
                  for offset in batch_lines[:, 0]]  # the long last line came without its bytes
    assert np.concatenate([tokens for tokens, *_ in results]).tolist() == [t for ids in expected for t in ids]
    bad = [(line, reason.split(",")[0]) for _, _, batch_bad, *_ in results for line, reason in batch_bad]
    assert bad == [(3, "line of 71 bytes"), (6, "line of 311 bytes")]


_ADVERSARIAL_GOOD = [  # each a line the C parser takes: its texts must be fastokens' (orjson's) to the byte
    rb'{"text":"nul \u0000 ls \u2028 ps \u2029 bom \ufeff pair \ud83d\ude42 \uDBFF\uDFFF \/ q \" b \\ \b\f\n\r\t"}',
    '{"text":"1 \u00e9 2 \u20ac 4 \U0001f642 \U0010ffff \uffff e\u0301\u0308 \u0300 \U0001f3f3\ufe0f\u200d\U0001f308"}'
    .encode(), rb'{"text":"<|endoftext|>"}', rb'{"text":"a<|endoftext|>b<|endoftext|><|endoftext|"}',
    rb'{"text":"\u003c|endoftext|\u003e ends with its own <|endoftext|>"}', b'{"text":"crlf"}\r',
    b' \t{ "id" : -0 , "n" : [1e99, -1.5E-07, 123456789012345678, true, false, null, {}, []] , "text" : "ws" } ',
    b'{"meta":{"text":1,"t\\u0065xt":"x"},"d":' + b"[" * 62 + b"]" * 62 + b',"text":"nested keys and 63 deep"}',
    b'{"text":" "}', b'{"text":"' + "\u00e9\U0001f642 <|endoftext|> e\u0301 ".encode() * 800 + b'"}']
_ADVERSARIAL_BAD = [  # each a bad line, named as fastokens names it, or one the C parser gives up on
    b"", b"  \r", b'{"text":""}', b'{"text":1}', b'{"id":1}', b'{"text":"\\ud83d"}', b'{"text":"\\ude42x"}',
    b'{"text":"\xc0\xaf"}', b'{"text":"\xed\xa0\x80"}', b'{"text":"\xf4\x90\x80\x80"}', b'{"text":"a\x00"}',
    b'\xef\xbb\xbf{"text":"bom"}', b'{"text":"a"}\x00', b'{"text":"a"} {"text":"b"}', b'{"n":NaN,"text":"a"}',
    b'{"text":"first","text":"second"}', b'{"te\\u0078t":"escaped key"}', b'{"n":1e400,"text":"big"}',
    b'{"d":' + b"[" * 2000 + b"]" * 2000 + b',"text":"deep"}', b'{"text":"cut \xc3\xa9']


@pytest.mark.skipif(not gigatoken_installed(), reason="gigatoken is an optional extra")
def test_gigatoken_packs_adversarial_lines_to_fastokens_bytes_whether_parsed_in_c_or_by_orjson(tmp_path):
    """Escapes of every kind, every UTF-8 width, added-token strings (the proof's spots), CRLF, deep nesting: a batch
    of such lines parsed in C gives fastokens' ids, EODs and proof; one with bad lines among them (orjson's path)
    names every bad line as fastokens does, whether the input is plain or gzip."""
    mixed = [line for pair in zip(_ADVERSARIAL_GOOD * 2, _ADVERSARIAL_BAD) for line in pair]
    files = {"good.jsonl": b"\n".join(_ADVERSARIAL_GOOD) + b"\n", "mixed.jsonl": b"\n".join(mixed)}
    files["mixed.jsonl.gz"] = gzip.compress(files["mixed.jsonl"])
    results = {}
    for engine in ("gigatoken", "fastokens"):
        job = start_engine(PackSettings(str(GPT2), eod=GPT2_EOD, on_bad_line="skip", engine=engine, check_fraction=0.5),
                           engine, 1e9, "")
        try:
            for name, data in files.items():
                source = tmp_path / name
                source.write_bytes(data)
                if name.endswith(".gz"):
                    tasks = [(str(source), first, lines, engine, block)
                             for first, lines, block in stream_line_batches(source, "gzip", 1 << 20, 1 << 20)]
                else:
                    tasks = line_batches(str(source), scan_lines(source), 1, 1 << 20, engine, deque())
                for task in tasks:  # (the gzip stream's last line, without its newline, comes as a batch of its own)
                    prepared = job.prepare(task)
                    assert isinstance(prepared.texts, Utf8Texts) == (engine == "gigatoken" and name == "good.jsonl")
                    tokens, lengths, bad, checked, eod_in_text, eod_within = job.finish(prepared)
                    results.setdefault((engine, name), []).append(
                        (tokens.tolist(), lengths.tolist(), bad, checked, eod_in_text.tolist(), eod_within))
        finally:
            job.close()
    for name in files:
        assert results["gigatoken", name] == results["fastokens", name]
    assert [line for batch in results["gigatoken", "mixed.jsonl.gz"] for line, _ in batch[2]] == [
        line for line in range(2, 41, 2) if line not in (32, 34)]  # orjson keeps the second text; the escaped key
