"""AutoDocumentParser: almost any format, with Apache Tika compiled to native code (extractous)."""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import IO, Any, BinaryIO, ClassVar

from ragloom.core.document import Document
from ragloom.core.errors import (
    DocumentParseError,
    EmptyDocumentError,
    EncryptedDocumentError,
    InvalidArgumentError,
)
from ragloom.core.metadata import Metadata
from ragloom.core.parsers.base import read_all, source_name
from ragloom.parsers.auto import _worker

__all__ = [
    "MiB",
    "ParseTimeoutError",
    "DocumentTooLargeError",
    "AutoDocumentParser",
    "ApacheTikaDocumentParser",
]

MiB = 1024 * 1024
_WORKER_SCRIPT = Path(_worker.__file__).resolve()

# Tika metadata keys (first present wins) -> ragloom metadata key.
_KEYS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("title", ("dc:title", "pdf:docinfo:title", "title")),
    ("author", ("dc:creator", "meta:author", "Author", "pdf:docinfo:creator")),
    ("subject", ("dc:subject", "pdf:docinfo:subject", "cp:subject")),
    ("keywords", ("meta:keyword", "pdf:docinfo:keywords", "Keywords")),
    ("description", ("dc:description",)),
    ("language", ("dc:language",)),
    ("creator", ("xmp:CreatorTool", "pdf:docinfo:creator_tool")),
    ("producer", ("pdf:producer", "pdf:docinfo:producer")),
    ("creation_date", ("dcterms:created", "meta:creation-date", "pdf:docinfo:created")),
    ("modification_date", ("dcterms:modified", "meta:save-date", "pdf:docinfo:modified")),
)
_INT_KEYS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("page_count", ("xmpTPg:NPages", "meta:page-count")),
    ("slide_count", ("meta:slide-count",)),
    ("word_count", ("meta:word-count",)),
)


class ParseTimeoutError(DocumentParseError):
    """Parsing took longer than the parser's ``timeout``; the work was stopped."""


class DocumentTooLargeError(DocumentParseError):
    """The input or its text exceeds the parser's ``max_bytes`` / ``max_chars``."""


class AutoDocumentParser:
    """Detects the format and extracts text and metadata: the spec's ApacheTikaDocumentParser.

    Runs Apache Tika compiled to native code by GraalVM (the ``extractous`` package) in
    this process's children, without a Tika server or a JVM: PDF, Office (including
    legacy .doc/.xls/.ppt), OpenDocument, RTF, HTML, XML, e-mail, EPUB, plain text and
    many more. As the dispatch's ``catch_all`` parser it takes every file no specific
    parser claims.

    Bounds, each failure a clear :class:`DocumentParseError` naming the file:

    - ``max_bytes`` (100 MiB): larger input raises :class:`DocumentTooLargeError` unread;
    - ``max_chars`` (10 million): longer text raises :class:`DocumentTooLargeError`;
    - ``timeout`` (60 s): extraction runs in a worker process that is killed past it
      (:class:`ParseTimeoutError`) and restarted for the next file; ``max_memory``
      (2 GiB) caps that process's address space. ``timeout=None`` runs Tika in this
      process instead: a little faster, but nothing bounds its time and memory.
    - ``workers`` (1): worker processes used at once by concurrent callers.

    Metadata: ``content_type`` (the detected media type, without parameters), ``title``,
    ``author``, ``subject``, ``keywords``, ``description``, ``language``, ``creator``,
    ``producer``, ``creation_date``, ``modification_date`` (str, dates as Tika writes them,
    ISO 8601) and ``page_count``, ``slide_count``, ``word_count`` (int) when the format
    has them; ``raw_metadata=True`` adds every Tika entry under its own name (values
    joined by ``", "``). Password-protected files raise :class:`EncryptedDocumentError`,
    files without text :class:`EmptyDocumentError`.
    """

    catch_all: ClassVar[bool] = True

    def __init__(
        self,
        *,
        timeout: float | None = 60.0,
        max_bytes: int | None = 100 * MiB,
        max_chars: int = 10_000_000,
        max_memory: int | None = 2048 * MiB,
        workers: int = 1,
        raw_metadata: bool = False,
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise InvalidArgumentError(f"timeout must be positive or None, got {timeout!r}")
        for name, value in (
            ("max_bytes", max_bytes),
            ("max_chars", max_chars),
            ("workers", workers),
        ):
            if value is not None and value <= 0:
                raise InvalidArgumentError(f"{name} must be positive, got {value!r}")
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_chars = max_chars
        self.max_memory = max_memory
        self.workers = workers
        self.raw_metadata = raw_metadata
        self._pool = _Pool(json.dumps({"max_chars": max_chars, "max_memory": max_memory}), workers)
        self._in_process: Any = None
        self._finalizer = weakref.finalize(self, self._pool.close)

    def parse(self, data: bytes | BinaryIO, *, source: str | None = None) -> Document:
        """Detect the format of ``data`` and extract its text and metadata."""
        name = source_name(data, source)
        if self.max_bytes is not None and not isinstance(data, bytes | bytearray | memoryview):
            raw = data.read(self.max_bytes + 1)
        else:
            raw = read_all(data)
        if self.max_bytes is not None and len(raw) > self.max_bytes:
            raise DocumentTooLargeError(
                f"{name}: larger than max_bytes={self.max_bytes:,}; raise the limit with "
                "AutoDocumentParser(max_bytes=...) to parse it"
            )
        if not raw.strip():
            raise EmptyDocumentError(f"{name}: empty file")
        answer = self._extract(bytes(raw), name)
        if "error" in answer:
            raise _error(name, str(answer["error"]))
        tika: dict[str, list[str]] = answer["metadata"]
        content_type = _first(tika, ("Content-Type",)).split(";")[0].strip()
        text = _clean(answer["text"])
        if answer.get("truncated") or len(text) > self.max_chars:
            raise DocumentTooLargeError(
                f"{name}: its text ({content_type}) is longer than max_chars="
                f"{self.max_chars:,}; raise the limit with AutoDocumentParser(max_chars=...)"
            )
        if not text.strip():
            hint = ", it may be scanned: OCR it first" if content_type == "application/pdf" else ""
            raise EmptyDocumentError(
                f"{name}: no text found (detected {content_type or 'an unknown type'}{hint})"
            )
        return Document(text, self._metadata(tika, content_type))

    def _extract(self, raw: bytes, name: str) -> dict[str, Any]:
        if self.timeout is None:
            if self._in_process is None:
                self._in_process = _worker.new_extractor(self.max_chars)
            try:
                return _worker.extract(self._in_process, raw, self.max_chars)
            except Exception as exc:
                return {"error": str(exc)}
        return self._pool.run(raw, name, self.timeout)

    def _metadata(self, tika: dict[str, list[str]], content_type: str) -> Metadata:
        metadata = Metadata()
        if self.raw_metadata:
            for key, values in tika.items():
                joined = ", ".join(v for v in values if v)
                if key and joined:
                    metadata[key] = joined
        if content_type:
            metadata["content_type"] = content_type
        for key, names in _KEYS:
            value = _first(tika, names)
            if value:
                metadata[key] = value
        for key, names in _INT_KEYS:
            value = _first(tika, names)
            if value.isdigit():
                metadata[key] = int(value)
        return metadata

    def close(self) -> None:
        """Stop the worker processes (new ones start if the parser is used again)."""
        self._pool.close()

    def __enter__(self) -> AutoDocumentParser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


ApacheTikaDocumentParser = AutoDocumentParser
"""The spec's name: this parser is Apache Tika (compiled to native code)."""


def _first(tika: dict[str, list[str]], names: tuple[str, ...]) -> str:
    for name in names:
        values = [v.strip() for v in tika.get(name, []) if v and v.strip()]
        if values:
            return ", ".join(dict.fromkeys(values))
    return ""


def _clean(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\x00", "").splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):  # at most one blank line in a row
            out.append(line)
    return "\n".join(out).strip("\n")


def _error(name: str, message: str) -> DocumentParseError:
    detail = message.removeprefix('ParseError("').removesuffix('")')
    detail = detail.replace("Parse error occurred : ", "")
    if "encrypted" in detail.lower() or "password" in detail.lower():
        return EncryptedDocumentError(f"{name}: the document is password-protected ({detail})")
    if "out of memory" in detail.lower():
        return DocumentParseError(f"{name}: parsing ran out of memory (max_memory): {detail}")
    return DocumentParseError(f"{name}: cannot parse: {detail}")


class _Worker:
    """One extraction process; a request at a time."""

    def __init__(self, config: str) -> None:
        self.log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by kill)
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(_WORKER_SCRIPT), config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            bufsize=0,
        )

    def run(self, data: bytes, name: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None
        assert stdout is not None
        try:
            stdin.write(len(data).to_bytes(_worker.HEADER, "big") + data)
            stdin.flush()
            size = int.from_bytes(self._read(stdout.fileno(), _worker.HEADER, deadline), "big")
            answer: dict[str, Any] = json.loads(self._read(stdout.fileno(), size, deadline))
            return answer
        except TimeoutError:
            self.kill()
            raise ParseTimeoutError(
                f"{name}: parsing took longer than {timeout:g} s and was stopped; raise the "
                "limit with AutoDocumentParser(timeout=...) if the file is sound"
            ) from None
        except (OSError, EOFError, ValueError) as exc:
            self.process.wait(timeout=5) if isinstance(exc, EOFError) else None
            why = self._why(exc)
            self.kill()
            raise DocumentParseError(f"{name}: the parser process failed: {why}") from exc

    @staticmethod
    def _read(fd: int, size: int, deadline: float) -> bytes:
        chunks: list[bytes] = []
        while size:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, min(size, 1 << 20))
            if not chunk:
                raise EOFError("the parser process exited")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _why(self, exc: BaseException) -> str:
        code = self.process.poll()
        self.log.seek(0)
        tail = self.log.read()[-500:].decode("utf-8", "replace").strip()
        if code is not None and code < 0:
            reason = f"killed by signal {-code} (a crash, or max_memory exceeded)"
        elif code is not None:
            reason = f"exited with status {code}"
        else:
            reason = str(exc)
        return reason + (f"; its last output: {tail}" if tail else "")

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self.log.close()


class _Pool:
    """At most ``size`` workers, started on demand, reused while they live."""

    def __init__(self, config: str, size: int) -> None:
        self.config = config
        self.slots = threading.BoundedSemaphore(size)
        self.idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.all: list[_Worker] = []

    def run(self, data: bytes, name: str, timeout: float) -> dict[str, Any]:
        with self.slots:
            worker = self._take()
            try:
                answer = worker.run(data, name, timeout)
            except BaseException:
                self._forget(worker)
                raise
            self.idle.put(worker)
            return answer

    def _take(self) -> _Worker:
        while True:
            try:
                worker = self.idle.get_nowait()
            except queue.Empty:
                worker = _Worker(self.config)
                with self.lock:
                    self.all.append(worker)
                return worker
            if worker.alive:
                return worker
            self._forget(worker)

    def _forget(self, worker: _Worker) -> None:
        worker.kill()
        with self.lock:
            if worker in self.all:
                self.all.remove(worker)

    def close(self) -> None:
        with self.lock:
            workers, self.all = self.all, []
        for worker in workers:
            worker.kill()
        while True:
            try:
                self.idle.get_nowait()
            except queue.Empty:
                return
