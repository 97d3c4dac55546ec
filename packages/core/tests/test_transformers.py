from ragloom.core import Document, DocumentTransformer, TextSegment, TextSegmentTransformer


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
