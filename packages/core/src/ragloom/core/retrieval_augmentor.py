"""The retrieval augmentor: the entry point of the RAG pipeline.

:class:`DefaultRetrievalAugmentor` turns the user's message into a :class:`Query`,
transforms it into one or more queries, routes each to content retrievers, retrieves,
aggregates the ranked lists into one, and injects it into the message::

    UserMessage -> Query -> QueryTransformer -> [Query] -> QueryRouter -> ContentRetriever
        -> ContentAggregator -> ContentInjector -> augmented UserMessage

Routing and retrieval run in parallel when there is more than one of them (see
:class:`DefaultRetrievalAugmentor`).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Executor, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, Protocol, TypeVar, runtime_checkable

from ragloom.core.aio import AsyncContentRetriever
from ragloom.core.chat.messages import UserMessage
from ragloom.core.content import Content
from ragloom.core.content_aggregators import ContentAggregator, DefaultContentAggregator
from ragloom.core.content_injectors import ContentInjector, DefaultContentInjector
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError, RetrievalError
from ragloom.core.query import Query, QueryMetadata
from ragloom.core.query_routers import DefaultQueryRouter, QueryRouter
from ragloom.core.query_transformers import DefaultQueryTransformer, QueryTransformer
from ragloom.core.retrievers.base import ContentRetriever

__all__ = [
    "AsyncContentRetriever",  # defined in ragloom.core.aio, re-exported where it was
    "AugmentationResult",
    "DefaultRetrievalAugmentor",
    "RetrievalAugmentor",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class AugmentationResult:
    """The augmented message to send to the model and the contents injected into it."""

    chat_message: UserMessage
    contents: list[Content]


@runtime_checkable
class RetrievalAugmentor(Protocol):
    """Augments the user's message with relevant content (the spec's ``RetrievalAugmentor``).

    ``metadata`` carries the memory id and the previous messages; without it, the
    metadata holds the user message only. Implementations may also define an async
    ``aaugment`` with the same signature, which async callers prefer.
    """

    def augment(
        self, user_message: UserMessage | str, metadata: QueryMetadata | None = None
    ) -> AugmentationResult:
        """The augmented message and the contents used."""
        ...


class DefaultRetrievalAugmentor(RetrievalAugmentor):
    """Transform -> route -> retrieve (in parallel) -> aggregate -> inject.

    Give either ``content_retriever`` (shorthand for a :class:`DefaultQueryRouter` over
    it) or ``query_router``. The other stages default to :class:`DefaultQueryTransformer`,
    :class:`DefaultContentAggregator` and :class:`DefaultContentInjector`.

    Parallelism: when there is a single query and a single retriever, everything runs in
    the calling thread. Otherwise the queries are routed concurrently, then every
    (query, retriever) pair is retrieved concurrently, on ``executor``. Tasks never wait
    for other tasks, so any executor works, even one with a single thread. Without an
    executor, a thread pool of the default bounded size (``ThreadPoolExecutor``) is
    created on first need and shut down by :meth:`close`, on leaving a ``with`` block or
    when the augmentor is garbage-collected.

    :meth:`aaugment` is the asyncio path: retrievers with an ``aretrieve`` coroutine (and
    transformers, routers, aggregators with ``atransform``, ``aroute``, ``aaggregate``)
    are awaited concurrently; sync-only components run on the executor.

    The first exception of any stage propagates unchanged; pending retrievals are
    cancelled.
    """

    def __init__(
        self,
        *,
        content_retriever: ContentRetriever | None = None,
        query_router: QueryRouter | None = None,
        query_transformer: QueryTransformer | None = None,
        content_aggregator: ContentAggregator | None = None,
        content_injector: ContentInjector | None = None,
        executor: Executor | None = None,
    ) -> None:
        if query_router is None and content_retriever is not None:
            query_router = DefaultQueryRouter(content_retriever)
        elif query_router is None or content_retriever is not None:
            raise InvalidArgumentError(
                "give DefaultRetrievalAugmentor exactly one of content_retriever and query_router"
            )
        self.query_router = query_router
        self.query_transformer = query_transformer or DefaultQueryTransformer()
        self.content_aggregator = content_aggregator or DefaultContentAggregator()
        self.content_injector = content_injector or DefaultContentInjector()
        self._executor = executor
        self._owned_executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    # --- sync path ----------------------------------------------------------------------

    def augment(
        self, user_message: UserMessage | str, metadata: QueryMetadata | None = None
    ) -> AugmentationResult:
        message, query = _first_query(user_message, metadata)
        queries = _unique(self.query_transformer.transform(query))
        routes = self._run_all([_bind(self.query_router.route, q) for q in queries])
        jobs = [
            (q, retriever) for q, route in zip(queries, routes, strict=True) for retriever in route
        ]
        found = self._run_all([_bind(retriever.retrieve, q) for q, retriever in jobs])
        contents = self.content_aggregator.aggregate(_group(queries, jobs, found))
        return AugmentationResult(self.content_injector.inject(contents, message), list(contents))

    def _run_all(self, calls: Sequence[Callable[[], T]]) -> list[T]:
        """Each call's result, in order; concurrent on the executor when there are several."""
        if len(calls) <= 1:
            return [call() for call in calls]
        executor = self.executor
        futures: list[Future[T]] = [executor.submit(call) for call in calls]
        _, pending = wait(futures, return_when=FIRST_EXCEPTION)
        if pending:  # something failed: stop what has not started, raise the first failure
            for future in pending:
                future.cancel()
            for future in futures:
                if future.done() and not future.cancelled() and future.exception() is not None:
                    future.result()
        return [future.result() for future in futures]

    # --- async path ---------------------------------------------------------------------

    async def aaugment(
        self, user_message: UserMessage | str, metadata: QueryMetadata | None = None
    ) -> AugmentationResult:
        """:meth:`augment` on the event loop, awaiting native coroutines concurrently."""
        message, query = _first_query(user_message, metadata)
        queries = _unique(
            await self._acall(self.query_transformer, "atransform", "transform", query)
        )
        routes: list[list[ContentRetriever]] = await _gather(
            [self._acall(self.query_router, "aroute", "route", q) for q in queries]
        )
        jobs = [
            (q, retriever) for q, route in zip(queries, routes, strict=True) for retriever in route
        ]
        found: list[list[Content]] = await _gather(
            [self._acall(retriever, "aretrieve", "retrieve", q) for q, retriever in jobs]
        )
        query_to_contents = _group(queries, jobs, found)
        contents: list[Content] = await self._acall(
            self.content_aggregator, "aaggregate", "aggregate", query_to_contents
        )
        return AugmentationResult(self.content_injector.inject(contents, message), list(contents))

    async def _acall(self, component: object, async_name: str, sync_name: str, arg: Any) -> Any:
        native = getattr(component, async_name, None)
        if native is not None:
            return await native(arg)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, getattr(component, sync_name), arg)

    # --- executor -----------------------------------------------------------------------

    @property
    def executor(self) -> Executor:
        """The executor parallel work runs on (the owned thread pool is created on first use)."""
        if self._executor is not None:
            return self._executor
        with self._lock:
            if self._owned_executor is None:
                pool = ThreadPoolExecutor(thread_name_prefix="ragloom-retrieval")
                weakref.finalize(self, pool.shutdown, wait=False)
                self._owned_executor = pool
            return self._owned_executor

    def close(self) -> None:
        """Shut down the thread pool this augmentor created (never a given executor)."""
        with self._lock:
            pool, self._owned_executor = self._owned_executor, None
        if pool is not None:
            pool.shutdown(wait=True)

    def __enter__(self) -> DefaultRetrievalAugmentor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _first_query(
    user_message: UserMessage | str, metadata: QueryMetadata | None
) -> tuple[UserMessage, Query]:
    """The message as a UserMessage and the query made of it (metadata made hashable)."""
    message = UserMessage(user_message) if isinstance(user_message, str) else user_message
    if not isinstance(message, UserMessage):
        raise InvalidArgumentTypeError(
            f"user_message must be a UserMessage or str, got {type(user_message).__name__}"
        )
    if metadata is None:
        metadata = QueryMetadata(user_message=message)
    else:
        metadata = replace(
            metadata,
            user_message=metadata.user_message or message,
            chat_memory=tuple(metadata.chat_memory),
        )
    return message, Query(message.text, metadata)


def _unique(queries: Sequence[Query]) -> list[Query]:
    """The queries without repeats, in order: an identical query is retrieved once."""
    for query in queries:
        if not isinstance(query, Query):
            raise RetrievalError(f"query transformer returned {type(query).__name__}, not a Query")
    return list(dict.fromkeys(queries))


def _bind(function: Callable[[Query], T], query: Query) -> Callable[[], T]:
    return lambda: function(query)


def _group(
    queries: list[Query],
    jobs: list[tuple[Query, ContentRetriever]],
    found: list[list[Content]],
) -> dict[Query, list[list[Content]]]:
    """Each query with the list of every retriever it was routed to (none: no lists)."""
    grouped: dict[Query, list[list[Content]]] = {query: [] for query in queries}
    for (query, _), contents in zip(jobs, found, strict=True):
        grouped[query].append(list(contents))
    return grouped


async def _gather(awaitables: Sequence[Awaitable[T]]) -> list[T]:
    """Await all concurrently; on the first failure cancel the others and raise it."""
    if len(awaitables) == 1:
        return [await awaitables[0]]
    tasks = [asyncio.ensure_future(awaitable) for awaitable in awaitables]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        raise
