"""Saving in-memory indexes to a directory: one layout, shared by every ragloom index.

The in-memory embedding store and the BM25 index each describe their layout with a
:class:`DirectoryFormat` (a format name, a version and the kinds of data file) and get::

    manifest.json               {"format", "version", <header fields>, "files": {...}}
    <kind>-<token>.<suffix>     one data file per kind, e.g. records-<token>.jsonl

What the layout guarantees:

- Atomic replace. Data files get fresh names on every save, each is fsynced, and
  ``manifest.json`` (which names them) is written to a temporary file, fsynced and moved
  into place last with ``os.replace``: a crash or an error at any point leaves the old
  or the new save readable, never a mix. Afterwards a save deletes only the files of the
  manifest it replaced (never those of a newer save by another process) and leftovers
  of crashed saves older than an hour.
- Versioned manifest. ``load`` refuses another format's directory and any version it
  does not know, instead of guessing.
- Checksums. The manifest records each data file's SHA-256 (or CRC-32);
  :meth:`DirectoryFormat.open` verifies every file before anything is parsed, so a
  corrupt or edited directory yields nothing. Files a caller memory-maps instead are
  still checked for their recorded size and the CRC-32 of their first ``HEAD_BYTES``
  (where headers live): a truncated, grown or header-damaged file is refused in
  microseconds, without reading the file.
- Clear errors. Every defect raises the format's ragloom error (e.g.
  :class:`~ragloom.core.errors.EmbeddingStoreError`) naming the file at fault.

Records (``records-<token>.jsonl``) hold one ``{"id", "text", "metadata"}`` JSON object a
line. Metadata values keep their types: ``str``, ``int`` (any size), ``float`` (always
written with a ``.`` or an exponent) and ``bool`` are plain JSON; ``uuid.UUID`` is
``{"$uuid": "..."}`` and non-finite floats are ``{"$float": "nan"}`` (or ``"inf"``,
``"-inf"``): the kit's one metadata codec, :mod:`ragloom.core.kit.metadata_codec`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
import uuid
import zipfile
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from isal.isal_zlib import crc32

from ragloom.core.errors import RagloomError
from ragloom.core.kit.metadata_codec import (
    decode_metadata,
    decode_metadata_rows,
    encode_metadata,
)
from ragloom.core.metadata import MetadataValue
from ragloom.core.stores._columnar import Buffer, ByteSink
from ragloom.core.stores.metadata_table import MetadataTable

__all__ = [
    "HEAD_BYTES",
    "MANIFEST_NAME",
    "ByteSink",
    "DataFiles",
    "DirectoryFormat",
    "FileChecksum",
    "Records",
    "SavedDirectory",
    "decode_metadata",
    "encode_metadata",
    "write_records",
]

MANIFEST_NAME = "manifest.json"
HEAD_BYTES = 4096
"""Bytes at the start of every data file whose CRC-32 the manifest records (``head``)."""
ORPHAN_AGE = 3600.0
"""Seconds after which a data file no manifest names counts as a crashed save's leftover."""

_RECORD_BLOCK = 8192
_READ_BLOCK = 1 << 20
_CHECKSUMS = ("sha256", "crc32")
# What reading or parsing a damaged file raises (numpy, json, zipfile, a missing key).
_PARSE_ERRORS = (
    OSError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    EOFError,
    zipfile.BadZipFile,
)


class Records(NamedTuple):
    """Decoded records, column by column: ids (unchecked), texts, typed metadata."""

    ids: list[Any]
    texts: list[str | None]
    metadata: list[dict[str, MetadataValue]]


@dataclass(frozen=True, slots=True)
class SavedDirectory:
    """A saved directory whose manifest and data files passed :meth:`DirectoryFormat.open`."""

    manifest_path: Path
    manifest: Mapping[str, Any]
    files: dict[str, Path]  # kind -> data file, checksum verified unless asked not to
    version: int
    checksums: dict[str, tuple[str, object]]  # kind -> (algorithm, expected digest)
    format: DirectoryFormat

    def verify(self, kind: str, data: Buffer) -> None:
        """Raise unless ``data``, the bytes of the ``kind`` file, match its checksum."""
        checksum = self.checksum(kind)
        checksum.update(data)
        checksum.check()

    def checksum(self, kind: str) -> FileChecksum:
        """A running checksum to feed the bytes of the ``kind`` file to, then ``check()``."""
        return FileChecksum(self, kind)


class FileChecksum:
    """The checksum of one data file, computed as it is read (:meth:`SavedDirectory.checksum`)."""

    def __init__(self, saved: SavedDirectory, kind: str) -> None:
        algorithm, self._expected = saved.checksums[kind]
        self._checksum = _Checksum(algorithm)
        self._path = saved.files[kind]
        self._format = saved.format

    def update(self, data: Buffer) -> None:
        self._checksum.update(data)

    def check(self) -> None:
        """Raise the format's checksum mismatch error unless all bytes fed match."""
        self._format.compare(self._path, self._checksum.hexdigest(), self._expected)


class DirectoryFormat:
    """One saved-directory format: its name and version, its data files, its error.

    ``files`` maps each kind of data file to its suffix (``{"vectors": ".npy"}``);
    ``error`` is the ragloom error every defect raises, and ``noun`` names what is saved
    in messages ("BM25 index"). ``older`` maps each older version still readable to its
    ``files``. ``checksum`` is what new saves record of each file: ``"sha256"``, or
    ``"crc32"`` (zlib's, three times faster; enough to catch corruption, which is what
    the checksum is for: whoever can edit a file can edit the manifest too). Both are
    verified when found. Kinds in ``optional`` may be missing from a manifest (and then
    from :attr:`SavedDirectory.files`).
    """

    def __init__(
        self,
        name: str,
        version: int,
        files: Mapping[str, str],
        *,
        error: type[RagloomError],
        noun: str,
        older: Mapping[int, Mapping[str, str]] | None = None,
        checksum: str = "sha256",
        optional: Collection[str] = (),
    ) -> None:
        if checksum not in _CHECKSUMS:
            raise ValueError(f"unknown checksum {checksum!r}")
        self.name = name
        self.version = version
        self.suffixes = dict(files)
        self.error = error
        self.noun = noun
        self.checksum = checksum
        self.optional = frozenset(optional)
        self._versions = {**(older or {}), version: self.suffixes}
        self._data_file = {
            (v, kind): re.compile(_data_file_pattern(kind, suffix))
            for v, files_of_version in self._versions.items()
            for kind, suffix in files_of_version.items()
        }
        temporary = rf"{re.escape(MANIFEST_NAME)}\.[0-9a-f]{{32}}\.tmp"
        patterns = {pattern.pattern for pattern in self._data_file.values()}
        self._ours = re.compile("|".join([*sorted(patterns), temporary]))

    def check(self, document: object, source: object) -> Mapping[str, Any]:
        """``document`` if it names this format and version, else the error naming ``source``.

        ``source`` is the manifest's path, or a description such as ``"JSON input"``.
        """
        if not isinstance(document, Mapping) or document.get("format") != self.name:
            raise self.error(f"{source}: not a ragloom {self.noun}")
        version = document.get("version")
        if type(version) is not int or version not in self._versions:
            readable = " and ".join(map(str, sorted(self._versions)))
            raise self.error(
                f"{source}: format version {version!r} is not supported (this ragloom reads "
                f"version {readable})"
            )
        return document

    # ------------------------------------------------------------------ saving

    def save(
        self, path: str | os.PathLike[str], write: Callable[[DataFiles], Mapping[str, Any]]
    ) -> None:
        """Save to the directory ``path`` atomically (see the module docstring).

        ``write`` writes every data file with :meth:`DataFiles.write` and returns the
        manifest's header fields (say ``{"count": 3}``). ``path`` is created if missing;
        an existing directory must be empty or hold a save of this format.
        """
        directory = Path(path)
        if directory.exists() and not directory.is_dir():
            raise self.error(f"{directory}: exists and is not a directory")
        manifest_path = directory / MANIFEST_NAME
        if (
            directory.is_dir()
            and not manifest_path.exists()
            # another writer's first save in progress leaves only files of ours
            and any(not self._ours.fullmatch(p.name) for p in directory.iterdir())
        ):
            raise self.error(
                f"{directory}: not empty and not a saved {self.noun}; refusing to write"
            )
        try:
            directory.mkdir(parents=True, exist_ok=True)
            files = DataFiles(directory, self.suffixes, self.checksum)
            committed = False
            try:
                header = write(files)
                manifest = {"format": self.name, "version": self.version, **header}
                manifest["files"] = files.entries
                text = json.dumps(manifest, indent=2).encode()
                temporary = f"{MANIFEST_NAME}.{files.token}.tmp"
                files.create(temporary, lambda f: f.write(text))
                superseded = self._named_by(manifest_path)
                os.replace(directory / temporary, manifest_path)
                committed = True
                _fsync_directory(directory)
            except BaseException:
                if not committed:
                    files.discard()
                raise
        except OSError as exc:
            at = exc.filename or directory
            raise self.error(f"{at}: cannot save {self.noun} ({exc.strerror or exc})") from exc
        self._clean(directory, superseded, {str(entry["name"]) for entry in files.entries.values()})

    def _named_by(self, manifest_path: Path) -> set[str]:
        """The data files the manifest at ``manifest_path`` names (none if unreadable)."""
        try:
            entries = json.loads(manifest_path.read_bytes()).get("files", {})
            return {
                entry["name"]
                for entry in entries.values()
                if isinstance(entry.get("name"), str) and self._ours.fullmatch(entry["name"])
            }
        except (OSError, ValueError, AttributeError, TypeError, KeyError):
            return set()

    def _clean(self, directory: Path, superseded: set[str], current: set[str]) -> None:
        """Delete what this save superseded, and leftovers of crashed saves.

        Writer-safe: another process saving the same directory at the same time may have
        committed a newer manifest since; its files are never superseded by this save,
        and files not named by any manifest are removed only once they are an hour old
        (a save in progress writes its files within seconds of naming them).
        """
        for name in superseded - current:
            with contextlib.suppress(OSError):
                (directory / name).unlink()
        live = self._named_by(directory / MANIFEST_NAME) | current
        cutoff = time.time() - ORPHAN_AGE
        with contextlib.suppress(OSError):
            for stale in directory.iterdir():
                if stale.name in live or not self._ours.fullmatch(stale.name):
                    continue
                with contextlib.suppress(OSError):
                    if stale.stat().st_mtime < cutoff:
                        stale.unlink()

    # ------------------------------------------------------------------ loading

    def open(
        self, path: str | os.PathLike[str], *, unverified: Collection[str] = ()
    ) -> SavedDirectory:
        """Read and check the manifest in ``path`` and verify every data file's checksum,
        but those of the kinds in ``unverified``: their caller verifies them while reading
        them (:meth:`SavedDirectory.verify`), or, for memory-mapping, not at all."""
        directory = Path(path)
        manifest_path = directory / MANIFEST_NAME
        try:
            manifest = json.loads(manifest_path.read_bytes())
        except (OSError, ValueError) as exc:
            raise self.error(f"{manifest_path}: not a readable saved {self.noun} ({exc})") from exc
        self.check(manifest, manifest_path)
        version = manifest["version"]
        entries = manifest.get("files")
        files: dict[str, Path] = {}
        checksums: dict[str, tuple[str, object]] = {}
        for kind in self._versions[version]:
            entry = entries.get(kind) if isinstance(entries, Mapping) else None
            if entry is None and kind in self.optional:
                continue
            # Only our own plain names: never a path outside the directory.
            if not (
                isinstance(entry, Mapping)
                and isinstance(name := entry.get("name"), str)
                and self._data_file[version, kind].fullmatch(name)
            ):
                raise self.error(f"{manifest_path}: names no valid {kind} file")
            files[kind] = directory / name
            algorithm = next((a for a in _CHECKSUMS if a in entry), "sha256")
            checksums[kind] = (algorithm, entry.get(algorithm))
            if kind not in unverified:
                self._verify(files[kind], *checksums[kind])
            else:
                self._check_size_and_head(files[kind], entry)
        return SavedDirectory(manifest_path, manifest, files, version, checksums, self)

    def _check_size_and_head(self, path: Path, entry: Mapping[str, Any]) -> None:
        """Raise unless ``path`` has the size and head checksum ``entry`` records (saves
        from before these were recorded are not checked): one ``stat`` and one small read."""
        size, head = entry.get("size"), entry.get("head")
        try:
            with open(path, "rb") as file:
                actual = os.fstat(file.fileno()).st_size
                data = file.read(HEAD_BYTES) if head is not None else b""
        except OSError as exc:
            raise self.error(
                f"{path}: corrupt saved {self.noun}, a file is missing or unreadable ({exc})"
            ) from exc
        if size is not None and size != actual:
            raise self.error(
                f"{path}: corrupt saved {self.noun}, {actual} bytes where the manifest "
                f"records {size!r}"
            )
        if head is not None:
            self.compare(path, f"{crc32(data):08x}", head)

    def _verify(self, path: Path, algorithm: str, expected: object) -> None:
        """Raise unless ``path`` can be read and its checksum is ``expected``."""
        try:
            with open(path, "rb") as file:
                if algorithm == "sha256":
                    digest = hashlib.file_digest(file, "sha256").hexdigest()
                else:
                    checksum = _Checksum(algorithm)
                    while block := file.read(_READ_BLOCK):
                        checksum.update(block)
                    digest = checksum.hexdigest()
        except OSError as exc:
            raise self.error(
                f"{path}: corrupt saved {self.noun}, a file is missing or unreadable ({exc})"
            ) from exc
        self.compare(path, digest, expected)

    def compare(self, path: Path, digest: str, expected: object) -> None:
        """Raise the checksum mismatch error for ``path`` unless ``digest == expected``."""
        if digest != expected:
            raise self.error(f"{path}: checksum mismatch, the file is corrupt or was edited")

    @contextlib.contextmanager
    def reading(self, source: object) -> Iterator[None]:
        """Turn a failure to read or parse ``source`` into the format's error naming it."""
        try:
            yield
        except self.error:
            raise
        except _PARSE_ERRORS as exc:
            raise self.error(f"{source}: corrupt saved {self.noun} ({exc!r})") from exc

    def read_records(self, path: Path) -> Records:
        """The records of a ``.jsonl`` data file written by :func:`write_records`."""
        with self.reading(path):
            lines = path.read_bytes().rstrip(b"\n")
            # JSON escapes newlines inside strings, so every b"\n" ends a record: parsing
            # the file as one array costs one json call instead of one per line.
            records = json.loads(b"[" + lines.replace(b"\n", b",") + b"]")
        return self.decode_records(records, path)

    def decode_records(self, records: object, source: object) -> Records:
        """Decode a list of ``{"id", "text", "metadata"}`` objects (other keys are ignored).

        Texts must be strings or null; ids are returned unchecked for the caller's rules.
        """
        try:
            if not isinstance(records, list):
                raise TypeError(f"expected a list of records, got {type(records).__name__}")
            ids = [record["id"] for record in records]
            texts = [record["text"] for record in records]
            metadata = decode_metadata_rows([record["metadata"] for record in records])
        except (TypeError, KeyError, ValueError) as exc:
            raise self.error(f"{source}: corrupt {self.noun} record ({exc!r})") from exc
        if not set(map(type, texts)) <= {str, type(None)}:
            position = next(i for i, text in enumerate(texts) if not isinstance(text, str | None))
            raise self.error(f"{source}: text of {ids[position]!r} is not a string")
        return Records(ids, texts, metadata)


class DataFiles:
    """The data files of one save in progress, each under a fresh name.

    ``entries`` is the manifest's ``files`` object: kind -> ``{"name", <checksum>,
    "size", "head"}`` (``head``: the CRC-32 of the first :data:`HEAD_BYTES`).
    """

    def __init__(
        self, directory: Path, suffixes: Mapping[str, str], checksum: str = "sha256"
    ) -> None:
        self.directory = directory
        self.token = uuid.uuid4().hex
        self.entries: dict[str, dict[str, str | int]] = {}
        self._suffixes = suffixes
        self._checksum = checksum
        self._created: list[Path] = []

    def write(self, kind: str, fill: Callable[[ByteSink], object]) -> None:
        """Create the ``kind`` data file and fill it with ``fill(sink)``, hashing the bytes."""
        name = f"{kind}-{self.token}{self._suffixes[kind]}"
        sink = self._fill(name, fill)
        self.entries[kind] = {
            "name": name,
            self._checksum: sink.hexdigest(),
            "size": sink.size,
            "head": f"{sink.head:08x}",
        }

    def create(self, name: str, fill: Callable[[ByteSink], object]) -> str:
        """Create ``name`` exclusively, fill it, fsync it and return its checksum.

        The file is deleted again by :meth:`discard` if the save fails.
        """
        return self._fill(name, fill).hexdigest()

    def _fill(self, name: str, fill: Callable[[ByteSink], object]) -> _HashingSink:
        path = self.directory / name
        self._created.append(path)
        with open(path, "xb") as raw:
            sink = _HashingSink(raw, self._checksum)
            fill(sink)
            raw.flush()
            os.fsync(raw.fileno())
        return sink

    def discard(self) -> None:
        """Delete every file this save created (the save failed before its manifest)."""
        for path in self._created:
            with contextlib.suppress(OSError):
                path.unlink()


class _Checksum:
    """A running SHA-256 or CRC-32 (zlib's CRC-32, as 8 hex digits; computed by ISA-L's
    ``crc32``, the same function at about 4x zlib's speed: 10 GB/s here against 2.5)."""

    def __init__(self, algorithm: str) -> None:
        self._sha = hashlib.sha256() if algorithm == "sha256" else None
        self._crc = 0

    def update(self, data: Buffer) -> None:
        if self._sha is not None:
            self._sha.update(data)
        else:
            self._crc = crc32(data, self._crc)

    def hexdigest(self) -> str:
        return self._sha.hexdigest() if self._sha is not None else f"{self._crc:08x}"


class _HashingSink:
    """A write-only binary file wrapper that checksums what passes through it, counts it
    and keeps the CRC-32 of its first :data:`HEAD_BYTES` (``head``)."""

    def __init__(self, raw: ByteSink, algorithm: str) -> None:
        self._raw = raw
        self._checksum = _Checksum(algorithm)
        self.size = 0
        self.head = 0

    def write(self, data: Buffer, /) -> int:
        self._checksum.update(data)
        if self.size < HEAD_BYTES:
            self.head = crc32(memoryview(data).cast("B")[: HEAD_BYTES - self.size], self.head)
        self.size += memoryview(data).nbytes
        return self._raw.write(data)

    def hexdigest(self) -> str:
        return self._checksum.hexdigest()


def _data_file_pattern(kind: str, suffix: str) -> str:
    return rf"{re.escape(kind)}-[0-9a-f]{{32}}{re.escape(suffix)}"


def _fsync_directory(directory: Path) -> None:
    """Persist a rename in ``directory`` (a no-op where directories cannot be opened)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


# ---------------------------------------------------------------------- records


def write_records(
    file: ByteSink, ids: Sequence[str], texts: Sequence[str | None], metadata: MetadataTable
) -> None:
    """Write rows ``0 .. len(ids) - 1`` as JSON lines, a block of rows at a time."""
    encode = _RECORD_JSON.encode
    count = len(ids)
    for start in range(0, count, _RECORD_BLOCK):
        stop = min(start + _RECORD_BLOCK, count)
        lines = []
        for row, values in zip(
            range(start, stop), metadata.take(np.arange(start, stop)), strict=True
        ):
            record: dict[str, Any] = {"id": ids[row], "text": texts[row], "metadata": values}
            try:  # UUIDs are tagged by the encoder; a NaN or infinity makes it raise
                lines.append(encode(record))
            except ValueError:
                record["metadata"] = encode_metadata(values)
                lines.append(encode(record))
        lines.append("")
        file.write("\n".join(lines).encode())


def _tag_uuid(value: object) -> dict[str, str]:
    """The JSON encoder's fallback: a UUID becomes ``{"$uuid": "..."}``."""
    if isinstance(value, uuid.UUID):
        return {"$uuid": str(value)}
    raise TypeError(f"{type(value).__name__} is not a metadata value")


_RECORD_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=_tag_uuid)
