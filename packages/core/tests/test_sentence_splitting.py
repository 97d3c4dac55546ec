"""Sentence boundaries of DocumentBySentenceSplitter (regex heuristics, no NLP model)."""

from __future__ import annotations

import pytest

from ragloom.core import Document, DocumentBySentenceSplitter


class OnePerUnit:
    """Any text is one token: with a limit of 1, every sentence becomes its own segment."""

    def count_tokens(self, text: str) -> int:
        return 1 if text else 0


def sentences(text: str) -> list[str]:
    splitter = DocumentBySentenceSplitter(1, tokenizer=OnePerUnit())
    return [segment.text for segment in splitter.split(Document(text))]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Mr. Smith went to Washington. He arrived late.",
            ["Mr. Smith went to Washington.", "He arrived late."],
        ),
        (
            "Dr. Jones, Mrs. Brown and Prof. White met at St. Mary's. Then vs. now.",
            ["Dr. Jones, Mrs. Brown and Prof. White met at St. Mary's.", "Then vs. now."],
        ),
        (
            "J. R. R. Tolkien wrote The Hobbit. It appeared in 1937.",
            ["J. R. R. Tolkien wrote The Hobbit.", "It appeared in 1937."],
        ),
        (
            "We sell apples, pears, etc. The shop opens at 9 a.m. and closes at 5 p.m. daily.",
            ["We sell apples, pears, etc.", "The shop opens at 9 a.m. and closes at 5 p.m. daily."],
        ),
        ("Apple Inc. is big. It grew.", ["Apple Inc. is big.", "It grew."]),
        (
            "He moved to the U.S. in May. He works at I.B.M. now.",
            ["He moved to the U.S. in May.", "He works at I.B.M. now."],
        ),
        (
            "e.g. this and i.e. that are common. Yes.",
            ["e.g. this and i.e. that are common.", "Yes."],
        ),
        ("See No. 5 and Fig. 3 for details. Done.", ["See No. 5 and Fig. 3 for details.", "Done."]),
        ("It is Mary's. Take it.", ["It is Mary's.", "Take it."]),
        ("A. Lincoln (b. 1809). (J. Doe) wrote.", ["A. Lincoln (b. 1809).", "(J. Doe) wrote."]),
        ("No. 5 is mine. No. It is not.", ["No. 5 is mine.", "No.", "It is not."]),
    ],
)
def test_abbreviations_and_initials(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Pi is about 3.14159 in value. Next one.",
            ["Pi is about 3.14159 in value.", "Next one."],
        ),
        (
            "Version 2.0.1 is on example.com today. Great.",
            ["Version 2.0.1 is on example.com today.", "Great."],
        ),
        ("Prices rose 5%. Then fell 2.5 points.", ["Prices rose 5%.", "Then fell 2.5 points."]),
        ("The answer is 42. Why?", ["The answer is 42.", "Why?"]),
    ],
)
def test_numbers(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Wait... what happened? I don't know! Really?! Yes.",
            ["Wait... what happened?", "I don't know!", "Really?!", "Yes."],
        ),
        ("He paused\u2026 Then he spoke. Fine.", ["He paused\u2026", "Then he spoke.", "Fine."]),
        ("He paused... Then he spoke.", ["He paused...", "Then he spoke."]),
        ('"Stop!" he shouted. She stopped.', ['"Stop!" he shouted.', "She stopped."]),
        ('He said "Go home." Then he left.', ['He said "Go home."', "Then he left."]),
        ("(See Fig. 3.) The results follow.", ["(See Fig. 3.)", "The results follow."]),
        ("Is it? yes it is.", ["Is it? yes it is."]),
    ],
)
def test_punctuation_quotes_and_brackets(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "C'est la vie. Éric est là. Ça va?",
            ["C'est la vie.", "Éric est là.", "Ça va?"],
        ),
        ("Это тест. Второе предложение.", ["Это тест.", "Второе предложение."]),
        (
            "今日は晴れです。明日は雨でしょう\uff01本当\uff1f",
            ["今日は晴れです。", "明日は雨でしょう\uff01", "本当\uff1f"],
        ),
        (
            "他说\uff1a\u201c你好。\u201d然后走了。",
            ["他说\uff1a\u201c你好。\u201d", "然后走了。"],
        ),
        ("क्या हाल है। ठीक है।", ["क्या हाल है।", "ठीक है।"]),
        ("Party time 🎉. Next 🚀 launch!", ["Party time 🎉.", "Next 🚀 launch!"]),
    ],
)
def test_unicode(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_line_breaks() -> None:
    assert sentences("Title without period\n\nBody text here.") == [
        "Title without period",
        "Body text here.",
    ]
    assert sentences("Line one\nline two.") == ["Line one\nline two."]
    assert sentences("One.\r\n\r\nTwo") == ["One.", "Two"]


def test_offsets_point_into_the_document() -> None:
    text = "  First one.   Second one!\n\nThird?  "
    splitter = DocumentBySentenceSplitter(1, tokenizer=OnePerUnit())
    for segment in splitter.split(Document(text)):
        start, end = segment.metadata["start"], segment.metadata["end"]
        assert isinstance(start, int)
        assert isinstance(end, int)
        assert text[start:end] == segment.text
