"""ragloom.core.stores.persistence: atomic replace, checksums, versions, typed metadata records."""

from __future__ import annotations

import json
import math
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from ragloom.core.errors import EmbeddingStoreError, InvalidMetadataError
from ragloom.core.stores import persistence
from ragloom.core.stores.metadata_table import MetadataTable
from ragloom.core.stores.persistence import (
    MANIFEST_NAME,
    ByteSink,
    DataFiles,
    DirectoryFormat,
    decode_metadata,
    encode_metadata,
    write_records,
)

FORMAT = DirectoryFormat(
    "ragloom.test-format",
    3,
    {"blob": ".bin", "records": ".jsonl"},
    error=EmbeddingStoreError,
    noun="test index",
)


def save(directory: Path, blob: bytes, fail_midway: bool = False) -> None:
    """Save ``blob`` and two records; ``fail_midway`` raises inside the second data file."""

    def write_records_file(sink: ByteSink) -> None:
        sink.write(b'{"id": "half')
        if fail_midway:
            raise RuntimeError("killed mid-write")

    def write(files: DataFiles) -> dict[str, Any]:
        files.write("blob", lambda sink: sink.write(blob))
        files.write("records", write_records_file)
        return {"count": len(blob)}

    FORMAT.save(directory, write)


def manifest(directory: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((directory / MANIFEST_NAME).read_text())
    return data


def test_save_writes_a_manifest_with_version_header_and_checksums(tmp_path: Path) -> None:
    save(tmp_path, b"first")
    saved = FORMAT.open(tmp_path)
    assert list(saved.manifest) == ["format", "version", "count", "files"]
    assert (saved.manifest["format"], saved.manifest["version"]) == ("ragloom.test-format", 3)
    assert saved.files["blob"].read_bytes() == b"first"
    assert set(saved.files) == {"blob", "records"}


def test_a_write_failing_midway_keeps_the_old_save(tmp_path: Path) -> None:
    save(tmp_path, b"old")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(RuntimeError, match="mid-write"):
        save(tmp_path, b"new", fail_midway=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # half files removed
    assert FORMAT.open(tmp_path).files["blob"].read_bytes() == b"old"


def test_a_failed_manifest_swap_keeps_the_old_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save(tmp_path, b"old")
    before = sorted(p.name for p in tmp_path.iterdir())

    def crash(*args: object) -> None:
        raise OSError("simulated power loss")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(EmbeddingStoreError, match="power loss"):
        save(tmp_path, b"new")
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert FORMAT.open(tmp_path).files["blob"].read_bytes() == b"old"


def test_saving_again_removes_only_the_old_saves_files(tmp_path: Path) -> None:
    save(tmp_path, b"old")
    (tmp_path / "notes.txt").write_text("mine")
    save(tmp_path, b"new")
    names = {p.name for p in tmp_path.iterdir()}
    assert names == {
        MANIFEST_NAME,
        "notes.txt",
        *(e["name"] for e in manifest(tmp_path)["files"].values()),
    }
    assert FORMAT.open(tmp_path).files["blob"].read_bytes() == b"new"


def test_save_refuses_a_foreign_directory_and_a_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(EmbeddingStoreError, match="not a saved test index; refusing"):
        save(tmp_path, b"x")
    with pytest.raises(EmbeddingStoreError, match="not a directory"):
        save(tmp_path / "notes.txt", b"x")


def test_a_checksum_mismatch_names_the_file(tmp_path: Path) -> None:
    save(tmp_path, b"payload")
    blob = tmp_path / manifest(tmp_path)["files"]["blob"]["name"]
    blob.write_bytes(b"pAyload")
    with pytest.raises(EmbeddingStoreError, match="checksum mismatch") as error:
        FORMAT.open(tmp_path)
    assert str(blob) in str(error.value)


def test_a_missing_data_file_names_the_file(tmp_path: Path) -> None:
    save(tmp_path, b"payload")
    records = tmp_path / manifest(tmp_path)["files"]["records"]["name"]
    records.unlink()
    with pytest.raises(EmbeddingStoreError, match="missing or unreadable") as error:
        FORMAT.open(tmp_path)
    assert str(records) in str(error.value)


def edit_manifest(directory: Path, **changes: Any) -> None:
    data = manifest(directory)
    data.update(changes)
    (directory / MANIFEST_NAME).write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"version": 4}, "format version 4 is not supported .*reads version 3"),
        ({"version": "3"}, "format version '3' is not supported"),
        ({"format": "ragloom.other"}, "not a ragloom test index"),
        ({"files": {"blob": {"name": "../blob.bin"}}}, "no valid blob file"),
        ({"files": []}, "no valid blob file"),
    ],
)
def test_a_bad_manifest_raises_naming_it(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    save(tmp_path, b"payload")
    edit_manifest(tmp_path, **changes)
    with pytest.raises(EmbeddingStoreError, match=message) as error:
        FORMAT.open(tmp_path)
    assert str(tmp_path / MANIFEST_NAME) in str(error.value)


def test_an_unreadable_manifest_raises_naming_it(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingStoreError, match="not a readable saved test index"):
        FORMAT.open(tmp_path / "missing")
    save(tmp_path, b"payload")
    (tmp_path / MANIFEST_NAME).write_text("{truncated")
    with pytest.raises(EmbeddingStoreError, match="not a readable") as error:
        FORMAT.open(tmp_path)
    assert str(tmp_path / MANIFEST_NAME) in str(error.value)


def test_check_refuses_unknown_versions_of_in_memory_documents() -> None:
    assert FORMAT.check({"format": "ragloom.test-format", "version": 3}, "JSON input")
    with pytest.raises(EmbeddingStoreError, match="JSON input: format version 2"):
        FORMAT.check({"format": "ragloom.test-format", "version": 2}, "JSON input")
    with pytest.raises(EmbeddingStoreError, match="JSON input: not a ragloom test index"):
        FORMAT.check([], "JSON input")


# ---------------------------------------------------------------------- metadata and records

EVERY_TYPE: dict[str, Any] = {
    "str": "text ✓",
    "tag-like str": '{"$uuid": "00000000-0000-0000-0000-000000000001"}',
    "$uuid": "a str under a tag-like key",
    "$float": "nan",
    "int": -7,
    "big int": 2**70,
    "huge negative int": -(3**100),
    "float": 1.0,
    "negative zero": -0.0,
    "tiny": 5e-324,
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
    "true": True,
    "false": False,
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
}


def assert_same_typed(left: dict[str, Any], right: dict[str, Any]) -> None:
    assert left.keys() == right.keys()
    for key, value in left.items():
        assert type(right[key]) is type(value), key
        if isinstance(value, float):
            assert repr(right[key]) == repr(value), key  # nan, -0.0
        else:
            assert right[key] == value, key


def test_metadata_of_every_type_round_trips_through_json() -> None:
    text = json.dumps(encode_metadata(EVERY_TYPE), allow_nan=False)
    assert '"float": 1.0' in text  # a float stays a float
    assert_same_typed(EVERY_TYPE, decode_metadata(json.loads(text)))


@pytest.mark.parametrize(
    "encoded",
    [
        None,
        [],
        "str",
        {"k": None},
        {"k": [1]},
        {"k": {"$uuid": "not-a-uuid"}},
        {"k": {"$uuid": 5}},
        {"k": {"$float": "1.5"}},
        {"k": {"$other": "x"}},
        {"k": {"$uuid": "12345678-1234-5678-1234-567812345678", "x": 1}},
        {"": 1},
    ],
)
def test_decode_metadata_refuses_what_encode_never_writes(encoded: object) -> None:
    with pytest.raises(ValueError, match="metadata"):
        decode_metadata(encoded)


def test_decode_metadata_raises_invalid_metadata_for_unsupported_values() -> None:
    with pytest.raises(InvalidMetadataError, match="'k'"):
        decode_metadata({"k": [1]})


def test_records_round_trip_with_every_type_and_line_separators(tmp_path: Path) -> None:
    rows = [EVERY_TYPE, {}, {"int": 1, "str": "x"}, {"uuid": uuid.UUID(int=1)}]
    texts = ["one\u2028two\x85three\r\n", None, "", "last"]  # str.splitlines would cut these
    ids = ["a", "b", "c", "d"]
    table = MetadataTable()
    table.append(rows)
    path = tmp_path / "records.jsonl"
    with open(path, "wb") as file:
        write_records(file, ids, texts, table)
    assert len(path.read_bytes().splitlines()) == 4
    records = FORMAT.read_records(path)
    assert (records.ids, records.texts) == (ids, texts)
    for expected, decoded in zip(rows, records.metadata, strict=True):
        assert_same_typed(expected, decoded)


def test_read_records_of_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_bytes(b"")
    assert FORMAT.read_records(path) == ([], [], [])


@pytest.mark.parametrize(
    "content",
    [
        b'{"id": "a", "text": "x", "metadata": {}}\n{"id": "b"\n',
        b'{"id": "a", "text": "x"}\n',
        b'{"id": "a", "text": 5, "metadata": {}}\n',
        b'{"id": "a", "text": "x", "metadata": {"k": null}}\n',
        b"[1, 2]\n",
        b"\xff\n",
    ],
)
def test_corrupt_records_raise_naming_the_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "records.jsonl"
    path.write_bytes(content)
    with pytest.raises(EmbeddingStoreError) as error:
        FORMAT.read_records(path)
    assert str(path) in str(error.value)


def test_a_slower_writer_never_deletes_a_newer_saves_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writer A commits, writer B commits a newer save, then A cleans up: B's save loads."""
    save(tmp_path, b"first")
    real_fsync = persistence._fsync_directory
    calls: list[Path] = []

    def interleave(directory: Path) -> None:
        real_fsync(directory)
        calls.append(directory)
        if len(calls) == 1:  # A has committed and not yet cleaned up: B saves now
            save(tmp_path, b"newer")

    monkeypatch.setattr(persistence, "_fsync_directory", interleave)
    save(tmp_path, b"slower")
    assert FORMAT.open(tmp_path).files["blob"].read_bytes() == b"newer"


def test_orphans_are_removed_only_when_old(tmp_path: Path) -> None:
    save(tmp_path, b"x")
    young = tmp_path / f"blob-{uuid.uuid4().hex}.bin"
    old = tmp_path / f"blob-{uuid.uuid4().hex}.bin"
    young.write_bytes(b"a save in progress")
    old.write_bytes(b"a crashed save")
    os.utime(old, (0, 0))
    save(tmp_path, b"y")
    assert young.exists()
    assert not old.exists()


def test_an_os_error_while_saving_is_the_formats_error_naming_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(EmbeddingStoreError, match=r"cannot save test index"):
        save(blocker / "sub", b"x")
