"""ContextualHeaderTransformer and DocumentSummaryTransformer: headers before embedding,
citations still on the original span."""

from __future__ import annotations

import pytest

from ragloom.core import (
    ContextualHeaderTransformer,
    Document,
    DocumentSummaryTransformer,
    EmbeddingSearchRequest,
    EmbeddingStoreIngestor,
    InMemoryEmbeddingStore,
    InvalidArgumentError,
    InvalidMetadataError,
    PromptTemplateError,
    TextSegment,
    document_splitters,
)
from ragloom.core.contextual_headers import HEADER_LENGTH, SECTION, SUMMARY, original_text
from ragloom.testkit import FakeEmbeddingModel, ScriptedChatModel

GUIDE = (
    "# Guide\n\nWhat this guide covers.\n\n"
    "## Install\n\nRun the installer and accept the licence. " + "Then wait a while. " * 6 + "\n\n"
    "```sh\n# not a heading: a shell comment\n```\n\n"
    "### Linux ###\n\nUse the package manager of your distribution.\n\n"
    "## Usage\n\nCall the tool with a file name."
)


def guide(**metadata: object) -> Document:
    return Document(GUIDE, {"file_name": "guide.md", **metadata})


def headed(document: Document, size: int = 70, overlap: int = 20) -> list[TextSegment]:
    segments = document_splitters.recursive(size, overlap).split(document)
    return ContextualHeaderTransformer().transform_all(segments)


def span(segment: TextSegment) -> str:
    return GUIDE[segment.metadata["start"] : segment.metadata["end"]]


def test_headers_carry_the_title_and_the_headings_above_each_segment() -> None:
    segments = headed(guide(title="The Guide"))
    assert len(segments) > 5
    for segment in segments:
        assert original_text(segment) == span(segment)  # citations keep the exact span
        header = segment.text[: segment.metadata[HEADER_LENGTH]]
        assert header.startswith("The Guide\n")
        assert header.endswith("\n\n")
    # the headings above each segment's start; one inside a segment is in its own text
    assert [s.metadata.get(SECTION) for s in segments] == [
        None,
        "Guide",
        *["Guide > Install"] * 6,  # the shell comment in the code fence is no heading
        "Guide > Install > Linux",
    ]


@pytest.mark.parametrize(("size", "overlap"), [(30, 0), (45, 15), (120, 60), (400, 0)])
def test_the_section_does_not_depend_on_how_the_text_is_split(size: int, overlap: int) -> None:
    for segment in headed(guide(), size, overlap):
        assert original_text(segment) == span(segment)
        if "Call the tool" in original_text(segment) and "## Usage" not in span(segment):
            assert segment.metadata[SECTION] == "Guide > Usage"
        if "package manager" in original_text(segment) and "Linux" not in span(segment):
            assert segment.metadata[SECTION] == "Guide > Install > Linux"


def test_segments_without_offsets_follow_the_headings_in_order() -> None:
    segments = [
        TextSegment("# Manual\n\nintro", {"title": "M"}),
        TextSegment("## Setup\nsteps", {"title": "M"}),
        TextSegment("more steps", {"title": "M"}),
    ]
    out = ContextualHeaderTransformer().transform_all(segments)
    assert [s.text for s in out] == [
        "M\n\n# Manual\n\nintro",
        "M\nManual\n\n## Setup\nsteps",
        "M\nManual > Setup\n\nmore steps",
    ]


def test_the_headings_of_one_document_do_not_leak_into_the_next() -> None:
    first = document_splitters.recursive(40, 0).split(Document("# A\n\nalpha text.", {"url": "a"}))
    second = document_splitters.recursive(40, 0).split(Document("beta text.", {"url": "b"}))
    again = document_splitters.recursive(40, 0).split(Document("# A\n\nalpha text.", {"url": "a"}))
    out = ContextualHeaderTransformer().transform_all([*first, *second, *again])
    assert [s.metadata.get(SECTION) for s in out] == [None, None, None]
    assert [s.text for s in out] == ["a\n\n# A\n\nalpha text.", "b\n\nbeta text.", out[0].text]


def test_without_header_parts_the_segment_is_unchanged() -> None:
    segment = TextSegment("plain", {"index": 0})
    assert ContextualHeaderTransformer().transform(segment) is segment
    assert ContextualHeaderTransformer().transform_all([segment]) == [segment]


def test_a_summary_is_a_header_line_and_transforming_again_replaces_the_header() -> None:
    transformer = ContextualHeaderTransformer()
    segment = TextSegment("body", {"title": "T", SECTION: "A > B", SUMMARY: "About b."})
    once = transformer.transform(segment)
    assert once.text == "T\nA > B\nAbout b.\n\nbody"
    assert transformer.transform(once) == once
    bare = ContextualHeaderTransformer(title_keys=(), headings=False, summary_key=None)
    stripped = bare.transform(once)
    assert stripped.text == "body"
    assert HEADER_LENGTH not in stripped.metadata


def test_the_title_is_left_out_when_the_section_starts_with_it() -> None:
    transformer = ContextualHeaderTransformer()
    nested = TextSegment("body", {"title": "Guide", SECTION: "Guide > Install"})
    assert transformer.transform(nested).text == "Guide > Install\n\nbody"
    same = TextSegment("body", {"title": "Guide", SECTION: "Guide"})
    assert transformer.transform(same).text == "Guide\n\nbody"
    other = TextSegment("body", {"title": "Guidebook", SECTION: "Guide > Install"})
    assert transformer.transform(other).text == "Guidebook\nGuide > Install\n\nbody"


def test_the_header_is_bounded_and_cleaned() -> None:
    segment = TextSegment("body", {"title": "T\x00\x1b" + "x" * 1000})
    out = ContextualHeaderTransformer(max_header_chars=20).transform(segment)
    assert out.text == "T" + "x" * 19 + "\n\nbody"
    assert out.metadata[HEADER_LENGTH] == 22


@pytest.mark.parametrize("length", [-1, 5, "2", 1.0])
def test_original_text_refuses_a_bad_header_length(length: object) -> None:
    with pytest.raises(InvalidMetadataError, match=f"'header_length' holds {length!r}"):
        original_text(TextSegment("body", {HEADER_LENGTH: length}))


def test_bad_settings_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="max_header_chars must be a positive int"):
        ContextualHeaderTransformer(max_header_chars=0)
    with pytest.raises(InvalidArgumentError, match="got the string 'title'"):
        ContextualHeaderTransformer(title_keys="title")
    with pytest.raises(InvalidArgumentError, match="max_input_chars must be a positive int"):
        DocumentSummaryTransformer(ScriptedChatModel(), max_input_chars=0)
    with pytest.raises(PromptTemplateError, match=r"must contain \{document\}"):
        DocumentSummaryTransformer(ScriptedChatModel(), prompt_template="Summarize")


def test_the_summary_comes_from_the_model_bounded_and_cleaned() -> None:
    model = ScriptedChatModel(["  A guide\x07 to\ninstalling   the tool. " + "z" * 500])
    document = guide()
    summarized = DocumentSummaryTransformer(model, max_chars=40, max_input_chars=30).transform(
        document
    )
    assert summarized.metadata[SUMMARY] == "A guide to installing the tool. zzzzzzzz"
    assert SUMMARY not in document.metadata  # the input is not modified
    assert model.prompts[0].endswith("Document:\n" + GUIDE[:30])


def test_a_blank_summary_is_left_out_and_an_existing_one_is_kept() -> None:
    model = ScriptedChatModel([" \n\x00"])
    assert SUMMARY not in DocumentSummaryTransformer(model).transform(guide()).metadata
    kept = guide(summary="Known.")
    assert DocumentSummaryTransformer(model).transform(kept) is kept
    assert len(model.requests) == 1


def test_ingested_segments_are_embedded_with_headers_and_cite_the_original_span() -> None:
    store = InMemoryEmbeddingStore()
    model = FakeEmbeddingModel(32)
    EmbeddingStoreIngestor(
        store,
        model,
        document_splitter=document_splitters.recursive(80, 0),
        document_transformer=DocumentSummaryTransformer(ScriptedChatModel(["How to install."])),
        text_segment_transformer=ContextualHeaderTransformer(),
    ).ingest(guide())
    matches = store.search(EmbeddingSearchRequest([1.0] * 32, max_results=100)).matches
    stored = [m.embedded for m in matches if m.embedded is not None]
    assert len(stored) > 3
    for segment in stored:
        assert segment.text.startswith("guide.md\n")
        assert "How to install.\n\n" in segment.text
        assert original_text(segment) == span(segment)
    linux = next(s for s in stored if "package manager" in original_text(s))
    assert linux.metadata[SECTION] == "Guide > Install > Linux"
