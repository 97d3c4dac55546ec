"""Throughput of ragloom-embedding-onnx against a raw onnxruntime + tokenizers pipeline.

Both pipelines embed the same 32-sentence batches of mixed lengths, in the same process,
with the same number of onnxruntime threads, the same ONNX file and tokenizer.json:

- raw:  ``tokenizers`` ``encode_batch`` (truncation at 256, padding to the longest) ->
        numpy arrays -> ``InferenceSession.run`` -> mean pooling -> L2 normalisation,
        the least code that gives the same vectors;
- ours: ``AllMiniLmL6V2QuantizedEmbeddingModel.embed_all(batch)`` (Embedding objects and
        token usage included), twice: "fixed", with the batch run as one onnxruntime
        call exactly like raw (the like-for-like overhead), and "default", which may
        cut a length-sorted batch in two where one long text would pad all the others.

Each batch is embedded by the pipelines back to back (which one goes first rotates), in
several rounds, so that load from other processes on the machine hits them alike. By
default raw calls ``run`` on the very ``InferenceSession`` object of ragloom's
one-run-per-batch model (created with the options raw would use), so the model's work is
identical and only the code around it differs; ``--separate-sessions`` gives raw a
session of its own. Per pipeline, each batch's best time over the rounds is kept and
summed; overhead = ours (fixed) / raw - 1 (goal <= 10%); the median of the per-batch
ratios is printed too. Time spent outside ``InferenceSession.run`` (tokenizing, arrays,
pooling, objects) is measured separately: it is what the pipelines differ in, and far
less noisy than the model's time. The vectors of the pipelines are checked to agree.

    .venv/bin/python scripts/bench/bench_embeddings_onnx.py [--threads 2] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

WORDS = (  # noqa: SIM905 - a word list is easier to read as text
    "the a of to and in is for on with that by this be are from as it at or an "
    "embedding model store segment document metadata filter query retriever vector "
    "search index token text splitter loader parser chunk score cosine similarity "
    "batch length runtime session thread memory latency throughput pipeline answer "
    "question source page user year report revenue customer product version release"
).split()


def make_batches(count: int, size: int, seed: int) -> list[list[str]]:
    """``count`` batches of ``size`` texts of 3 to 300 words, most of them short.

    Random words from a fixed list, in sentences of 5 to 20 words: the same texts in
    every run and on every machine.
    """
    rng = random.Random(seed)
    batches = []
    for _ in range(count):
        batch = []
        for _ in range(size):
            # Mixed lengths: mostly sentences, some paragraphs, a few over the 256 limit.
            n = int(min(300, max(3, rng.lognormvariate(3.0, 0.9))))
            words: list[str] = []
            while len(words) < n:
                sentence = [rng.choice(WORDS) for _ in range(rng.randint(5, 20))]
                words.extend([*sentence[:-1], sentence[-1] + "."])
            words = words[:n]
            batch.append(" ".join(words).capitalize())
        batches.append(batch)
    return batches


class Timed:
    """Wraps ``InferenceSession.run`` and adds up the seconds spent in it."""

    def __init__(self, run: Callable[..., Any]) -> None:
        self.run_inner = run
        self.seconds = 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.run_inner(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start


def raw_pipeline(
    model_path: Path,
    tokenizer_path: Path,
    threads: int,
    max_length: int,
    session_run: Callable[..., Any] | None,
) -> tuple[Callable[[list[str]], npt.NDArray[np.float32]], Timed]:
    """The raw pipeline; with ``session_run``, on that session instead of a new one."""
    import onnxruntime  # type: ignore[import-untyped]
    from tokenizers import Tokenizer

    if session_run is None:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        session = onnxruntime.InferenceSession(
            str(model_path), options, providers=["CPUExecutionProvider"]
        )
        session_run = session.run
    run = Timed(session_run)
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.enable_truncation(max_length)
    tokenizer.enable_padding()  # to the longest in the batch

    def embed(texts: list[str]) -> npt.NDArray[np.float32]:
        encodings = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (hidden,) = run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        weights = mask.astype(np.float32)
        pooled = np.einsum("bld,bl->bd", hidden, weights) / weights.sum(axis=1, keepdims=True)
        result: npt.NDArray[np.float32] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return result

    return embed, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    parser.add_argument("--batches", type=int, default=6, help="batches of 32 sentences")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--separate-sessions",
        action="store_true",
        help="give raw its own onnxruntime session (default: the same InferenceSession as "
        "ragloom's one-run-per-batch model, so that only the code around it differs)",
    )
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON too")
    args = parser.parse_args()

    from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel
    from ragloom.embeddings.onnx.all_minilm import model_file, tokenizer_file

    batches = make_batches(args.batches, args.batch_size, args.seed)
    sentences = sum(len(b) for b in batches)
    model = AllMiniLmL6V2QuantizedEmbeddingModel(
        batch_size=args.batch_size, intra_op_threads=args.threads
    )
    session = model.load().session
    ours_run = Timed(session.run)
    session.run = ours_run  # the model calls session.run: count its seconds
    fixed = AllMiniLmL6V2QuantizedEmbeddingModel(
        batch_size=args.batch_size, max_batch_tokens=None, intra_op_threads=args.threads
    )
    fixed._max_padding = None  # one onnxruntime call per batch, as raw does
    fixed_session = fixed.load().session
    fixed_run = Timed(fixed_session.run)
    fixed_session.run = fixed_run
    raw, raw_run = raw_pipeline(
        model_file(),
        tokenizer_file(),
        args.threads,
        model.max_length,
        None if args.separate_sessions else fixed_run.run_inner,
    )

    def ours(texts: list[str]) -> list[Any]:
        return model.embed_all(texts).embeddings

    def ours_fixed(texts: list[str]) -> list[Any]:
        return fixed.embed_all(texts).embeddings

    # Same vectors from every pipeline, and warm-up of every session.
    for batch in batches[:2]:
        want = raw(batch)
        for candidate in (ours, ours_fixed):
            got = np.array([np.asarray(e) for e in candidate(batch)])
            worst = float((got * want).sum(axis=1).min())
            if worst < 0.9999:
                sys.exit(f"pipelines disagree: min cosine {worst:.6f}")

    pipelines: dict[str, tuple[Callable[[list[str]], Any], Timed]] = {
        "raw": (raw, raw_run),
        "fixed": (ours_fixed, fixed_run),
        "ours": (ours, ours_run),
    }
    best = {name: [math.inf] * len(batches) for name in pipelines}
    outside: dict[str, list[float]] = {name: [] for name in pipelines}
    ratios: list[float] = []
    names = list(pipelines)
    for round_ in range(args.rounds):
        for i, batch in enumerate(batches):
            shift = (round_ + i) % len(names)  # rotate who goes first
            took = {}
            for name in names[shift:] + names[:shift]:
                embed, run = pipelines[name]
                run.seconds = 0.0
                start = time.perf_counter()
                embed(batch)
                took[name] = time.perf_counter() - start
                outside[name].append(took[name] - run.seconds)
                best[name][i] = min(best[name][i], took[name])
            ratios.append(took["fixed"] / took["raw"])

    # One call with every sentence: our length sorting across the whole call.
    flat = [text for batch in batches for text in batch]
    one_call = math.inf
    for _ in range(2):
        start = time.perf_counter()
        usage = model.embed_all(flat).token_usage
        one_call = min(one_call, time.perf_counter() - start)

    total = {name: sum(values) for name, values in best.items()}
    report = {
        "sentences": sentences,
        "tokens": usage.input_token_count if usage else None,
        "batch_size": args.batch_size,
        "threads": args.threads,
        "rounds": args.rounds,
        "raw_sentences_per_s": sentences / total["raw"],
        "ours_fixed_sentences_per_s": sentences / total["fixed"],
        "ours_default_sentences_per_s": sentences / total["ours"],
        "overhead": total["fixed"] / total["raw"] - 1,
        "overhead_median_of_batch_ratios": statistics.median(ratios) - 1,
        "default_vs_raw": total["ours"] / total["raw"] - 1,
        "raw_ms_outside_onnxruntime_per_batch": 1000 * statistics.median(outside["raw"]),
        "ours_ms_outside_onnxruntime_per_batch": 1000 * statistics.median(outside["fixed"]),
        "ms_per_batch_raw": 1000 * total["raw"] / len(batches),
        "ours_one_call_sentences_per_s": sentences / one_call,
    }
    print(
        f"{sentences} sentences ({report['tokens']} tokens) in {len(batches)} batches of "
        f"{args.batch_size}, {args.threads} onnxruntime threads, best of {args.rounds} rounds"
    )
    print(f"raw onnxruntime + tokenizers   :{report['raw_sentences_per_s']:8.1f} sentences/s")
    print(
        f"ragloom, one run per batch     :{report['ours_fixed_sentences_per_s']:8.1f} sentences/s"
    )
    print(
        f"ragloom, default batching      :{report['ours_default_sentences_per_s']:8.1f} sentences/s"
    )
    print(
        f"overhead (like for like): {report['overhead']:+.1%} (sum of best batch times), "
        f"{report['overhead_median_of_batch_ratios']:+.1%} (median batch ratio); goal <= +10%"
    )
    print(f"default batching vs raw: {report['default_vs_raw']:+.1%}")
    print(
        "time outside onnxruntime per batch (median): "
        f"raw {report['raw_ms_outside_onnxruntime_per_batch']:.2f} ms, "
        f"ours {report['ours_ms_outside_onnxruntime_per_batch']:.2f} ms, "
        f"of {report['ms_per_batch_raw']:.0f} ms per batch"
    )
    print(
        f"ragloom, all {sentences} sentences in one embed_all call (sorted by length): "
        f"{report['ours_one_call_sentences_per_s']:.1f} sentences/s"
    )
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
