"""Another library's components as ragloom's, through plain callables.

The LangChain and LlamaIndex adapters (and any other bridge) wrap a foreign embedding
model, retriever or loader the same way: call it, turn its failures into ragloom errors
naming it, check and convert what it gives back. That logic lives here once; a bridge
passes the foreign calls as callables and its own conversion of one item, so core
depends on no foreign library:

    class LangChainEmbeddingModel(ForeignEmbeddingModel):
        def __init__(self, embeddings, *, dimension=None):
            name = type(embeddings).__name__
            super().__init__(
                embeddings.embed_documents, embeddings.aembed_documents,
                what=f"{name}.embed_documents", awhat=f"{name}.aembed_documents",
                dimension=dimension,
            )
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar, cast

from ragloom.core.content import Content
from ragloom.core.document import Document, TextSegment
from ragloom.core.embedding import Embedding, EmbeddingModel, EmbeddingResult, text_of
from ragloom.core.errors import (
    DocumentLoadError,
    EmbeddingModelError,
    InvalidArgumentError,
    InvalidMetadataError,
    RagloomError,
    RetrievalError,
)
from ragloom.core.loaders.result import LoadFailure
from ragloom.core.metadata import ALLOWED_TYPES, MetadataValue
from ragloom.core.query import Query

__all__ = [
    "ForeignEmbeddingModel",
    "ForeignRetriever",
    "convert_document",
    "foreign_embeddings",
    "foreign_metadata",
]

T = TypeVar("T")
R = TypeVar("R")

Vectors = Sequence[Sequence[float]]


def foreign_embeddings(vectors: Vectors, expected: int, source: str) -> list[Embedding]:
    """A foreign model's lists of floats as ragloom embeddings, one per input text; an
    :class:`EmbeddingModelError` naming ``source`` when the count or a value is wrong."""
    if len(vectors) != expected:
        raise EmbeddingModelError(
            f"{source} returned {len(vectors)} embeddings for {expected} texts"
        )
    try:
        return [Embedding(vector) for vector in vectors]
    except ValueError as exc:
        raise EmbeddingModelError(f"{source} returned an invalid embedding: {exc}") from exc


def _called(call: Callable[[T], R], argument: T, what: str, error: type[RagloomError]) -> R:
    """``call(argument)``; a foreign failure raised as ``error`` naming ``what`` (ragloom's
    own errors pass unchanged)."""
    try:
        return call(argument)
    except RagloomError:
        raise
    except Exception as exc:
        raise error(f"{what} failed: {exc}") from exc


async def _acalled(
    call: Callable[[T], Awaitable[R]], argument: T, what: str, error: type[RagloomError]
) -> R:
    """:func:`_called` of a coroutine function."""
    try:
        return await call(argument)
    except RagloomError:
        raise
    except Exception as exc:
        raise error(f"{what} failed: {exc}") from exc


class ForeignEmbeddingModel(EmbeddingModel):
    """A foreign embedding model as a ragloom ``EmbeddingModel``: ``embed`` (and ``aembed``,
    its coroutine) take a list of texts and give one vector per text.

    ``what``/``awhat`` name the foreign calls in errors (``awhat`` defaults to ``what``).
    Foreign models report no token usage, so results carry none. ``dimension``, when not
    given, is measured once by embedding a probe text.
    """

    def __init__(
        self,
        embed: Callable[[list[str]], Vectors],
        aembed: Callable[[list[str]], Awaitable[Vectors]],
        *,
        what: str,
        awhat: str | None = None,
        dimension: int | None = None,
    ) -> None:
        if dimension is not None and (type(dimension) is not int or dimension < 1):
            raise InvalidArgumentError(f"dimension must be a positive int, got {dimension!r}")
        self._embed, self._aembed = embed, aembed
        self._what, self._awhat = what, awhat or what
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        """The size of the vectors (given, or measured on first use)."""
        if self._dimension is None:
            self._dimension = self.embed("dimension").embedding.dimension
        return self._dimension

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        """One embedding per text, in order, in one foreign call."""
        batch = [text_of(item) for item in texts]
        if not batch:
            return EmbeddingResult([])
        vectors = _called(self._embed, batch, self._what, EmbeddingModelError)
        return EmbeddingResult(foreign_embeddings(vectors, len(batch), self._what))

    async def aembed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        """:meth:`embed_all` through the foreign coroutine, without blocking."""
        batch = [text_of(item) for item in texts]
        if not batch:
            return EmbeddingResult([])
        vectors = await _acalled(self._aembed, batch, self._awhat, EmbeddingModelError)
        return EmbeddingResult(foreign_embeddings(vectors, len(batch), self._awhat))


class ForeignRetriever(Generic[T]):
    """A foreign retriever as a ragloom ``ContentRetriever``: ``retrieve`` (and
    ``aretrieve``, its coroutine) take the query text and give foreign items (documents,
    nodes), each made a :class:`Content` by ``convert``, in the foreign order.

    ``what``/``awhat`` name the foreign calls in the :class:`RetrievalError` of a failure.
    """

    def __init__(
        self,
        retrieve: Callable[[str], Iterable[T]],
        aretrieve: Callable[[str], Awaitable[Iterable[T]]],
        convert: Callable[[T], Content],
        *,
        what: str,
        awhat: str,
    ) -> None:
        self._retrieve, self._aretrieve, self._convert = retrieve, aretrieve, convert
        self._what, self._awhat = what, awhat

    def retrieve(self, query: Query) -> list[Content]:
        """The foreign retriever's items for ``query.text``, as contents, in its order."""
        items = _called(self._retrieve, query.text, self._what, RetrievalError)
        return [self._convert(item) for item in items]

    async def aretrieve(self, query: Query) -> list[Content]:
        """:meth:`retrieve` through the foreign coroutine, without blocking."""
        items = await _acalled(self._aretrieve, query.text, self._awhat, RetrievalError)
        return [self._convert(item) for item in items]


def foreign_metadata(metadata: Mapping[Any, Any]) -> dict[str, MetadataValue]:
    """Foreign metadata made ragloom-typed, leniently (loaded documents must not be lost to
    a date): values of ragloom's types kept, ``None`` dropped, lists and dicts as JSON text,
    anything else as ``str``; a key that is not a non-empty ``str`` raises
    :class:`InvalidMetadataError`."""
    converted = {key: _value(key, value) for key, value in metadata.items()}
    return {key: value for key, value in converted.items() if value is not None}


def _value(key: Any, value: Any) -> MetadataValue | None:
    if not isinstance(key, str) or not key:
        raise InvalidMetadataError(f"metadata key must be a non-empty string, got {key!r}")
    if value is None or isinstance(value, ALLOWED_TYPES):
        return cast(MetadataValue | None, value)
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def convert_document(
    item: T,
    convert: Callable[[T], Document],
    source: Callable[[T], str],
    documents: list[Document],
    failures: list[LoadFailure],
    strict: bool,
) -> None:
    """One loaded foreign document converted into ``documents``; a conversion error becomes
    a failure of its ``source`` (``strict``: raised as :class:`DocumentLoadError`)."""
    try:
        documents.append(convert(item))
    except RagloomError as exc:
        where = source(item)
        if strict:
            raise DocumentLoadError(f"{where}: {exc}") from exc
        failures.append(LoadFailure(where, exc))
