"""Behaviour of the ONNX embedding model: batching, truncation, usage, threads, errors."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from ragloom.core import RagloomError, TextSegment
from ragloom.core.embedding import EmbeddingModel, TokenUsage
from ragloom.embeddings.onnx import (
    AllMiniLmL6V2QuantizedEmbeddingModel,
    EmbeddingModelError,
    OnnxEmbeddingModel,
    TextTooLongError,
)
from ragloom.embeddings.onnx.all_minilm import model_file, tokenizer_file

TEXTS = [
    "A short one.",
    "Metadata filters restrict the search to segments whose metadata match a condition, "
    "for example only the documents of one user or of one year.",
    "RAG",
    "",
    "The cat sat quietly on the warm windowsill while the rain kept falling outside.",
    "Embeddings map text to vectors.",
    "x " * 400,  # truncated at 256 tokens
    "Quarterly revenue grew by 12% compared to last year, driven by new subscriptions.",
]


def matrix(model: EmbeddingModel, texts: list[str]) -> npt.NDArray[np.float32]:
    return np.array([np.asarray(e) for e in model.embed_all(texts).embeddings])


def test_is_an_embedding_model(model: AllMiniLmL6V2QuantizedEmbeddingModel) -> None:
    assert isinstance(model, EmbeddingModel)
    assert model.dimension == 384
    embedding = model.embed("hello").embedding
    assert embedding.dimension == 384
    assert embedding.vector.dtype == np.float32


def test_vectors_are_unit_length_and_finite(model: AllMiniLmL6V2QuantizedEmbeddingModel) -> None:
    vectors = matrix(model, TEXTS)
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_batching_restores_the_input_order(model: AllMiniLmL6V2QuantizedEmbeddingModel) -> None:
    alone = np.array([np.asarray(model.embed(text).embedding) for text in TEXTS])
    small_batches = AllMiniLmL6V2QuantizedEmbeddingModel(batch_size=3)
    for batched in (matrix(model, TEXTS), matrix(small_batches, TEXTS)):
        # Padding in a batch changes the float sums only in the last bits.
        np.testing.assert_allclose((batched * alone).sum(axis=1), 1.0, atol=1e-4)
    reversed_texts = TEXTS[::-1]
    np.testing.assert_allclose(
        matrix(small_batches, reversed_texts), matrix(small_batches, TEXTS)[::-1], atol=1e-5
    )


def test_duplicates_get_equal_vectors(model: AllMiniLmL6V2QuantizedEmbeddingModel) -> None:
    vectors = matrix(model, ["same text", "other", "same text"])
    np.testing.assert_allclose(vectors[0], vectors[2], atol=1e-6)


def test_segments_and_strings_embed_alike(model: AllMiniLmL6V2QuantizedEmbeddingModel) -> None:
    segment = TextSegment("Paris is the capital of France.", {"source": "a.txt"})
    a = model.embed(segment).embedding
    b = model.embed("Paris is the capital of France.").embedding
    assert a == b


def test_empty_list_gives_empty_result(model: AllMiniLmL6V2QuantizedEmbeddingModel) -> None:
    result = model.embed_all([])
    assert result.embeddings == []
    assert result.token_usage is not None
    assert result.token_usage.input_token_count == 0


def test_empty_string_embeds_as_the_special_tokens(
    model: AllMiniLmL6V2QuantizedEmbeddingModel,
) -> None:
    result = model.embed("")
    assert result.token_usage is not None
    assert result.token_usage.input_token_count == 2  # [CLS] [SEP]
    assert abs(float(np.linalg.norm(result.embedding.vector)) - 1.0) < 1e-5
    assert model.embed("   ").embedding == result.embedding  # whitespace tokenizes to nothing


def test_token_usage_counts_tokens_read_without_padding(
    model: AllMiniLmL6V2QuantizedEmbeddingModel,
) -> None:
    counter = model.tokenizer
    texts = ["hello world", "A much longer sentence than the first one, with commas."]
    usage = model.embed_all(texts).token_usage
    assert usage is not None
    expected = sum(counter.count_tokens(t) + model.special_tokens for t in texts)
    assert usage.input_token_count == expected
    assert usage.total_token_count == expected
    assert usage.output_token_count is None
    assert model.embed("hello world").token_usage == TokenUsage(input_token_count=4)


def test_long_text_is_truncated_by_default(model: AllMiniLmL6V2QuantizedEmbeddingModel) -> None:
    long_text = " ".join(f"word{i}" for i in range(1000))
    assert model.tokenizer.count_tokens(long_text) > 256
    result = model.embed(long_text)
    assert result.token_usage is not None
    assert result.token_usage.input_token_count == 256
    # Same as embedding a text cut so that it has exactly 256 tokens.
    words = long_text.split()
    cut = next(
        " ".join(words[:n])
        for n in range(1, len(words))
        if model.tokenizer.count_tokens(" ".join(words[:n])) >= 254
    )
    assert model.embed(cut).embedding.cosine_similarity(result.embedding) > 0.9999


def test_strict_rejects_too_long_text_naming_index_and_count() -> None:
    strict = AllMiniLmL6V2QuantizedEmbeddingModel(max_length=16, strict=True)
    fits = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    assert strict.tokenizer.count_tokens(fits) == 14  # 14 + [CLS] + [SEP] = 16: allowed
    assert len(strict.embed_all(["short", fits]).embeddings) == 2
    too_long = fits + " fifteen"
    with pytest.raises(TextTooLongError) as caught:
        strict.embed_all(["short", fits, too_long, "x"])
    error = caught.value
    assert (error.index, error.token_count, error.max_length) == (2, 17, 16)
    assert "index 2" in str(error)
    assert "17 tokens" in str(error)
    assert isinstance(error, RagloomError)
    assert isinstance(error, ValueError)


def test_non_strict_small_limit_truncates() -> None:
    small = AllMiniLmL6V2QuantizedEmbeddingModel(max_length=16)
    usage = small.embed(
        "one two three four five six seven eight nine ten eleven twelve "
        "thirteen fourteen fifteen sixteen"
    ).token_usage
    assert usage is not None
    assert usage.input_token_count == 16


def test_concurrent_embed_all_is_safe(model: AllMiniLmL6V2QuantizedEmbeddingModel) -> None:
    fresh = AllMiniLmL6V2QuantizedEmbeddingModel(batch_size=4)  # session created under race
    expected = matrix(model, TEXTS)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: matrix(fresh, TEXTS), range(8)))
    for got in results:
        np.testing.assert_allclose((got * expected).sum(axis=1), 1.0, atol=1e-4)


def test_similar_sentences_score_higher_than_unrelated(
    model: AllMiniLmL6V2QuantizedEmbeddingModel,
) -> None:
    cat, kitten, revenue, question, answer = model.embed_all(
        [
            "The cat sat quietly on the warm windowsill.",
            "A kitten was sleeping in the sun by the window.",
            "Quarterly revenue grew by 12% compared to last year.",
            "How do I filter search results by metadata?",
            "Metadata filters restrict the search to segments whose metadata match.",
        ]
    ).embeddings
    assert cat.cosine_similarity(kitten) > cat.cosine_similarity(revenue) + 0.3
    assert question.cosine_similarity(answer) > question.cosine_similarity(kitten) + 0.3


def test_generic_model_pooling_and_normalize_options() -> None:
    texts = ["hello world", "a longer sentence about something else entirely"]
    mean_raw = OnnxEmbeddingModel(model_file(), tokenizer_file(), normalize=False)
    mean_unit = OnnxEmbeddingModel(model_file(), tokenizer_file())
    cls_unit = OnnxEmbeddingModel(model_file(), tokenizer_file(), pooling="cls", intra_op_threads=1)
    raw = matrix(mean_raw, texts)
    norms = np.linalg.norm(raw, axis=1)
    assert not np.allclose(norms, 1.0, atol=1e-3)
    np.testing.assert_allclose(raw / norms[:, None], matrix(mean_unit, texts), atol=1e-5)
    cls = matrix(cls_unit, texts)
    np.testing.assert_allclose(np.linalg.norm(cls, axis=1), 1.0, atol=1e-5)
    assert (cls * matrix(mean_unit, texts)).sum(axis=1).max() < 0.999
    assert mean_unit.dimension == 384  # read from the ONNX graph


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pooling": "max"}, "pooling"),
        ({"max_length": 1}, "max_length"),
        ({"batch_size": 0}, "batch_size"),
        ({"max_batch_tokens": 0}, "max_batch_tokens"),
        ({"max_batch_tokens": 2.5}, "max_batch_tokens"),
        ({"intra_op_threads": 0}, "intra_op_threads"),
        ({"inter_op_threads": 1.5}, "inter_op_threads"),
    ],
)
def test_bad_configuration_is_rejected(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OnnxEmbeddingModel(model_file(), tokenizer_file(), **kwargs)  # type: ignore[arg-type]


def test_memory_and_thread_options_reach_the_session_and_keep_the_vectors() -> None:
    texts = ["hello world", "a longer sentence about something else entirely"]
    lean = AllMiniLmL6V2QuantizedEmbeddingModel(
        enable_cpu_mem_arena=False, intra_op_threads=1, inter_op_threads=1, spinning=False
    )
    with pytest.raises(TypeError, match="enable_cpu_mem_arena"):
        AllMiniLmL6V2QuantizedEmbeddingModel(enable_cpu_mem_arena="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="spinning"):
        AllMiniLmL6V2QuantizedEmbeddingModel(spinning=0)  # type: ignore[arg-type]
    options = lean.load().session.get_session_options()
    assert options.enable_cpu_mem_arena is False
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (1, 1)
    default = AllMiniLmL6V2QuantizedEmbeddingModel()
    default_options = default.load().session.get_session_options()
    assert default_options.enable_cpu_mem_arena is True
    # Spinning is off unless asked for (it burns CPU time on shared cores).
    assert default_options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    spinning = AllMiniLmL6V2QuantizedEmbeddingModel(spinning=True)
    spin_options = spinning.load().session.get_session_options()
    assert spin_options.get_session_config_entry("session.intra_op.allow_spinning") == "1"
    np.testing.assert_allclose(matrix(lean, texts), matrix(default, texts), atol=1e-5)
    np.testing.assert_allclose(matrix(spinning, texts), matrix(default, texts), atol=1e-5)


def test_intra_op_threads_set_before_loading_reach_the_session_and_then_stay() -> None:
    """The thread count is settable until the session exists (a Ray actor sets its share)."""
    threaded = AllMiniLmL6V2QuantizedEmbeddingModel()
    assert (threaded.intra_op_threads, threaded.inter_op_threads) == (None, None)
    with pytest.raises(ValueError, match="intra_op_threads must be None or an int >= 1, got 0"):
        threaded.intra_op_threads = 0
    threaded.intra_op_threads = 1
    assert threaded.load().session.get_session_options().intra_op_num_threads == 1
    threaded.intra_op_threads = 1  # unchanged: allowed
    with pytest.raises(RagloomError, match="cannot change to 2: the session of .* runs with 1"):
        threaded.intra_op_threads = 2
    assert threaded.intra_op_threads == 1
    assert AllMiniLmL6V2QuantizedEmbeddingModel(inter_op_threads=2).inter_op_threads == 2


def test_bundled_model_limits_max_length_to_its_positions() -> None:
    with pytest.raises(ValueError, match="512"):
        AllMiniLmL6V2QuantizedEmbeddingModel(max_length=513)
    assert AllMiniLmL6V2QuantizedEmbeddingModel(max_length=512).max_length == 512


def test_missing_or_broken_files_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="not found"):
        OnnxEmbeddingModel(tmp_path / "nope.onnx", tokenizer_file())
    with pytest.raises(EmbeddingModelError, match="tokenizer file not found"):
        OnnxEmbeddingModel(model_file(), tmp_path / "tokenizer.json")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not an onnx file")
    model = OnnxEmbeddingModel(broken, tokenizer_file())
    with pytest.raises(EmbeddingModelError, match="broken.onnx"):
        model.embed("hello")


def test_wrong_input_types_are_rejected(model: AllMiniLmL6V2QuantizedEmbeddingModel) -> None:
    with pytest.raises(TypeError):
        model.embed_all("not a list")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        model.embed_all([b"bytes"])  # type: ignore[list-item]


def test_import_does_not_load_onnxruntime_or_tokenizers() -> None:
    code = (
        "import sys, ragloom.embeddings.onnx\n"
        "print(sorted({'onnxruntime', 'tokenizers'} & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def batch_sizes(model: OnnxEmbeddingModel, lengths: list[int]) -> list[int]:
    batches = model._batches(np.array(lengths, dtype=np.int64))
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(lengths)))  # each text exactly once
    for batch in batches:  # each batch is length-sorted and in global length order
        assert np.all(np.diff(np.array(lengths)[batch]) >= 0)
    return [len(batch) for batch in batches]


def test_batches_are_cut_at_batch_size(model: AllMiniLmL6V2QuantizedEmbeddingModel) -> None:
    assert batch_sizes(model, [12] * 70) == [32, 32, 6]
    assert batch_sizes(model, [60] * 16 + [63] * 16) == [32]  # similar lengths: one batch
    assert batch_sizes(model, list(range(20, 52))) == [16, 16]  # 51 would pad 20 by 31


def test_one_long_text_does_not_pad_a_batch_of_short_ones(
    model: AllMiniLmL6V2QuantizedEmbeddingModel,
) -> None:
    lengths = [12] * 15 + [256] + [14] * 16
    assert batch_sizes(model, lengths) == [31, 1]
    batches = model._batches(np.array(lengths, dtype=np.int64))
    assert batches[1].tolist() == [15]


def test_gradually_longer_texts_are_cut_where_padding_grows() -> None:
    model = AllMiniLmL6V2QuantizedEmbeddingModel()
    lengths = list(range(68, 177, 4))  # 28 texts from 68 to 176 tokens
    sizes = batch_sizes(model, lengths)
    assert len(sizes) > 1
    start = 0
    for size in sizes:  # every batch wastes at most a quarter (or 128 tokens) on padding
        batch = lengths[start : start + size]
        padding = size * max(batch) - sum(batch)
        assert padding <= max(0.25 * sum(batch), 128)
        start += size


def test_batches_fixed_when_splitting_is_off() -> None:
    fixed = AllMiniLmL6V2QuantizedEmbeddingModel(batch_size=8, max_batch_tokens=None)
    fixed._max_padding = None
    assert batch_sizes(fixed, [12] * 15 + [256]) == [8, 8]
    assert batch_sizes(fixed, [256] * 32) == [8] * 4


def test_batches_keep_to_the_token_budget(model: AllMiniLmL6V2QuantizedEmbeddingModel) -> None:
    # Long texts run 8 to a batch (8 x 256 = 2048 padded tokens), short ones 32.
    assert model.max_batch_tokens == 2048
    assert batch_sizes(model, [256] * 20) == [8, 8, 4]
    assert batch_sizes(model, list(range(100, 132))) == [17, 15]  # 17 x 116, 15 x 131
    assert batch_sizes(model, [12] * 40) == [32, 8]
    small = AllMiniLmL6V2QuantizedEmbeddingModel(max_batch_tokens=100)
    assert batch_sizes(small, [60, 70, 200]) == [1, 1, 1]  # a text over the budget runs alone
    rng = np.random.default_rng(5)
    lengths = rng.integers(2, 257, 300)
    for batch in model._batches(lengths):
        assert len(batch) * int(lengths[batch].max()) <= 2048


def test_the_token_budget_does_not_change_the_vectors() -> None:
    texts = [("word " * n).strip() for n in (3, 50, 120, 250, 7, 90)]
    tight = AllMiniLmL6V2QuantizedEmbeddingModel(max_batch_tokens=128)
    loose = AllMiniLmL6V2QuantizedEmbeddingModel(max_batch_tokens=None)
    np.testing.assert_allclose(matrix(tight, texts), matrix(loose, texts), atol=1e-5)


def test_batches_of_random_lengths_cover_every_text(
    model: AllMiniLmL6V2QuantizedEmbeddingModel,
) -> None:
    rng = np.random.default_rng(3)
    for size in (1, 2, 33, 200):
        lengths = rng.integers(2, 257, size).tolist()
        assert all(n <= 32 for n in batch_sizes(model, lengths))


def test_the_model_file_ships_beside_its_tokenizer_and_licence() -> None:
    folder = model_file().parent
    assert folder == tokenizer_file().parent
    assert (folder / "LICENSE").is_file()
    assert (folder / "NOTICE").is_file()
    assert model_file().stat().st_size < 30_000_000  # int8-stored weights (fp32: 90 MB)
