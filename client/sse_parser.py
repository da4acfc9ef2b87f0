"""Reading server-sent events, as the gateway's streamed invoke sends them (gateway/http/sse.py).

The subset of the SSE format a client needs, from the WHATWG definition: `event:` names the
event, `data:` lines are joined with newlines, a blank line ends the event, lines starting with
`:` are comments, `id:` and `retry:` are ignored (a call is never resumed). About forty lines
do not justify a dependency.
"""

from __future__ import annotations

from dataclasses import dataclass

EVENT_STREAM = "text/event-stream"


@dataclass(frozen=True, slots=True)
class Event:
    name: str
    data: str


class EventParser:
    """Turns the lines of an event stream (without their line endings) into events."""

    def __init__(self) -> None:
        self._name = ""
        self._data: list[str] = []

    def feed(self, line: str) -> Event | None:
        """The event `line` completes, if it is the blank line ending one."""
        if not line:
            event = Event(self._name or "message", "\n".join(self._data)) if self._data else None
            self._name, self._data = "", []
            return event
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self._name = value
        elif field == "data":
            self._data.append(value)
        return None
