"""Input checks and id generation for embedding store authors.

Every store validates a batch completely before it changes anything (the contract in
:mod:`ragloom.core.stores.base`), with the same rules and the same messages; these are
those rules. Each raises :class:`~ragloom.core.errors.EmbeddingStoreError` by default, or
the ``error`` class given (the BM25 index raises its own), naming the value at fault.
"""

from __future__ import annotations

import itertools
import operator
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError, InvalidMetadataError, RagloomError
from ragloom.core.metadata import MetadataValue, validate_key, validate_value
from ragloom.core.stores.arguments import (
    check_filter,
    check_max_results,
    check_min_score,
    get_ids,
    removal_target,
    validate_ids,
)
from ragloom.core.stores.metadata_columns import CodedColumn, MetadataColumn

__all__ = [
    "check_columns",
    "check_filter",
    "check_max_results",
    "check_min_score",
    "check_segment",
    "check_segment_text",
    "embedding_dimension",
    "generate_ids",
    "get_ids",
    "metadata_columns",
    "removal_target",
    "segment_columns",
    "split_segments",
    "validate_embeddings",
    "validate_ids",
]

Matrix = npt.NDArray[np.float32]


def check_segment_text(
    text: str, what: str, *, error: type[RagloomError] = EmbeddingStoreError
) -> None:
    """Refuse text no store can persist: a lone surrogate (e.g. from an undecodable file
    name) is not Unicode, so UTF-8 files and databases cannot hold it. Every store applies
    this to segment texts, metadata keys and string values, so all refuse the same writes."""
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(
            f"{what} {text!r} is not valid Unicode (lone surrogate at {exc.start})"
        ) from exc


def check_segment(
    segment: TextSegment, position: int, *, error: type[RagloomError] = EmbeddingStoreError
) -> None:
    """:func:`check_segment_text` on the text, metadata keys and string values of one segment."""
    check_segment_text(segment.text, f"text of segment {position}", error=error)
    for key, value in segment.metadata.items():
        check_segment_text(key, f"segment {position}: metadata key", error=error)
        if isinstance(value, str):
            check_segment_text(value, f"segment {position}: metadata {key!r} value", error=error)


def split_segments(
    segments: Sequence[TextSegment] | None,
    count: int,
    *,
    error: type[RagloomError] = EmbeddingStoreError,
    copy: bool = True,
) -> tuple[list[str | None], list[dict[str, MetadataValue]] | None]:
    """Texts and metadata dicts of the ``count`` segments of a batch, checked by
    :func:`check_segment` (in bulk: one check over all texts, keys and distinct strings).

    Without segments: ``None`` texts and ``None`` metadata (no metadata on any row). With
    ``copy=False`` the dicts are the segments' own, for a caller that only reads them.
    """
    if segments is None:
        return [None] * count, None
    batch, texts, metadata = _segment_parts(segments, count, error)
    keys: set[str] = set().union(*metadata)
    distinct = set(itertools.chain.from_iterable(map(dict.values, metadata)))
    strings = [value for value in distinct if isinstance(value, str)]
    if not all(map(_valid_unicode, (texts, keys, strings))):
        for position, segment in enumerate(batch):  # find the first culprit
            check_segment(segment, position, error=error)
    return texts, [dict(row) for row in metadata] if copy else metadata


def segment_columns(
    segments: Sequence[TextSegment] | None,
    count: int,
    *,
    error: type[RagloomError] = EmbeddingStoreError,
) -> tuple[list[str | None], dict[str, MetadataColumn]]:
    """:func:`split_segments` with the metadata column by column (:func:`metadata_columns`;
    no columns without segments), checked the same way, a column at a time."""
    if segments is None:
        return [None] * count, {}
    batch, texts, metadata = _segment_parts(segments, count, error)
    rows = metadata_columns(metadata)
    if not (_valid_unicode(texts) and _valid_unicode(rows)):
        for position, segment in enumerate(batch):  # find the first culprit
            check_segment(segment, position, error=error)
    return texts, {key: _checked_column(key, values, error) for key, values in rows.items()}


def _segment_parts(
    segments: Sequence[TextSegment], count: int, error: type[RagloomError]
) -> tuple[list[TextSegment], list[str | None], list[dict[str, MetadataValue]]]:
    """The segments of a batch (checked to be ``count`` TextSegments), their texts and
    their metadata dicts (their own, not copies)."""
    if isinstance(segments, str | TextSegment) or len(segments) != count:
        given = 1 if isinstance(segments, str | TextSegment) else len(segments)
        raise error(f"got {given} segments for {count} embeddings")
    batch = list(segments)
    if set(map(type, batch)) != {TextSegment}:
        for segment in batch:
            if not isinstance(segment, TextSegment):
                raise error(f"expected TextSegment, got {type(segment).__name__}")
    texts: list[str | None] = list(map(_TEXT, batch))
    metadata = list(map(_METADATA, batch))
    if set(map(type, metadata)) != {dict}:  # some were read: the Metadata around the dict
        metadata = [m if type(m) is dict else m._data for m in metadata]
    return batch, texts, metadata


def metadata_columns(rows: Sequence[Mapping[str, MetadataValue]]) -> dict[str, list[Any]]:
    """The metadata of a batch of rows, column by column (``None`` where a row lacks a key),
    in the first row's key order, then the other keys sorted."""
    keys = dict.fromkeys(rows[0]) if rows else {}
    keys.update(dict.fromkeys(sorted(set().union(*rows).difference(keys), key=str)))
    columns: dict[str, list[Any]] = {}
    for key in keys:
        try:
            columns[key] = list(map(operator.itemgetter(key), rows))
        except KeyError:
            columns[key] = list(map(operator.methodcaller("get", key), rows))
    return columns


def check_columns(
    texts: Sequence[str] | None,
    metadata: Mapping[str, Sequence[Any] | npt.NDArray[Any]] | None,
    count: int,
    *,
    error: type[RagloomError] = EmbeddingStoreError,
) -> tuple[list[str | None], dict[str, MetadataColumn]]:
    """The texts and metadata columns of a batch given column by column, checked as
    :func:`split_segments` checks segments, in bulk: row ``i`` is the segment of
    ``texts[i]`` and the metadata ``{key: column[i]}`` of the columns not ``None`` there.

    Values go through :func:`~ragloom.core.metadata.validate_value` (numpy scalars become
    Python values); an array column of bools or numbers stays an array. A bad row raises
    naming its position, key and value.
    """
    if texts is None:
        if metadata:
            raise error("metadata columns need texts (a row without text has no segment)")
        return [None] * count, {}
    if isinstance(texts, str) or len(texts) != count:
        given = 1 if isinstance(texts, str) else len(texts)
        raise error(f"got {given} texts for {count} embeddings")
    text_list: list[str | None] = list(texts)
    try:
        valid = _valid_unicode(text_list)
    except TypeError:  # the join met something else than a str
        position, text = next((i, t) for i, t in enumerate(text_list) if not isinstance(t, str))
        raise error(f"text of segment {position} must be str, got {type(text).__name__}") from None
    if not valid:
        for position, text in enumerate(text_list):
            check_segment_text(text, f"text of segment {position}", error=error)  # type: ignore[arg-type]
    if metadata is None:
        return text_list, {}
    if not isinstance(metadata, Mapping):
        raise error(f"metadata must map keys to columns, got {type(metadata).__name__}")
    columns: dict[str, MetadataColumn] = {}
    for key, values in metadata.items():
        validate_key(key)
        check_segment_text(key, "metadata key", error=error)
        if isinstance(values, str) or not isinstance(values, Sequence | np.ndarray):
            raise error(f"metadata {key!r} must be a sequence of values, got {values!r}")
        if len(values) != count:
            raise error(f"metadata {key!r}: got {len(values)} values for {count} embeddings")
        columns[key] = _checked_column(key, values, error)
    return text_list, columns


def _checked_column(
    key: str, values: Sequence[Any] | npt.NDArray[Any], error: type[RagloomError]
) -> MetadataColumn:
    """One metadata column, every value validated, in the form that stores fastest: an
    array for bools or numbers, a :class:`CodedColumn` for str or UUID values, else a list
    (see :func:`check_columns`)."""
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise error(f"metadata {key!r}: an array column must be 1-d, got {values.shape}")
        if values.dtype.kind in "biuf" and values.dtype.itemsize <= 8:
            return values
        values = values.tolist()
    column = list(values)
    types = set(map(type, column))
    if not types <= _COLUMN_TYPES:  # subclasses, numpy scalars or invalid values
        for position, value in enumerate(column):
            if value is not None:
                try:
                    column[position] = validate_value(key, value)
                except InvalidMetadataError as exc:
                    raise InvalidMetadataError(f"segment {position}: {exc}") from exc
        types = set(map(type, column))
    present = types - {type(None)}
    kind = present.pop() if len(present) == 1 else None
    if kind in _ARRAY_DTYPES and len(types) == 1:
        try:
            return np.array(column, dtype=_ARRAY_DTYPES[kind])
        except OverflowError:  # ints beyond int64 stay Python ints
            return column
    if kind is str or kind is uuid.UUID:
        distinct = dict.fromkeys(column)
        distinct.pop(None, None)
        coded = CodedColumn.of(column, list(distinct))
        if kind is str and not _valid_unicode(cast(list[str], coded.values)):
            _check_strings(key, column, error)
        return coded
    if str in types:
        _check_strings(key, column, error)
    return column


def _check_strings(key: str, column: list[Any], error: type[RagloomError]) -> None:
    """:func:`check_segment_text` on the str values of a column, naming the first bad row."""
    for position, value in enumerate(column):
        if isinstance(value, str):
            check_segment_text(value, f"segment {position}: metadata {key!r} value", error=error)


_ARRAY_DTYPES: dict[type | None, type] = {int: np.int64, float: np.float64, bool: np.bool_}
_COLUMN_TYPES = frozenset({str, int, float, bool, uuid.UUID, type(None)})


_TEXT = operator.attrgetter("text")
_METADATA = operator.attrgetter("_metadata")  # a dict, or a Metadata around one


def _valid_unicode(texts: Iterable[str | None]) -> bool:
    """Whether every text (all of type str) is valid Unicode (:func:`check_segment_text`)."""
    joined = "".join(texts)  # type: ignore[arg-type]
    if joined.isascii():
        return True
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def embedding_dimension(embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]]) -> int:
    """The common dimension of a non-empty batch: :class:`Embedding` s of one dimension, or a
    numeric ``(n, dimension)`` array."""
    if isinstance(embeddings, np.ndarray):
        if embeddings.ndim != 2 or embeddings.shape[1] == 0:
            raise EmbeddingStoreError(
                f"an array of embeddings must have shape (n, dimension), got {embeddings.shape}"
            )
        if embeddings.dtype.kind not in "fiu":
            raise EmbeddingStoreError(f"embeddings must be numeric, got dtype {embeddings.dtype}")
        return int(embeddings.shape[1])
    dimensions = set()
    for position, embedding in enumerate(embeddings):
        if not isinstance(embedding, Embedding):
            raise EmbeddingStoreError(
                f"embedding at index {position} is a {type(embedding).__name__}, not an Embedding"
            )
        dimensions.add(embedding.dimension)
    if len(dimensions) != 1:
        raise EmbeddingStoreError(
            f"embeddings of different dimensions in one call: {sorted(dimensions)}"
        )
    return dimensions.pop()


def validate_embeddings(
    embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
    dimension: int | None = None,
) -> Matrix:
    """A non-empty batch as a C-contiguous ``float32`` ``(n, dimension)`` matrix, checked: one
    dimension (``dimension`` when given), finite values within the float32 range."""
    found = embedding_dimension(embeddings)
    if dimension is not None and found != dimension:
        raise EmbeddingStoreError(
            f"embedding dimension {found} does not match the store's {dimension}"
        )
    if isinstance(embeddings, np.ndarray):
        with np.errstate(over="ignore", invalid="ignore"):
            matrix = np.ascontiguousarray(embeddings, dtype=np.float32)
    else:
        matrix = np.stack([embedding.vector for embedding in embeddings])
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        raise EmbeddingStoreError(
            f"embedding at index {int(np.flatnonzero(~finite)[0])} contains NaN or "
            "infinity (or exceeds the float32 range)"
        )
    return matrix


# (digit offset in the 32 hex digits, offset in "8-4-4-4-12", width) of each group.
_UUID_GROUPS = ((0, 0, 8), (8, 9, 4), (12, 14, 4), (16, 19, 4), (20, 24, 12))


def generate_ids(count: int) -> list[str]:
    """``count`` random UUID4 strings, formatted in bulk (``str(uuid.uuid4())`` is 5x slower).

    One ``os.urandom`` call for all ids, ``bytes.hex`` for the digits, then each group of
    digits is copied as one opaque item a row (not digit by digit) next to the dashes.
    """
    raw = np.frombuffer(os.urandom(16 * count), dtype=np.uint8).reshape(count, 16).copy()
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40  # version 4
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80  # RFC 4122 variant
    hex_digits = raw.tobytes().hex().encode("ascii")
    digits = np.frombuffer(hex_digits, dtype=np.uint8).reshape(count, 32)
    text = np.empty((count, 37), dtype=np.uint8)  # "8-4-4-4-12" digits and a newline
    for source, target, width in _UUID_GROUPS:
        group = np.dtype(f"V{width}")
        text[:, target : target + width].view(group)[:] = digits[:, source : source + width].view(
            group
        )
    text[:, [8, 13, 18, 23]] = ord("-")
    text[:, 36] = ord("\n")
    ids = text.tobytes().decode("ascii").split("\n")
    ids.pop()  # the empty string after the last newline
    return ids
