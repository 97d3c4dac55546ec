"""Server-sent events: the framing of a streamed chat completion (internal).

Lines are fed one at a time (without their line ending); a blank line completes an
event. ``data:`` lines of one event are joined with ``\\n``; ``event:`` names it;
comments (``:...``), ``id:`` and ``retry:`` are ignored. Some servers omit the blank line
before closing the stream, so :meth:`SseDecoder.end` completes a pending event.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One event: its ``data`` and its ``event`` name (``"message"`` when none was sent)."""

    data: str
    event: str = "message"


class SseDecoder:
    """Turns lines into :class:`ServerSentEvent` s."""

    __slots__ = ("_data", "_event")

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = ""

    def feed(self, line: str) -> ServerSentEvent | None:
        """The event ``line`` completes, if any."""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None

    def end(self) -> ServerSentEvent | None:
        """The event pending when the stream ended without a final blank line."""
        return self._dispatch()

    def _dispatch(self) -> ServerSentEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = ServerSentEvent("\n".join(self._data), self._event or "message")
        self._data = []
        self._event = ""
        return event
