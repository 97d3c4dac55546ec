"""The extraction worker process of AutoDocumentParser (run as a script, stdlib + extractous).

Protocol on stdin/stdout, one request at a time: the parent writes an 8-byte big-endian
length and the document's bytes; the worker answers an 8-byte length and a UTF-8 JSON
object, ``{"text": ..., "metadata": {...}}`` or ``{"error": ...}``. EOF on stdin ends it.
Its first argument is the JSON configuration: ``max_chars`` and ``max_memory`` (bytes,
applied as the address-space limit of this process, or null).
"""

from __future__ import annotations

import json
import sys
from typing import Any

HEADER = 8
CHUNK = 1 << 16


def extract(extractor: Any, data: bytes, max_chars: int) -> dict[str, Any]:
    """Text (read as UTF-8) and metadata of ``data``; ``truncated`` past ``max_chars``.

    The streaming API is used because its UTF-8 output keeps characters outside the
    Basic Multilingual Plane (emoji), which the string API mangles; its errors say less,
    so on failure the string API is asked for the reason.
    """
    try:
        return _stream(extractor, data, max_chars)
    except Exception:
        text, metadata = extractor.extract_bytes_to_string(bytearray(data))  # raises the reason
        return {
            "text": text[: max_chars + 1],
            "truncated": len(text) > max_chars,
            "metadata": {str(k): [str(v) for v in vs] for k, vs in dict(metadata).items()},
        }


def _stream(extractor: Any, data: bytes, max_chars: int) -> dict[str, Any]:
    reader, metadata = extractor.extract_bytes(bytearray(data))
    limit = max_chars * 4 + 4  # UTF-8 bytes that surely hold more than max_chars characters
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = reader.read(CHUNK)
        if not chunk:
            break
        chunks.append(bytes(chunk))
        size += len(chunk)
    return {
        "text": b"".join(chunks)[:limit].decode("utf-8", "replace"),
        "truncated": size > limit,
        "metadata": {str(k): [str(v) for v in vs] for k, vs in dict(metadata).items()},
    }


def new_extractor(max_chars: int) -> Any:
    """An extractor writing UTF-8, whose string API stops past ``max_chars``."""
    import extractous  # type: ignore[import-untyped]

    extractor = extractous.Extractor().set_encoding(extractous.CharSet.UTF_8)
    return extractor.set_extract_string_max_length(max_chars + 1)


def main() -> None:
    config = json.loads(sys.argv[1])
    if config.get("max_memory"):
        import resource

        limit = int(config["max_memory"])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    extractor = new_extractor(int(config["max_chars"]))
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    while True:
        header = source.read(HEADER)
        if len(header) < HEADER:
            return
        data = source.read(int.from_bytes(header, "big"))
        try:
            answer = extract(extractor, data, int(config["max_chars"]))
        except MemoryError:
            answer = {"error": "out of memory (max_memory reached)"}
        except Exception as exc:
            answer = {"error": str(exc)}
        payload = json.dumps(answer, ensure_ascii=False).encode("utf-8")
        sink.write(len(payload).to_bytes(HEADER, "big") + payload)
        sink.flush()


if __name__ == "__main__":
    main()
