"""The default splitter on one long line (a log or minified file): bounded memory and time."""

from __future__ import annotations

import json
import subprocess
import sys

from ragloom.core import plugins

CHILD = """
import json, resource, time
from ragloom.core import Document, plugins
splitter = plugins.load_default(plugins.DOCUMENT_SPLITTERS)
splitter.split(Document("warm up the tokenizer " * 50))
text = "wordxxx " * (2_000_000 // 8)  # one 2 MB line
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
segments = splitter.split(Document(text))
print(json.dumps({
    "kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before,
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


def test_long_texts_are_counted_exactly_in_slices() -> None:
    tokenizer = plugins.load_default(plugins.DOCUMENT_SPLITTERS).tokenizer  # type: ignore[attr-defined]
    text = "Tokenizers cut words; Überlänge café naïve ok. " * 4000  # ~190 kB, sliced
    whole = len(tokenizer._encode_batch([text], add_special_tokens=False)[0])
    assert tokenizer.count_tokens_batch([text, "a b", text]) == [whole, 2, whole]
