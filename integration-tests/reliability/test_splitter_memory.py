"""The default splitter on one long line (a log or minified file): bounded memory and time."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ragloom.core import plugins

CHILD = """
import json, time
from ragloom.core import Document, plugins
def peak_kib():  # this process's own peak: ru_maxrss keeps the forking parent's across exec
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
splitter = plugins.load_default(plugins.DOCUMENT_SPLITTERS)
splitter.split(Document("warm up the tokenizer " * 50))
text = "wordxxx " * (2_000_000 // 8)  # one 2 MB line
before = peak_kib()
started = time.perf_counter()
segments = splitter.split(Document(text))
print(json.dumps({
    "kib": peak_kib() - before,
    "seconds": time.perf_counter() - started,
    "segments": len(segments),
}))
"""


def test_one_long_line_splits_in_bounded_memory() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, check=True
    )
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    assert measured["segments"] > 1000
    # Peak growth per input byte: about 60 (Python's per-word ints and strings); it was
    # over 200 when the tokenizer encoded the whole line at once.
    assert measured["kib"] * 1024 / 2_000_000 < 120, measured


# One huge single line per run: words, random words, or no whitespace at all (base64, CSV
# digits); peak RSS growth and the number
# of characters handed to the tokenizer (the work), per input character.
HUGE_LINE = """
import base64, json, random, sys
from ragloom.core import Document, plugins
def peak_kib():  # this process's own peak: ru_maxrss keeps the forking parent's across exec
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
kind, size = sys.argv[1], int(sys.argv[2])
splitter = plugins.load_default(plugins.DOCUMENT_SPLITTERS)
splitter.split(Document("warm up the tokenizer " * 50))
tokenizer = splitter.tokenizer
encode, counted = tokenizer._encode_batch, [0]
def counting(texts, **kwargs):
    counted[0] += sum(map(len, texts))
    return encode(texts, **kwargs)
tokenizer._encode_batch = counting
if kind == "words":
    text = "wordxxx " * (size // 8)
elif kind == "base64":
    text = base64.b64encode(random.Random(7).randbytes(size)).decode()[:size]
elif kind == "csv-digits":
    rng = random.Random(7)
    text = ",".join(str(rng.randint(0, 10 ** rng.randint(1, 9))) for _ in range(size // 5))[:size]
else:
    rng = random.Random(7)
    vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(1, 10)))
                  for _ in range(5000)]
    text = " ".join(rng.choices(vocabulary, k=size // 6))[:size]
counted[0] = 0
before = peak_kib()
segments = splitter.split(Document(text))
print(json.dumps({
    "bytes_per_char": (peak_kib() - before)
    * 1024 / len(text),
    "counted_per_char": counted[0] / len(text),
    "segments": len(segments),
    "covered": segments[-1].metadata["end"] == len(text.rstrip()),
}))
"""


@pytest.mark.parametrize(("kind", "megabytes"), [("words", 5), ("words", 20), ("random-words", 5)])
def test_huge_single_lines_split_in_linear_memory_and_work(kind: str, megabytes: int) -> None:
    # 50 MB lines took 2.5 GB (50 bytes per character) before they were packed a window
    # at a time; the tokenizer's work grew with the number of rescans.
    result = subprocess.run(
        [sys.executable, "-c", HUGE_LINE, kind, str(megabytes * 1_000_000)],
        capture_output=True,
        text=True,
        timeout=300,  # a generous 'does not hang' bound, not a timing assertion
        check=True,
    )
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    assert measured["covered"], measured
    assert measured["segments"] > megabytes * 1000, measured
    assert measured["bytes_per_char"] <= 10, measured
    # Each character is counted once for the whole line, once in its word's window (plus
    # the rescanned tail of a window) and in its share of the overlaps: linear work.
    assert measured["counted_per_char"] <= 2.5, measured


@pytest.mark.parametrize("kind", ["base64", "csv-digits"])
def test_huge_lines_without_whitespace_split_in_linear_memory_and_work(kind: str) -> None:
    # A line the tokenizer cannot cut at whitespace was encoded whole (125 bytes per
    # character), and the character splitter counted each segment some ten times over.
    megabytes = 5
    result = subprocess.run(
        [sys.executable, "-c", HUGE_LINE, kind, str(megabytes * 1_000_000)],
        capture_output=True,
        text=True,
        timeout=600,  # a generous 'does not hang' bound, not a timing assertion
        check=True,
    )
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    assert measured["covered"], measured
    assert measured["segments"] > megabytes * 1000, measured
    assert measured["bytes_per_char"] <= 10, measured
    # Counted once whole, once piece by piece while probing cuts (plus the partial pieces
    # at the probes' ends) and in the overlaps: it was about 10 before.
    assert measured["counted_per_char"] <= 4, measured


def test_long_texts_are_counted_exactly_in_slices() -> None:
    tokenizer = plugins.load_default(plugins.DOCUMENT_SPLITTERS).tokenizer  # type: ignore[attr-defined]
    text = "Tokenizers cut words; Überlänge café naïve ok. " * 4000  # ~190 kB, sliced
    whole = len(tokenizer._encode_batch([text], add_special_tokens=False)[0])
    assert tokenizer.count_tokens_batch([text, "a b", text]) == [whole, 2, whole]
