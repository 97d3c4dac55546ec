import pytest

from ragloom.core import (
    Document,
    DocumentTransformer,
    InvalidArgumentTypeError,
    TextSegment,
    TextSegmentTransformer,
)
from ragloom.core.transformers import as_document_transformer, as_text_segment_transformer


class DropShort(DocumentTransformer):
    def transform(self, document: Document) -> Document | None:
        if len(document.text) < 5:
            return None
        return Document(document.text.strip(), document.metadata.copy().put("cleaned", True))


class Prefix(TextSegmentTransformer):
    def transform(self, segment: TextSegment) -> TextSegment | None:
        title = segment.metadata.get("title")
        return TextSegment(f"{title}\n{segment.text}", segment.metadata) if title else None


def test_document_transformer_drops_and_enriches() -> None:
    out = DropShort().transform_all([Document("  long enough "), Document("tiny")])
    assert out == [Document("long enough", {"cleaned": True})]
    assert isinstance(DropShort(), DocumentTransformer)


def test_segment_transformer() -> None:
    segs = [TextSegment("body", {"title": "T"}), TextSegment("orphan")]
    assert Prefix().transform_all(segs) == [TextSegment("T\nbody", {"title": "T"})]


def test_functions_and_transform_only_objects_are_adapted() -> None:
    class Upper:  # has transform but does not subclass the protocol (no transform_all)
        def transform(self, document: Document) -> Document:
            return Document(document.text.upper(), document.metadata)

    adapted = as_document_transformer(Upper())
    assert adapted.transform_all([Document("a"), Document("b")]) == [Document("A"), Document("B")]
    drop_blank = as_text_segment_transformer(lambda s: s if s.text.strip() else None)
    assert drop_blank.transform_all([TextSegment(" "), TextSegment("x")]) == [TextSegment("x")]
    full = DropShort()
    assert as_document_transformer(full) is full


def test_a_value_that_is_no_transformer_is_refused_by_name() -> None:
    with pytest.raises(InvalidArgumentTypeError, match=r"text_segment_transformer must be .* 42"):
        as_text_segment_transformer(42)  # type: ignore[arg-type]
