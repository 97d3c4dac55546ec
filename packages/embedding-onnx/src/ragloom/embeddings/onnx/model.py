"""A generic in-process embedding model: Hugging Face ``tokenizers`` + onnxruntime.

Works with any sentence-transformers-style ONNX export whose inputs are ``input_ids``
(and optionally ``attention_mask`` and ``token_type_ids``) and whose output is the
token embeddings ``(batch, sequence, hidden)`` (pooled here) or already pooled
sentence embeddings ``(batch, hidden)``.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from ragloom.core.document import TextSegment
from ragloom.core.embedding import (
    Embedding,
    EmbeddingModel,
    EmbeddingResult,
    TokenUsage,
    text_of,
)
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.tokenizer import HuggingFaceTokenizer
from ragloom.embeddings.onnx.errors import EmbeddingModelError, TextTooLongError
from ragloom.embeddings.onnx.tokenizer import load_tokenizer

if TYPE_CHECKING:
    import onnxruntime  # type: ignore[import-untyped]
    from tokenizers import Encoding, Tokenizer

__all__ = [
    "Pooling",
    "OnnxEmbeddingModel",
]

Pooling = Literal["mean", "cls"]

_SUPPORTED_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_INT_TYPES: dict[str, type[np.integer[Any]]] = {
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
}


class _Session:
    """An onnxruntime session and what ``embed_all`` needs to know about its graph."""

    __slots__ = ("dimension", "input_types", "output_name", "session")

    def __init__(self, session: onnxruntime.InferenceSession, output_name: str | None) -> None:
        self.session = session
        self.input_types: dict[str, type[np.integer[Any]]] = {}
        for node in session.get_inputs():
            if node.name not in _SUPPORTED_INPUTS:
                raise EmbeddingModelError(
                    f"the ONNX model has an input {node.name!r} this model cannot feed "
                    f"(supported: {', '.join(_SUPPORTED_INPUTS)})"
                )
            if node.type not in _INT_TYPES:
                raise EmbeddingModelError(
                    f"the ONNX model's input {node.name!r} has type {node.type}; "
                    "expected tensor(int64) or tensor(int32)"
                )
            self.input_types[node.name] = _INT_TYPES[node.type]
        if "input_ids" not in self.input_types:
            raise EmbeddingModelError("the ONNX model has no 'input_ids' input")
        outputs = {node.name: node for node in session.get_outputs()}
        if output_name is None:
            output_name = session.get_outputs()[0].name
        elif output_name not in outputs:
            raise EmbeddingModelError(
                f"the ONNX model has no output {output_name!r} (outputs: {', '.join(outputs)})"
            )
        self.output_name = output_name
        shape = outputs[output_name].shape
        if len(shape) not in (2, 3):
            raise EmbeddingModelError(
                f"the ONNX model's output {output_name!r} has shape {shape}; expected "
                "(batch, sequence, hidden) token embeddings or (batch, hidden)"
            )
        last = shape[-1]
        self.dimension: int | None = last if isinstance(last, int) and last > 0 else None


class OnnxEmbeddingModel(EmbeddingModel):
    """An :class:`~ragloom.core.embedding.EmbeddingModel` run in-process by onnxruntime.

    Each ``embed_all`` call tokenizes all its texts in one call into ``tokenizers``,
    sorts them by token length, runs them in batches of at most ``batch_size`` padded
    only to the longest text of the batch (a batch is cut early where padding would
    exceed a quarter of its real tokens, e.g. 31 sentences and one paragraph), pools the
    token embeddings (``"mean"`` over the attention mask, or the ``"cls"`` token),
    L2-normalises them (``normalize=True``) and returns them in the input order. A batch
    also ends before its padded size (rows times its longest text's tokens) would exceed
    ``max_batch_tokens`` (``None``: no such limit): onnxruntime's attention buffers grow
    with rows times the square of the width, so this bounds the memory embedding takes
    (long texts run 8 to a batch by default) at no cost in speed. The
    token usage is the number of tokens the model read (special tokens included,
    padding excluded).

    Texts longer than ``max_length`` tokens (special tokens included) are truncated to
    their first ``max_length`` tokens, as sentence-transformers does; with
    ``strict=True`` they are rejected with :class:`TextTooLongError` naming the index of
    the text and its token count. The empty string is allowed: it embeds as the special
    tokens alone (``[CLS] [SEP]``), like sentence-transformers.

    The onnxruntime session is created on first use (or by :meth:`load`), once, and is
    shared by concurrent ``embed_all`` calls from several threads.
    ``intra_op_threads`` sets onnxruntime's thread count within an operator and
    ``inter_op_threads`` across operators (``None``: onnxruntime's default, one per
    physical core). ``enable_cpu_mem_arena=False`` turns off onnxruntime's CPU memory
    arena, which keeps the largest batches' buffers for reuse: embedding then holds less
    memory (measured on CISI's 1,460 abstracts: peak RSS 1.17 instead of 1.58 GiB) for
    about 6% more time (see the README). ``spinning=True`` lets onnxruntime's intra-op
    threads busy-wait for work between operators. It is off by default: busy-waiting
    burnt 30-45% more CPU time for the same vectors here (2 cores shared with other
    busy processes, see the README) and takes the cores from the rest of the
    application; on an idle machine it may save a little latency.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        tokenizer_path: str | os.PathLike[str],
        *,
        pooling: Pooling = "mean",
        normalize: bool = True,
        max_length: int = 256,
        batch_size: int = 32,
        max_batch_tokens: int | None = 2048,
        intra_op_threads: int | None = None,
        inter_op_threads: int | None = None,
        enable_cpu_mem_arena: bool = True,
        spinning: bool = False,
        strict: bool = False,
        output_name: str | None = None,
        providers: Sequence[str] | None = None,
    ) -> None:
        if pooling not in ("mean", "cls"):
            raise InvalidArgumentError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
        if type(max_length) is not int or max_length < 2:
            raise InvalidArgumentError(f"max_length must be an int >= 2, got {max_length!r}")
        if type(batch_size) is not int or batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if max_batch_tokens is not None and (
            type(max_batch_tokens) is not int or max_batch_tokens < 1
        ):
            raise InvalidArgumentError(
                f"max_batch_tokens must be None or an int >= 1, got {max_batch_tokens!r}"
            )
        for name, threads in (
            ("intra_op_threads", intra_op_threads),
            ("inter_op_threads", inter_op_threads),
        ):
            if threads is not None and (type(threads) is not int or threads < 1):
                raise InvalidArgumentError(f"{name} must be None or an int >= 1, got {threads!r}")
        for name, flag in (
            ("enable_cpu_mem_arena", enable_cpu_mem_arena),
            ("spinning", spinning),
        ):
            if not isinstance(flag, bool):
                raise InvalidArgumentTypeError(f"{name} must be a bool, got {flag!r}")
        self._model_path = Path(model_path)
        if not self._model_path.is_file():
            raise EmbeddingModelError(f"ONNX model file not found: {self._model_path}")
        self._tokenizer_path = Path(tokenizer_path)
        self._tokenizer = load_tokenizer(self._tokenizer_path)
        self._special_tokens = self._tokenizer.num_special_tokens_to_add(False)
        if self._special_tokens >= max_length:
            raise InvalidArgumentError(
                f"max_length {max_length} leaves no room beside the special tokens"
            )
        self._untruncated: Tokenizer | None = None  # for counting, made on first need
        self._tokenizer.enable_truncation(max_length)
        self._pad_id = _pad_id(self._tokenizer)
        self._pooling: Pooling = pooling
        self._normalize = normalize
        self._max_length = max_length
        self._batch_size = batch_size
        self._max_batch_tokens = max_batch_tokens
        self._intra_op_threads = intra_op_threads
        self._inter_op_threads = inter_op_threads
        self._enable_cpu_mem_arena = enable_cpu_mem_arena
        self._spinning = spinning
        self._strict = strict
        self._output_name = output_name
        self._providers = list(providers) if providers is not None else ["CPUExecutionProvider"]
        self._counter: HuggingFaceTokenizer | None = None
        self._session: _Session | None = None
        self._lock = threading.Lock()
        # Cut a length-sorted batch where its padding would exceed this fraction of its
        # real tokens and this many tokens (None: cut at batch_size only).
        self._max_padding: float | None = 0.25
        self._min_padding_tokens = 128

    # -- configuration -----------------------------------------------------------------

    @property
    def model_path(self) -> Path:
        return self._model_path

    @property
    def tokenizer_path(self) -> Path:
        return self._tokenizer_path

    @property
    def max_length(self) -> int:
        """The most tokens (special tokens included) the model reads of one text."""
        return self._max_length

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def max_batch_tokens(self) -> int | None:
        """The most padded tokens (rows times width) one onnxruntime run gets."""
        return self._max_batch_tokens

    @property
    def strict(self) -> bool:
        return self._strict

    @property
    def intra_op_threads(self) -> int | None:
        """onnxruntime's threads within an operator (``None``: one per physical core).

        Settable until the session is created (first embedding or :meth:`load`), so that
        whoever runs the model knows its share of the machine: e.g. a Ray actor reserving
        one CPU sets 1 instead of a pool as large as the machine in every actor.
        """
        return self._intra_op_threads

    @intra_op_threads.setter
    def intra_op_threads(self, threads: int | None) -> None:
        if threads is not None and (type(threads) is not int or threads < 1):
            raise InvalidArgumentError(
                f"intra_op_threads must be None or an int >= 1, got {threads!r}"
            )
        if self._session is not None and threads != self._intra_op_threads:
            raise EmbeddingModelError(
                f"intra_op_threads cannot change to {threads!r}: the session of "
                f"{self._model_path} already runs with {self._intra_op_threads!r}"
            )
        self._intra_op_threads = threads

    @property
    def inter_op_threads(self) -> int | None:
        """onnxruntime's threads across operators (``None``: onnxruntime's default)."""
        return self._inter_op_threads

    @property
    def tokenizer(self) -> HuggingFaceTokenizer:
        """A token counter (core's ``Tokenizer``) with this model's tokenizer.

        Its counts leave out the special tokens (see :attr:`special_tokens`) and are not
        truncated: a text of ``n`` counted tokens fits when ``n + special_tokens <=
        max_length``.
        """
        if self._counter is None:
            self._counter = HuggingFaceTokenizer(self._untruncated_tokenizer())
        return self._counter

    @property
    def special_tokens(self) -> int:
        """How many special tokens the model's tokenizer adds to a text (2 for BERT)."""
        return self._special_tokens

    def _untruncated_tokenizer(self) -> Tokenizer:
        if self._untruncated is None:
            self._untruncated = load_tokenizer(self._tokenizer_path)
        return self._untruncated

    @property
    def dimension(self) -> int:
        """The embedding dimension, read from the ONNX graph (loads the session)."""
        session = self.load()
        if session.dimension is None:  # dynamic hidden size: ask the model once
            session.dimension = len(self.embed_all([""]).embeddings[0])
        return session.dimension

    # -- the session ---------------------------------------------------------------------

    def load(self) -> _Session:
        """Create the onnxruntime session now (otherwise done by the first embedding)."""
        session = self._session
        if session is None:
            with self._lock:
                if self._session is None:
                    self._session = self._create_session()
                session = self._session
        return session

    def _create_session(self) -> _Session:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        if self._intra_op_threads is not None:
            options.intra_op_num_threads = self._intra_op_threads
        if self._inter_op_threads is not None:
            options.inter_op_num_threads = self._inter_op_threads
        options.enable_cpu_mem_arena = self._enable_cpu_mem_arena
        options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if self._spinning else "0"
        )
        try:
            session = onnxruntime.InferenceSession(
                str(self._model_path), options, providers=self._providers
            )
        except Exception as exc:  # onnxruntime's errors are not in one hierarchy
            raise EmbeddingModelError(f"cannot load ONNX model {self._model_path}: {exc}") from exc
        return _Session(session, self._output_name)

    # -- embedding -----------------------------------------------------------------------

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        """Embed ``texts`` (strings or segments) in order; see the class for the details."""
        if isinstance(texts, (str, TextSegment)):
            raise InvalidArgumentTypeError(
                "embed_all expects a sequence of texts; use embed() for one text"
            )
        strings = [text_of(item) for item in texts]
        count = len(strings)
        if count == 0:
            return EmbeddingResult([], TokenUsage(input_token_count=0))
        encodings = self._tokenizer.encode_batch_fast(strings)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=count)
        if self._strict:
            self._reject_too_long(strings, lengths)
        session = self.load()
        vectors: npt.NDArray[np.float32] | None = None
        for index in self._batches(lengths):
            pooled = self._embed_batch(session, [encodings[i] for i in index], lengths[index])
            if vectors is None:
                vectors = np.empty((count, pooled.shape[1]), dtype=np.float32)
            vectors[index] = pooled
        assert vectors is not None
        embeddings = [Embedding(row) for row in vectors]
        return EmbeddingResult(embeddings, TokenUsage(input_token_count=int(lengths.sum())))

    def _batches(self, lengths: npt.NDArray[np.int64]) -> list[npt.NDArray[np.intp]]:
        """Indices of the texts of each batch: sorted by length, cut to limit padding.

        Texts are taken shortest first. A batch ends at ``batch_size`` texts, before a
        text that would make its padded size exceed ``max_batch_tokens``, or before a
        text that would make the batch's padding exceed ``_max_padding`` (a fraction
        of its real tokens) and ``_min_padding_tokens`` at once: 31 short sentences are
        not padded to the length of one long paragraph, while tiny or similar texts
        still share a batch.
        """
        order = np.argsort(lengths, kind="stable")
        ordered = lengths[order].tolist()
        max_padding = self._max_padding
        budget = self._max_batch_tokens
        batches = []
        start = 0
        real = ordered[0] if ordered else 0
        for j in range(1, len(ordered)):
            rows = j - start
            length = ordered[j]
            padding = (rows + 1) * length - (real + length)  # if text j joined the batch
            if (
                rows >= self._batch_size
                or (budget is not None and (rows + 1) * length > budget)
                or (
                    max_padding is not None
                    and padding > max_padding * (real + length)
                    and padding > self._min_padding_tokens
                )
            ):
                batches.append(order[start:j])
                start = j
                real = 0
            real += length
        batches.append(order[start:])
        return batches

    def _reject_too_long(self, strings: list[str], lengths: npt.NDArray[np.int64]) -> None:
        # A truncated text has exactly max_length tokens; count those candidates in full.
        candidates = np.flatnonzero(lengths >= self._max_length).tolist()
        if not candidates:
            return
        encodings = self._untruncated_tokenizer().encode_batch_fast(
            [strings[i] for i in candidates]
        )
        for index, encoding in zip(candidates, encodings, strict=True):
            full = len(encoding.ids)
            if full > self._max_length:
                raise TextTooLongError(index, full, self._max_length)

    def _embed_batch(
        self, session: _Session, encodings: list[Encoding], lengths: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float32]:
        rows = len(encodings)
        width = int(lengths.max())
        mask = np.arange(width) < lengths[:, None]  # (rows, width), True on real tokens
        total = int(lengths.sum())
        feeds: dict[str, npt.NDArray[Any]] = {}
        for name, dtype in session.input_types.items():
            if name == "attention_mask":
                feeds[name] = mask.astype(dtype)
                continue
            pad = self._pad_id if name == "input_ids" else 0
            array = np.full((rows, width), pad, dtype=dtype)
            values = (
                (e.ids for e in encodings)
                if name == "input_ids"
                else (e.type_ids for e in encodings)
            )
            # Boolean-mask assignment fills row by row, left to right: the tokens in order.
            array[mask] = np.fromiter(itertools.chain.from_iterable(values), dtype, total)
            feeds[name] = array
        try:
            output = session.session.run([session.output_name], feeds)[0]
        except Exception as exc:
            raise EmbeddingModelError(
                f"onnxruntime failed on a batch of {rows} texts of up to {width} tokens "
                f"({self._model_path.name}): {exc}"
            ) from exc
        hidden = np.asarray(output, dtype=np.float32)
        if hidden.ndim == 2:
            pooled = hidden
        elif self._pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            weights = mask.astype(np.float32)[:, None, :]  # (rows, 1, width)
            summed = np.matmul(weights, hidden)[:, 0, :]  # (rows, hidden)
            pooled = summed / np.maximum(lengths, 1).astype(np.float32)[:, None]
        if self._normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(norms, np.float32(1e-12))
        return pooled

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model_path={str(self._model_path)!r}, "
            f"pooling={self._pooling!r}, normalize={self._normalize}, "
            f"max_length={self._max_length}, batch_size={self._batch_size}, "
            f"strict={self._strict})"
        )


def _pad_id(tokenizer: Any) -> int:
    """The padding token id: ``[PAD]`` or ``<pad>``, else 0 (masked out either way)."""
    for token in ("[PAD]", "<pad>"):
        token_id = tokenizer.token_to_id(token)
        if token_id is not None:
            return int(token_id)
    return 0
