import uuid

import numpy as np
import pytest

from ragloom.core import Document, InvalidMetadataError, Metadata, TextSegment


def test_allowed_types_roundtrip() -> None:
    u = uuid.uuid4()
    m = Metadata({"s": "x", "i": 1, "f": 1.5, "b": True, "u": u})
    assert m.to_dict() == {"s": "x", "i": 1, "f": 1.5, "b": True, "u": u}
    assert Metadata.from_dict(m.to_dict()) == m
    assert m.get_string("s") == "x"
    assert m.get_int("i") == 1
    assert m.get_float("i") == 1.0
    assert m.get_bool("b") is True
    assert m.get_uuid("u") == u
    assert m.get("missing") is None
    assert m.get_string("missing") is None


@pytest.mark.parametrize("value", [None, [1], {"a": 1}, b"x", (1,), object(), 1j])
def test_rejects_other_types_naming_the_key(value: object) -> None:
    with pytest.raises(InvalidMetadataError, match="'bad'"):
        Metadata({"bad": value})
    m = Metadata({"ok": 1})
    with pytest.raises(InvalidMetadataError, match="'bad'"):
        m.put("bad", value)
    assert m.to_dict() == {"ok": 1}


@pytest.mark.parametrize("key", ["", 1, None])
def test_rejects_bad_keys(key: object) -> None:
    with pytest.raises(InvalidMetadataError):
        Metadata({key: 1})  # type: ignore[dict-item]


def test_bool_is_not_int() -> None:
    assert Metadata({"a": True}) != Metadata({"a": 1})
    assert Metadata({"a": 1}) != Metadata({"a": 1.0})
    with pytest.raises(InvalidMetadataError, match="'a'"):
        Metadata({"a": True}).get_int("a")
    with pytest.raises(InvalidMetadataError, match="'a'"):
        Metadata({"a": "1"}).get_int("a")


def test_numpy_scalars_become_python_values() -> None:
    m = Metadata({"i": np.int64(3), "f": np.float32(0.5), "b": np.bool_(True)})
    assert type(m["i"]) is int
    assert type(m["f"]) is float
    assert type(m["b"]) is bool


def test_put_remove_copy_are_independent() -> None:
    m = Metadata().put("a", 1).put("b", "x")
    c = m.copy()
    c.put("a", 2)
    assert m["a"] == 1
    assert m.remove("a") == 1
    assert m.remove("a") is None
    assert not m.contains_key("a")
    assert "b" in m
    assert len(m) == 1


def test_put_all_is_all_or_nothing() -> None:
    m = Metadata({"a": 1})
    with pytest.raises(InvalidMetadataError, match="'c'"):
        m.put_all({"b": 2, "c": [3]})
    assert m.to_dict() == {"a": 1}


def test_document_and_segment() -> None:
    d = Document.from_text("hello")
    assert d.metadata == Metadata()
    assert d.metadata == {}
    d2 = Document("hello", {"k": "v"})
    assert d2 != d
    assert d2 == Document("hello", Metadata({"k": "v"}))
    seg = d2.to_text_segment()
    assert seg == TextSegment("hello", {"k": "v", "index": 0})
    seg.metadata.put("k", "changed")
    assert d2.metadata["k"] == "v"
    with pytest.raises(TypeError):
        Document(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(InvalidMetadataError, match="'x'"):
        TextSegment.from_text("t", {"x": None})


def test_metadata_is_mutable_so_unhashable() -> None:
    with pytest.raises(TypeError, match="unhashable"):
        hash(Metadata({"a": 1}))
