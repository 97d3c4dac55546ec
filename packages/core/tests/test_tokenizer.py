"""Tokenizer protocol, batch counting and the Hugging Face adapter."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragloom.core import Document, Tokenizer, document_splitters
from ragloom.core.tokenizer import HuggingFaceTokenizer, count_tokens_batch

# all-MiniLM-L6-v2's tokenizer.json as ragloom-embedding-onnx ships it (the same file as
# in the model's Hugging Face repository); `tokenizers` comes from core's test group.
MINILM_TOKENIZER_JSON = (
    Path(__file__).parents[2]
    / "embedding-onnx/src/ragloom/embeddings/onnx/resources/all-MiniLM-L6-v2/tokenizer.json"
)


class FakeEncoding:
    def __init__(self, n: int) -> None:
        self.ids = list(range(n))


class FakeHfTokenizer:
    """Duck-types ``tokenizers.Tokenizer``: one id per word, plus truncation/padding."""

    def __init__(self, truncation: dict[str, int] | None = None, padding: Any = None) -> None:
        self.truncation = truncation
        self.padding = padding
        self.batches: list[list[str]] = []

    def encode_batch(self, texts: list[str], add_special_tokens: bool = True) -> list[FakeEncoding]:
        assert add_special_tokens is False
        self.batches.append(texts)
        limit = self.truncation["max_length"] if self.truncation else None
        return [FakeEncoding(len(t.split()[:limit])) for t in texts]

    def to_str(self) -> str:
        return json.dumps({"truncation": self.truncation, "padding": self.padding})

    @classmethod
    def from_str(cls, data: str) -> FakeHfTokenizer:
        return cls(**json.loads(data))

    def no_truncation(self) -> None:
        self.truncation = None

    def no_padding(self) -> None:
        self.padding = None


def test_adapter_counts_in_one_batch() -> None:
    hf = FakeHfTokenizer()
    tokenizer = HuggingFaceTokenizer(hf)
    assert isinstance(tokenizer, Tokenizer)
    assert tokenizer.count_tokens_batch(["a b", "c", ""]) == [2, 1, 0]
    assert tokenizer.count_tokens("x y z") == 3
    assert hf.batches == [["a b", "c", ""], ["x y z"]]


def test_adapter_counts_past_the_truncation_of_the_callers_tokenizer() -> None:
    hf = FakeHfTokenizer(truncation={"max_length": 2}, padding={"length": 128})
    tokenizer = HuggingFaceTokenizer(hf)
    assert tokenizer.count_tokens("one two three four") == 4
    assert hf.truncation == {"max_length": 2}  # the caller's object is left as it was
    assert hf.padding == {"length": 128}
    assert hf.batches == []


def test_adapter_prefers_encode_batch_fast() -> None:
    class Fast(FakeHfTokenizer):
        def encode_batch_fast(
            self, texts: list[str], add_special_tokens: bool = True
        ) -> list[FakeEncoding]:
            return [FakeEncoding(7) for _ in texts]

    assert HuggingFaceTokenizer(Fast()).count_tokens("a") == 7


def test_count_tokens_batch_uses_the_batch_method_when_present() -> None:
    class Single:
        def count_tokens(self, text: str) -> int:
            return len(text)

    class Batch(Single):
        def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
            return [0] * len(texts)

    assert count_tokens_batch(Single(), ["ab", "c"]) == [2, 1]
    assert count_tokens_batch(Batch(), ["ab", "c"]) == [0, 0]


def test_splitting_with_a_real_hugging_face_tokenizer() -> None:
    tokenizer = HuggingFaceTokenizer.from_file(str(MINILM_TOKENIZER_JSON))
    text = " ".join(f"Sentence {i} talks about tokenization of café text." for i in range(200))
    assert tokenizer.count_tokens(text) > 512  # no truncation at the model's 128/512
    segments = document_splitters.recursive(50, 10, tokenizer).split(Document(text))
    assert len(segments) > 20
    for segment in segments:
        assert tokenizer.count_tokens(segment.text) <= 50
        start, end = segment.metadata.get_int("start"), segment.metadata.get_int("end")
        assert text[start:end] == segment.text


def test_counts_add_up_across_every_cut() -> None:
    tokenizer = HuggingFaceTokenizer.from_file(str(MINILM_TOKENIZER_JSON))
    rng = random.Random(3)
    parts = ["a", "B", "0", "+", "/", ",", ".", "_", "'", " ", "\n", "\x0b", "é", "e\u0301"]
    parts += ["Σ", "東", "[CLS]", "[mask]", "[SEP", "xyz", "##"]
    checked = 0
    for _ in range(2000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(2, 30)))
        whole = tokenizer.count_tokens(text)
        for p in tokenizer.cuts(text, 0, len(text)):
            assert tokenizer.count_tokens(text[:p]) + tokenizer.count_tokens(text[p:]) == whole
            checked += 1
    assert checked > 5000
    # Never inside an added token (matched before pre-tokenizing), nor after a control
    # character BERT deletes (it joins the words around it).
    assert tokenizer.cuts("x[CLS]y", 0, 7) == [1, 6]
    assert tokenizer.cuts("ab+cd\x0bef g", 0, 10) == [2, 3, 9]


def test_cuts_of_tokenizers_that_do_not_split_at_punctuation() -> None:
    assert HuggingFaceTokenizer(FakeHfTokenizer()).cuts("a+b c", 0, 5) == []  # unknown
    from tokenizers import Tokenizer as HfTokenizer
    from tokenizers.pre_tokenizers import WhitespaceSplit

    hf = HfTokenizer.from_file(str(MINILM_TOKENIZER_JSON))
    hf.pre_tokenizer = WhitespaceSplit()
    assert HuggingFaceTokenizer(hf).cuts("a+b c,d", 0, 7) == [4]  # whitespace only


def test_long_lines_without_whitespace_are_counted_exactly_in_slices() -> None:
    tokenizer = HuggingFaceTokenizer.from_file(str(MINILM_TOKENIZER_JSON))
    line = base64.b64encode(random.Random(1).randbytes(200_000)).decode()
    encode = tokenizer._encode_batch
    longest = [0]

    def recording(texts: list[str], add_special_tokens: bool) -> Any:
        longest[0] = max(longest[0], *map(len, texts))
        return encode(texts, add_special_tokens=add_special_tokens)

    tokenizer._encode_batch = recording
    whole = len(encode([line], add_special_tokens=False)[0])
    assert tokenizer.count_tokens(line) == whole
    assert longest[0] < 70_000  # in slices of about 64k characters, not one encoding
