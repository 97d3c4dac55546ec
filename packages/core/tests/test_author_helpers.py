"""The public helpers for integration authors: filter compiler, validation, scores, dynamic."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass

import numpy as np
import pytest

from ragloom.core import (
    Embedding,
    EmbeddingStoreError,
    Filter,
    InvalidFilterError,
    Query,
    TextSegment,
    metadata_key,
)
from ragloom.core.errors import UnsupportedFilterError
from ragloom.core.filter_compiler import FilterCompiler
from ragloom.core.filter_values import FilterValue
from ragloom.core.filters import (
    ContainsString,
    IsEqualTo,
    IsIn,
    IsNotEqualTo,
    IsNotIn,
)
from ragloom.core.retrievers.dynamic import resolve_dynamic
from ragloom.core.stores.scores import cosine_from_distance, exact_cosines, relevance_score
from ragloom.core.stores.validation import (
    check_filter,
    check_max_results,
    check_min_score,
    embedding_dimension,
    generate_ids,
    split_segments,
    validate_embeddings,
    validate_ids,
)

_NAMES = {">": "gt", ">=": "ge", "<": "lt", "<=": "le"}


class TextCompiler(FilterCompiler[str]):
    """A complete compiler to a prefix notation, to check dispatch and flattening."""

    def is_equal_to(self, filter: IsEqualTo) -> str:
        return f"eq({filter.key},{filter.value!r})"

    def is_not_equal_to(self, filter: IsNotEqualTo) -> str:
        return f"ne({filter.key},{filter.value!r})"

    def order(self, key: str, operator: str, value: FilterValue) -> str:
        return f"{_NAMES[operator]}({key},{value!r})"

    def is_in(self, filter: IsIn) -> str:
        return f"in({filter.key},{list(filter.values)!r})"

    def is_not_in(self, filter: IsNotIn) -> str:
        return f"nin({filter.key},{list(filter.values)!r})"

    def contains_string(self, filter: ContainsString) -> str:
        return f"has({filter.key},{filter.value!r})"

    def and_(self, operands: list[str]) -> str:
        return f"and({','.join(operands)})"

    def or_(self, operands: list[str]) -> str:
        return f"or({','.join(operands)})"

    def not_(self, operand: str) -> str:
        return f"not({operand})"


def test_compiler_dispatches_every_filter_class() -> None:
    k = metadata_key("k")
    f = (
        (k.is_equal_to(1) & k.is_not_equal_to(2) & k.is_greater_than(3))
        | (k.is_greater_than_or_equal_to(4) & k.is_less_than(5))
        | ~(k.is_less_than_or_equal_to(6) & k.is_in([7]) & k.is_not_in([8]))
        | k.contains_string("x")
    )
    assert TextCompiler().compile(f) == (
        "or(and(eq(k,1),ne(k,2),gt(k,3)),and(ge(k,4),lt(k,5)),"
        "not(and(le(k,6),in(k,[7]),nin(k,[8]))),has(k,'x'))"
    )


def test_compiler_flattens_long_chains_without_recursion() -> None:
    chain = metadata_key("k").is_equal_to(0)
    for i in range(1, 5000):
        chain = chain & metadata_key("k").is_equal_to(i)
    compiled = TextCompiler().compile(chain)
    assert compiled.count("eq(") == 5000
    assert compiled.startswith("and(eq(k,0),eq(k,1),")


def test_an_incomplete_compiler_cannot_be_used() -> None:
    class Partial(FilterCompiler[str]):  # no method for the other filter classes
        def is_equal_to(self, filter: IsEqualTo) -> str:
            return "eq"

    with pytest.raises(TypeError, match="contains_string"):
        Partial()  # type: ignore[abstract]


def test_an_unknown_filter_class_is_an_unsupported_filter_error() -> None:
    @dataclass(frozen=True, eq=False)
    class Custom(Filter):
        def test(self, metadata: object) -> bool:  # type: ignore[override]
            return True

        def _identity(self) -> tuple[object, ...]:
            return ()

        def _render(self) -> str:
            return "custom"

    with pytest.raises(UnsupportedFilterError, match="this store cannot translate filter Custom"):
        TextCompiler().compile(Custom() & metadata_key("k").is_equal_to(1))
    assert issubclass(UnsupportedFilterError, InvalidFilterError)


def test_unsupported_names_the_backend() -> None:
    class NoContains(TextCompiler):
        backend = "the Example store"

        def contains_string(self, filter: ContainsString) -> str:
            raise self.unsupported(filter)

    with pytest.raises(UnsupportedFilterError, match='the Example store .* k contains "x"'):
        NoContains().compile(metadata_key("k").contains_string("x"))


def test_validate_ids() -> None:
    assert validate_ids(["a", "b"], 2) == ["a", "b"]
    assert validate_ids(iter(["a", "a"]), unique=False) == ["a", "a"]
    with pytest.raises(EmbeddingStoreError, match="got 1 ids for 2 embeddings"):
        validate_ids(["a"], 2)
    with pytest.raises(EmbeddingStoreError, match="not one str"):
        validate_ids("ab", 2)
    with pytest.raises(EmbeddingStoreError, match="embedding id must be a non-empty str, got ''"):
        validate_ids(["a", ""])
    with pytest.raises(EmbeddingStoreError, match="got 3"):
        validate_ids(["a", 3])  # type: ignore[list-item]
    with pytest.raises(EmbeddingStoreError, match="'a' appears more than once"):
        validate_ids(["a", "b", "a"])

    class Tag(str):
        pass

    exact = validate_ids([Tag("x")])
    assert exact == ["x"]
    assert type(exact[0]) is str


def test_split_segments() -> None:
    segments = [TextSegment("one", {"k": 1}), TextSegment("two")]
    assert split_segments(segments, 2) == (["one", "two"], [{"k": 1}, {}])
    assert split_segments(None, 2) == ([None, None], None)
    with pytest.raises(EmbeddingStoreError, match="got 2 segments for 3 embeddings"):
        split_segments(segments, 3)
    with pytest.raises(EmbeddingStoreError, match="expected TextSegment, got str"):
        split_segments(["text"], 1)  # type: ignore[list-item]


def test_embedding_checks() -> None:
    batch = [Embedding([1.0, 0.0]), Embedding([0.0, 2.0])]
    assert embedding_dimension(batch) == 2
    matrix = validate_embeddings(batch, 2)
    assert matrix.dtype == np.float32
    assert matrix.tolist() == [[1.0, 0.0], [0.0, 2.0]]
    assert validate_embeddings(np.ones((3, 4), dtype=np.float64)).shape == (3, 4)
    with pytest.raises(EmbeddingStoreError, match="dimension 2 does not match the store's 3"):
        validate_embeddings(batch, 3)
    with pytest.raises(EmbeddingStoreError, match=r"different dimensions in one call: \[1, 2\]"):
        embedding_dimension([Embedding([1.0]), Embedding([1.0, 2.0])])
    with pytest.raises(EmbeddingStoreError, match="index 1 is a list, not an Embedding"):
        embedding_dimension([Embedding([1.0]), [1.0]])  # type: ignore[list-item]
    with pytest.raises(EmbeddingStoreError, match="index 1 contains NaN or infinity"):
        validate_embeddings(np.array([[1.0, 2.0], [1e39, 0.0]]))
    with pytest.raises(EmbeddingStoreError, match=r"shape \(n, dimension\)"):
        embedding_dimension(np.ones(3))


def test_search_setting_checks() -> None:
    assert check_max_results(5) == 5
    assert check_min_score(1) == 1.0
    assert type(check_min_score(1)) is float
    for bad in (0, -1, True, 2.0, "3"):
        with pytest.raises(EmbeddingStoreError, match="max_results must be an int >= 1"):
            check_max_results(bad)
    for bad in (-0.1, 1.5, math.nan, False, "0.5"):
        with pytest.raises(EmbeddingStoreError, match=r"min_score must be a number in \[0, 1\]"):
            check_min_score(bad)
    f = metadata_key("k").is_equal_to(1)
    assert check_filter(f) is f
    with pytest.raises(EmbeddingStoreError, match="filter must be a ragloom Filter, got dict"):
        check_filter({"k": 1})


def test_generate_ids_are_distinct_uuid4_strings() -> None:
    ids = generate_ids(1000)
    assert len(set(ids)) == 1000
    for item in ids[:50]:
        parsed = uuid.UUID(item)
        assert parsed.version == 4
        assert str(parsed) == item
    assert generate_ids(0) == []


def test_scores() -> None:
    assert relevance_score(1.0) == 1.0
    assert relevance_score(-1.0) == 0.0
    assert relevance_score(np.array([0.0])).tolist() == [0.5]
    assert cosine_from_distance(0.25) == 0.75
    vectors = np.array([[1, 0], [0, 3], [-2, 0], [0, 0]], dtype=np.float32)
    assert exact_cosines(vectors, np.array([2.0, 0.0])).tolist() == [1.0, 0.0, -1.0, 0.0]
    rows = np.array([2, 0], dtype=np.intp)
    assert exact_cosines(vectors, np.array([1.0, 0.0]), rows).tolist() == [-1.0, 1.0]
    assert exact_cosines(vectors, np.zeros(2)).tolist() == [0.0] * 4
    many = np.random.default_rng(0).standard_normal((10_000, 8)).astype(np.float32)
    query = many[1234].astype(np.float64)
    expected = (many.astype(np.float64) @ query) / (
        np.linalg.norm(many.astype(np.float64), axis=1) * np.linalg.norm(query)
    )
    assert np.allclose(exact_cosines(many, query), expected, atol=1e-12)  # across chunks


def test_resolve_dynamic() -> None:
    query = Query("hello")
    assert resolve_dynamic(3, query) == 3
    assert resolve_dynamic(lambda q: len(q.text), query) == 5
