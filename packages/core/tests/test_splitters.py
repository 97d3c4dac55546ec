"""Document splitters: offsets, index, metadata, overlap, sizes, unicode, edge cases."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.core import (
    Document,
    DocumentByCharacterSplitter,
    DocumentByLineSplitter,
    DocumentByParagraphSplitter,
    DocumentByRegexSplitter,
    DocumentBySentenceSplitter,
    DocumentByWordSplitter,
    DocumentSplitError,
    DocumentSplitter,
    RecursiveDocumentSplitter,
    TextSegment,
    Tokenizer,
    document_splitters,
)

Factory = Callable[..., DocumentSplitter]

SPLITTERS: dict[str, Factory] = {
    "paragraph": DocumentByParagraphSplitter,
    "line": DocumentByLineSplitter,
    "sentence": DocumentBySentenceSplitter,
    "word": DocumentByWordSplitter,
    "character": DocumentByCharacterSplitter,
    "regex": lambda *args, **kwargs: DocumentByRegexSplitter(r"\s*;\s*", *args, **kwargs),
    "recursive": RecursiveDocumentSplitter,
}

TEXT = (
    "Mr. Smith went to Washington. He arrived at 3.14 p.m. and left; nobody noticed.\n"
    "A second line follows here.\n\n"
    "Second paragraph, with a few more words; it ends here! Does it? Yes.\n\n\n"
    "  Third paragraph: café, naïve, Zürich; 東京は大きい。とても大きい。 Emoji 🎉🎉 end.  "
)


class WordTokenizer:
    """Counts whitespace-separated words (additive, so estimates are exact)."""

    def count_tokens(self, text: str) -> int:
        return len(text.split())


class AdditiveWordTokenizer(WordTokenizer):
    """Declares what is true of word counting: counts add up across whitespace. Counts
    the characters it is given, and, like BERT, deletes form feeds (joining words)."""

    def __init__(self, declared: bool = True) -> None:
        self.splits_on_whitespace = declared
        self.counted = 0

    def count_tokens(self, text: str) -> int:
        self.counted += len(text)
        return len(text.replace("\x0c", "").split())


class ThirdsTokenizer:
    """A token per three characters, rounded up: not additive, exercises verification."""

    def __init__(self) -> None:
        self.batches = 0

    def count_tokens(self, text: str) -> int:
        return (len(text) + 2) // 3

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        self.batches += 1
        return [self.count_tokens(t) for t in texts]


class SquareTokenizer:
    """Grows with the square of the length: a whole counts more than its parts, so the
    additive estimates are too low and verification has to repair segments."""

    def count_tokens(self, text: str) -> int:
        return len(text) * len(text) // 40


def split(splitter: DocumentSplitter, text: str, **metadata: object) -> list[TextSegment]:
    return splitter.split(Document(text, metadata))


def check_segments(
    text: str,
    segments: list[TextSegment],
    max_size: int,
    max_overlap: int,
    measure: Callable[[str], int] = len,
    covers: bool = True,
) -> None:
    """The invariants every splitter keeps."""
    previous: TextSegment | None = None
    for k, segment in enumerate(segments):
        start, end = segment.metadata["start"], segment.metadata["end"]
        assert isinstance(start, int)
        assert isinstance(end, int)
        assert segment.metadata["index"] == k
        assert text[start:end] == segment.text
        assert segment.text
        assert segment.text == segment.text.strip()
        assert measure(segment.text) <= max_size or len(segment.text) == 1
        if previous is not None:
            prev_start, prev_end = previous.metadata["start"], previous.metadata["end"]
            assert isinstance(prev_start, int)
            assert isinstance(prev_end, int)
            assert prev_start < start
            assert prev_end < end
            if start < prev_end:
                assert measure(text[start:prev_end]) <= max_overlap
        previous = segment
    if covers:  # no text is lost
        covered = [False] * len(text)
        for segment in segments:
            s, e = segment.metadata["start"], segment.metadata["end"]
            assert isinstance(s, int)
            assert isinstance(e, int)
            covered[s:e] = [True] * (e - s)
        lost = [i for i, ch in enumerate(text) if not covered[i] and not ch.isspace()]
        assert not lost, f"characters not in any segment at {lost[:10]}"


@pytest.fixture(params=sorted(SPLITTERS))
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def covers(name: str) -> bool:
    return name != "regex"  # the regex splitter drops its separators


def test_segments_are_exact_spans_with_index_and_copied_metadata(name: str) -> None:
    splitter = SPLITTERS[name](40)
    document = Document(TEXT, {"source": "doc.txt", "page": 3})
    segments = splitter.split(document)
    assert len(segments) > 3
    check_segments(TEXT, segments, 40, 0, covers=covers(name))
    for segment in segments:
        assert segment.metadata["source"] == "doc.txt"
        assert segment.metadata["page"] == 3
    segments[0].metadata["source"] = "changed"
    segments[0].metadata["extra"] = 1
    assert document.metadata["source"] == "doc.txt"
    assert "extra" not in document.metadata
    assert segments[1].metadata["source"] == "doc.txt"
    assert "index" not in document.metadata


def test_overlap_is_bounded_and_present(name: str) -> None:
    text = " ".join(f"Sentence number {i} has some words in it." for i in range(40))
    segments = split(SPLITTERS[name](80, 30), text)
    check_segments(text, segments, 80, 30, covers=covers(name))
    shared = [
        b.metadata["start"] < a.metadata["end"]  # type: ignore[operator]
        for a, b in pairwise(segments)
    ]
    assert sum(shared) >= len(shared) // 2


def test_overlap_prefers_a_sentence_start_to_an_earlier_word_start() -> None:
    text = "aaa bbb ccc ddd. Eee fff ggg hhh iii jjj."
    segments = split(DocumentByWordSplitter(27, 16), text)
    assert [s.text for s in segments] == ["aaa bbb ccc ddd. Eee fff", "Eee fff ggg hhh iii jjj."]


def test_overlap_falls_back_to_the_earliest_word_start() -> None:
    text = "aaa bbb ccc ddd eee fff ggg hhh iii jjj"
    segments = split(DocumentByWordSplitter(19, 8), text)
    assert [s.text for s in segments] == [
        "aaa bbb ccc ddd eee",
        "ddd eee fff ggg hhh",
        "ggg hhh iii jjj",
    ]


def test_overlap_is_made_of_whole_sentences_when_they_fit() -> None:
    segments = split(DocumentBySentenceSplitter(60, 30), "Short one. " * 10)
    assert [s.text.count("Short one.") for s in segments] == [5, 5, 4]
    assert [s.metadata["start"] for s in segments] == [0, 33, 66]


def test_no_overlap_inside_words_when_avoidable() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi"
    for segment in split(DocumentByWordSplitter(20, 8), text):
        start = segment.metadata["start"]
        assert isinstance(start, int)
        assert start == 0 or text[start - 1] == " "


def test_overlap_inside_a_long_word_when_unavoidable() -> None:
    text = "x" * 100
    segments = split(DocumentByCharacterSplitter(30, 10), text)
    check_segments(text, segments, 30, 10)
    assert all(len(s.text) == 30 for s in segments[:-1])
    assert segments[1].metadata["start"] == 20


@pytest.mark.parametrize("text", ["", " ", "\n\n\t  \n", "\u3000\u00a0 "])
def test_empty_and_whitespace_only_documents_give_no_segments(name: str, text: str) -> None:
    assert split(SPLITTERS[name](10, 2), text) == []


def test_text_without_separators_still_splits(name: str) -> None:
    text = "abcdefghij" * 25
    segments = split(SPLITTERS[name](30, 5), text)
    check_segments(text, segments, 30, 5)
    assert len(segments) >= 9


def test_unicode_text(name: str) -> None:
    text = (
        "Ça va très bien, merci. Naïve façade; Zürich. "
        "東京は日本の首都です。大阪も大きい都市です。\n\n"
        "Emoji 🎉🚀 party 👩‍👩‍👧 time; done. Ελληνικά κείμενα εδώ. Русский текст тоже."
    )
    segments = split(SPLITTERS[name](25, 6), text)
    check_segments(text, segments, 25, 6, covers=covers(name))


def test_small_document_is_one_segment(name: str) -> None:
    segments = split(SPLITTERS[name](100, 10), "  Hello world.  ", key="v")
    assert [s.text for s in segments] == ["Hello world."]
    assert segments[0].metadata.to_dict() == {"key": "v", "index": 0, "start": 2, "end": 14}


def test_segments_are_filled_greedily() -> None:
    text = "\n\n".join(["aaaa bbbb"] * 10)  # paragraphs of 9 chars, 11 with the break
    segments = split(DocumentByParagraphSplitter(31), text)
    assert [s.text.count("aaaa") for s in segments] == [3, 3, 3, 1]


def test_paragraph_splitter_units() -> None:
    text = "P one\nstill one\n \t\nP two\r\n\r\nP three\n\n\n\nP four"
    segments = split(DocumentByParagraphSplitter(15), text)
    assert [s.text for s in segments] == ["P one\nstill one", "P two", "P three", "P four"]


def test_paragraph_splitter_knows_other_line_breaks() -> None:
    text = "one\u2029\u2029two\r\rthree\x0c\x0cfour"
    segments = split(DocumentByParagraphSplitter(6), text)
    assert [s.text for s in segments] == ["one", "two", "three", "four"]


def test_line_splitter_units() -> None:
    text = "line one  \n\n  line two\r\nline three\n"
    segments = split(DocumentByLineSplitter(11), text)
    assert [s.text for s in segments] == ["line one", "line two", "line three"]


def test_regex_splitter_drops_its_separators() -> None:
    text = "a1 --- b2 --- c3 ---d4"
    segments = split(DocumentByRegexSplitter(r"\s*---\s*", 2), text)
    assert [s.text for s in segments] == ["a1", "b2", "c3", "d4"]
    segments = split(DocumentByRegexSplitter(re.compile("-+"), 30), text)
    assert [s.text for s in segments] == ["a1 --- b2 --- c3 ---d4"]


def test_recursive_prefers_coarse_units() -> None:
    paragraph = "First sentence here. Second sentence here. Third one."
    text = f"{paragraph}\n\n{paragraph}"
    assert [s.text for s in split(document_splitters.recursive(60), text)] == [paragraph] * 2
    texts = [s.text for s in split(document_splitters.recursive(45), text)]
    assert texts[:2] == ["First sentence here. Second sentence here.", "Third one."]


def test_split_all_indexes_each_document_from_zero() -> None:
    splitter = document_splitters.recursive(12)
    docs = [Document("one two three four", {"n": 1}), Document("five six", {"n": 2})]
    segments = splitter.split_all(docs)
    assert [(s.metadata["n"], s.metadata["index"]) for s in segments] == [(1, 0), (1, 1), (2, 0)]


def test_splitters_are_document_splitters(name: str) -> None:
    assert isinstance(SPLITTERS[name](10), DocumentSplitter)
    assert isinstance(document_splitters.recursive(10), DocumentSplitter)
    assert "max_segment_size=10" in repr(SPLITTERS[name](10))


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ((0,), "0"),
        ((-5,), "-5"),
        ((10, -1), "-1"),
        ((10, 10), "10"),
        ((10, 15), "15"),
        ((10.5,), "10.5"),
        ((True,), "True"),
        ((10, "2"), "'2'"),
    ],
)
def test_bad_sizes_raise_naming_the_value(name: str, args: tuple[object, ...], named: str) -> None:
    with pytest.raises(DocumentSplitError, match=re.escape(named)):
        SPLITTERS[name](*args)


def test_bad_collaborators_raise() -> None:
    with pytest.raises(DocumentSplitError, match="tokenizer"):
        DocumentByWordSplitter(10, tokenizer=object())  # type: ignore[arg-type]
    with pytest.raises(DocumentSplitError, match="sub_splitter"):
        DocumentByWordSplitter(10, sub_splitter=object())  # type: ignore[arg-type]
    with pytest.raises(DocumentSplitError, match=re.escape("'(unclosed'")):
        DocumentByRegexSplitter("(unclosed", 10)


def test_foreign_sub_splitter_segments_are_mapped_back() -> None:
    class Halves:
        def split(self, document: Document) -> list[TextSegment]:
            half = len(document.text) // 2
            return [TextSegment(document.text[:half]), TextSegment(document.text[half:])]

        def split_all(self, documents: Iterable[Document]) -> list[TextSegment]:
            return [s for d in documents for s in self.split(d)]

    text = "short\n\n" + "y" * 30
    segments = split(DocumentByParagraphSplitter(20, sub_splitter=Halves()), text)
    assert [s.text for s in segments] == ["short", "y" * 15, "y" * 15]
    check_segments(text, segments, 20, 0)


# --- tokens -------------------------------------------------------------------------


def test_sizes_in_tokens(name: str) -> None:
    text = " ".join(f"w{i}" for i in range(100))
    tokenizer = WordTokenizer()
    assert isinstance(tokenizer, Tokenizer)
    segments = split(SPLITTERS[name](10, 3, tokenizer), text)
    check_segments(text, segments, 10, 3, tokenizer.count_tokens)
    assert len(segments) >= 10
    assert all(tokenizer.count_tokens(s.text) == 10 for s in segments[:-2])


def test_non_additive_tokenizers_keep_the_invariant(name: str) -> None:
    tokenizer = ThirdsTokenizer()
    segments = split(SPLITTERS[name](12, 4, tokenizer), TEXT * 3)
    check_segments(TEXT * 3, segments, 12, 4, tokenizer.count_tokens, covers=covers(name))
    assert tokenizer.batches >= 1
    square = SquareTokenizer()
    segments = split(SPLITTERS[name](20, 6, square), TEXT * 3)
    check_segments(TEXT * 3, segments, 20, 6, square.count_tokens, covers=covers(name))


def test_additive_tokenizer_gives_the_same_segments_with_less_counting(name: str) -> None:
    text = TEXT.replace("東京は大きい。とても大きい。", "Tokyo") * 5
    additive, plain = AdditiveWordTokenizer(), AdditiveWordTokenizer(declared=False)
    fast = split(SPLITTERS[name](30, 8, additive), text)
    slow = split(SPLITTERS[name](30, 8, plain), text)
    assert [s.metadata for s in fast] == [s.metadata for s in slow]
    if name not in ("regex", "character"):
        assert additive.counted < 0.75 * plain.counted


def test_whitespace_a_tokenizer_deletes_is_not_trusted_to_add_up() -> None:
    tokenizer = AdditiveWordTokenizer()
    text = " ".join(["aa\x0cbb cc"] * 40)
    segments = split(document_splitters.recursive(5, 2, tokenizer), text)
    check_segments(text, segments, 5, 2, tokenizer.count_tokens)


def test_a_character_over_the_token_limit_is_kept_alone() -> None:
    class Heavy:
        def count_tokens(self, text: str) -> int:
            return sum(5 if ch == "#" else 1 for ch in text)

    text = "ab#cd"
    segments = split(DocumentByCharacterSplitter(3, tokenizer=Heavy()), text)
    assert [s.text for s in segments] == ["ab", "#", "cd"]


# --- property tests -----------------------------------------------------------------

ALPHABET = st.sampled_from(
    [
        *"aaaabbbcdeé東🎉",
        " ",
        " ",
        "  ",
        "\n",
        "\n\n",
        " \n \n",
        ". ",
        "? ",
        "! ",
        "。",
        "\t",
        "\x0c",
    ]
)
TEXTS = st.lists(ALPHABET, max_size=300).map("".join)


@settings(max_examples=200, deadline=None)
@given(text=TEXTS, size=st.integers(1, 60), overlap_ratio=st.floats(0, 0.9))
def test_recursive_invariants_in_characters(text: str, size: int, overlap_ratio: float) -> None:
    overlap = min(int(size * overlap_ratio), size - 1)
    segments = split(document_splitters.recursive(size, overlap), text)
    check_segments(text, segments, size, overlap)


@settings(max_examples=150, deadline=None)
@given(text=TEXTS, size=st.integers(1, 12), overlap_ratio=st.floats(0, 0.9))
def test_recursive_invariants_in_word_tokens(text: str, size: int, overlap_ratio: float) -> None:
    overlap = min(int(size * overlap_ratio), size - 1)
    tokenizer = WordTokenizer()
    segments = split(document_splitters.recursive(size, overlap, tokenizer), text)
    check_segments(text, segments, size, overlap, tokenizer.count_tokens)


@settings(max_examples=150, deadline=None)
@given(
    text=TEXTS,
    size=st.integers(1, 20),
    overlap_ratio=st.floats(0, 0.9),
    tokenizer=st.sampled_from([ThirdsTokenizer(), SquareTokenizer(), AdditiveWordTokenizer()]),
)
def test_recursive_invariants_with_non_additive_tokenizers(
    text: str, size: int, overlap_ratio: float, tokenizer: Tokenizer
) -> None:
    overlap = min(int(size * overlap_ratio), size - 1)
    segments = split(document_splitters.recursive(size, overlap, tokenizer), text)
    check_segments(text, segments, size, overlap, tokenizer.count_tokens)


@settings(max_examples=150, deadline=None)
@given(text=TEXTS, size=st.integers(1, 12), overlap_ratio=st.floats(0, 0.9))
def test_declaring_additivity_changes_no_segment(
    text: str, size: int, overlap_ratio: float
) -> None:
    overlap = min(int(size * overlap_ratio), size - 1)
    text = text.replace("\x0c", " ")  # AdditiveWordTokenizer is not additive across \x0c
    fast = split(document_splitters.recursive(size, overlap, AdditiveWordTokenizer()), text)
    slow = split(document_splitters.recursive(size, overlap, WordTokenizer()), text)
    assert [s.metadata for s in fast] == [s.metadata for s in slow]


@settings(max_examples=80, deadline=None)
@given(
    text=TEXTS,
    size=st.integers(1, 40),
    overlap_ratio=st.floats(0, 0.9),
    tokenizer=st.sampled_from(
        [None, WordTokenizer(), ThirdsTokenizer(), SquareTokenizer(), AdditiveWordTokenizer()]
    ),
)
def test_every_splitter_keeps_the_invariants(
    text: str, size: int, overlap_ratio: float, tokenizer: Tokenizer | None
) -> None:
    overlap = min(int(size * overlap_ratio), size - 1)
    measure = len if tokenizer is None else tokenizer.count_tokens
    for name, factory in SPLITTERS.items():
        segments = split(factory(size, overlap, tokenizer), text)
        check_segments(text, segments, size, overlap, measure, covers=covers(name))
