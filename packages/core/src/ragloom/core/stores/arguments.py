"""The argument rules of the :class:`~ragloom.core.stores.base.EmbeddingStore` contract:
ids, ``max_results``, ``min_score``, ``filter``, the ids of ``get`` and the target of
``remove_all``, checked the same way by every store and by the search request (the author
kit's :mod:`~ragloom.core.stores.validation` re-exports them)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ragloom.core.errors import EmbeddingStoreError, RagloomError
from ragloom.core.filters import Filter

__all__ = [
    "check_filter",
    "check_max_results",
    "check_min_score",
    "get_ids",
    "removal_target",
    "validate_ids",
]


def validate_ids(
    ids: Iterable[str],
    count: int | None = None,
    *,
    error: type[RagloomError] = EmbeddingStoreError,
    noun: str = "embedding",
    unique: bool = True,
) -> list[str]:
    """``ids`` as a list of exact ``str``, checked: non-empty, ``count`` of them (when given),
    distinct if ``unique``. ``noun`` names what the ids identify in messages."""
    if isinstance(ids, str):
        raise error("ids must be a sequence of str, not one str")
    id_list = list(ids)
    if count is not None and len(id_list) != count:
        raise error(f"got {len(id_list)} ids for {count} {noun}s")
    if set(map(type, id_list)) != {str}:  # the usual case stays at C speed
        for item in id_list:
            if not isinstance(item, str):
                raise error(f"{noun} id must be a non-empty str, got {item!r}")
        id_list = [str.__str__(item) for item in id_list]
    distinct = set(id_list) if unique else None
    if "" in (id_list if distinct is None else distinct):  # a set answers in O(1)
        raise error(f"{noun} id must be a non-empty str, got ''")
    if distinct is not None and len(distinct) != len(id_list):
        duplicate = next(i for i, n in Counter(id_list).items() if n > 1)
        raise error(f"id {duplicate!r} appears more than once in one call")
    return id_list


def get_ids(
    ids: Iterable[str], *, error: type[RagloomError] = EmbeddingStoreError, noun: str = "embedding"
) -> list[str]:
    """The ids ``get`` looks up: validated as ``add_all`` validates them (an id asked twice
    is allowed), each once, in the order first asked."""
    return list(dict.fromkeys(validate_ids(ids, error=error, noun=noun, unique=False)))


def removal_target(
    ids: Iterable[str] | Filter | None,
    filter: Filter | None,
    *,
    error: type[RagloomError] = EmbeddingStoreError,
    noun: str = "embedding",
) -> tuple[list[str] | None, Filter | None]:
    """What ``remove_all(ids, filter=filter)`` removes: the ids (validated, repeats
    allowed), or the checked filter, or (both None) everything. A :class:`Filter` passed
    positionally (``remove_all(some_filter)``, as the Java API reads) is the filter."""
    if isinstance(ids, Filter):
        if filter is not None:
            raise error("remove_all takes one filter, got one positionally and one as filter=")
        ids, filter = None, ids
    if ids is not None and filter is not None:
        raise error("remove_all takes ids or a filter, not both")
    if ids is not None:
        if isinstance(ids, str):
            raise error("remove_all takes a collection of ids, not one str")
        return validate_ids(ids, error=error, noun=noun, unique=False), None
    return None, None if filter is None else check_filter(filter, error=error)


def check_max_results(value: object, *, error: type[RagloomError] = EmbeddingStoreError) -> int:
    """``value`` if it is an int >= 1 (bool is not an int here)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise error(f"max_results must be an int >= 1, got {value!r}")
    return value


def check_min_score(value: object, *, error: type[RagloomError] = EmbeddingStoreError) -> float:
    """``value`` as a float if it is a number in [0, 1] (the relevance score's range)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise error(f"min_score must be a number in [0, 1], got {value!r}")
    return float(value)


def check_filter(value: object, *, error: type[RagloomError] = EmbeddingStoreError) -> Filter:
    """``value`` if it is a ragloom :class:`~ragloom.core.Filter`."""
    if not isinstance(value, Filter):
        raise error(f"filter must be a ragloom Filter, got {type(value).__name__}")
    return value
