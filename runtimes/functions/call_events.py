"""Events of a running call that its caller asked to hear about: records the function logs with
`ctx.logger` and the progress it reports with `ctx.report_progress`.

The caller's wish travels with the call (a `Listener` on `Call.events`: the lowest log level it
wants, whether it wants progress, and where the events go). A call that asked for nothing has no
listener and its context no channel: nothing is built, checked or sent for it.

In the pod, an `EventChannel` turns what the function does into `LogEvent` and `ProgressEvent`
values and hands them to the transport on the event loop's thread (sync functions run in worker
threads). It bounds what one call can send, so that a function logging in a tight loop cannot
flood its caller: at most `MAX_LOG_EVENTS` records (the last of them a warning saying that the
rest go to the pod's log only), each message cut to `MAX_MESSAGE_CHARS` characters and its
extra fields to `MAX_EXTRA_BYTES`; at most `MAX_PROGRESS_EVENTS` progress reports, after which
only the latest is kept and sent when the function returns (so the caller still sees where it
ended). Records still reach the pod's own log as before, whatever the caller asked for.

No protobuf here: this module is part of the function SDK; `toolmesh/protocol/wire.py` converts.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import logging
import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

#: Most log records one call sends to its caller.
MAX_LOG_EVENTS = 1000
#: Most progress reports one call sends as they come (then only the last one, at the end).
MAX_PROGRESS_EVENTS = 1000
#: Longest message of a record sent to the caller, in characters.
MAX_MESSAGE_CHARS = 4000
#: Largest `extra` of a record sent to the caller, as JSON bytes; larger ones are replaced by a note.
MAX_EXTRA_BYTES = 4000


@dataclass(frozen=True, slots=True)
class LogEvent:
    """A record the function logged with `ctx.logger`."""

    #: The Python logging level (logging.INFO...).
    level: int
    message: str
    #: The function's qualified name.
    logger: str
    #: The record's `extra` fields as a JSON object (UTF-8); empty when none.
    extra: bytes = b""

    def data(self) -> dict[str, Any]:
        """The message and the extra fields as one JSON object."""
        fields: dict[str, Any] = json.loads(self.extra) if self.extra else {}
        return {"message": self.message, **fields}


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """A progress report the function made with `ctx.report_progress`."""

    progress: float
    total: float | None = None
    message: str | None = None


CallEvent = LogEvent | ProgressEvent


def _drop(event: CallEvent) -> None:
    pass


@dataclass(frozen=True, slots=True)
class Listener:
    """What a caller wants to hear while its call runs, and where it goes."""

    #: Records at or above this Python logging level are sent; 0 for none.
    log_level: int = 0
    progress: bool = False
    #: Receives each event, on the event loop's thread, in the order they happened.
    deliver: Callable[[CallEvent], None] = _drop

    @property
    def wants_anything(self) -> bool:
        return self.log_level > 0 or self.progress


class Interleaving:
    """For a transport that streams: a listener whose events go out between the items of the
    call's stream, each before whatever the function produced after it (`merge`)."""

    def __init__(self, log_level: int, progress: bool) -> None:
        self._events: collections.deque[CallEvent] = collections.deque()
        self._woken = asyncio.Event()
        self.listener = Listener(log_level, progress, self._deliver)

    def _deliver(self, event: CallEvent) -> None:
        self._events.append(event)
        self._woken.set()

    async def merge(self, stream: AsyncIterator[T]) -> AsyncGenerator[T | CallEvent, None]:
        """The stream's items and the events. The stream is still pulled one item at a time, so
        a slow reader still pauses the function."""
        events, woken = self._events, self._woken
        pending = asyncio.ensure_future(anext(stream))
        try:
            while True:
                while events:
                    yield events.popleft()
                if not pending.done():
                    woken.clear()
                    waking = asyncio.ensure_future(woken.wait())
                    await asyncio.wait({pending, waking}, return_when=asyncio.FIRST_COMPLETED)
                    waking.cancel()
                    continue
                try:
                    item = pending.result()
                except StopAsyncIteration:
                    return
                while events:
                    yield events.popleft()
                yield item
                pending = asyncio.ensure_future(anext(stream))
        finally:
            if not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await pending
            if isinstance(stream, AsyncGenerator):
                await stream.aclose()


class EventChannel:
    """One call's events on their way to the caller: bounded, and handed to the loop's thread."""

    __slots__ = (
        "_closed",
        "_deliver",
        "_held",
        "_logged",
        "_loop",
        "_reported",
        "_thread",
        "function",
        "log_level",
        "progress",
    )

    def __init__(self, listener: Listener, function: str, loop: asyncio.AbstractEventLoop) -> None:
        self.function = function
        #: No record is below this: a listener that wants none gets a level nothing reaches.
        self.log_level = listener.log_level if listener.log_level > 0 else logging.CRITICAL * 100
        self.progress = listener.progress
        self._deliver = listener.deliver
        self._loop = loop
        self._thread = threading.get_ident()
        # itertools.count's next() is atomic under the GIL: threads of one call may log at once.
        self._logged = itertools.count(1)
        self._reported = itertools.count(1)
        self._held: ProgressEvent | None = None
        self._closed = False

    def log(
        self, level: int, msg: object, args: tuple[object, ...], extra: Mapping[str, object] | None, exc: Any
    ) -> None:
        """Send a `ctx.logger` record (the caller checked `level` against `log_level`)."""
        count = next(self._logged)
        if count > MAX_LOG_EVENTS or self._closed:
            return
        if count == MAX_LOG_EVENTS:
            note = (
                f"{self.function} reached the limit of {MAX_LOG_EVENTS} log records sent per call; "
                "its later records go to the pod's log only"
            )
            self._send(LogEvent(logging.WARNING, note, self.function))
            return
        self._send(LogEvent(level, _message(msg, args), self.function, _extra(extra, exc)))

    def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        if not self.progress or self._closed:
            return
        event = ProgressEvent(float(progress), None if total is None else float(total), message)
        if next(self._reported) > MAX_PROGRESS_EVENTS:
            self._held = event
            return
        self._send(event)

    def close(self) -> None:
        """The function returned: send the last progress report held back, then nothing more (a
        sync function's thread that outlives its call must not talk after the result)."""
        held, self._held = self._held, None
        if held is not None:
            self._send(held)
        self._closed = True

    def _send(self, event: CallEvent) -> None:
        if threading.get_ident() == self._thread:
            self._deliver(event)
        else:
            self._loop.call_soon_threadsafe(self._deliver, event)


def _message(msg: object, args: tuple[object, ...]) -> str:
    try:
        text = str(msg) % args if args else str(msg)
    except (TypeError, ValueError):
        # What logging itself would print is a traceback on stderr; the caller gets the raw parts.
        text = f"{msg!s} {args!r}"
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 1] + "…"


def _extra(extra: Mapping[str, object] | None, exc: Any) -> bytes:
    fields = dict(extra or {})
    if exc:
        error = exc if isinstance(exc, BaseException) else None
        if error is None and isinstance(exc, tuple) and len(exc) == 3:
            error = exc[1]
        if error is None and exc is True:
            error = sys.exception()
        if error is not None:
            # The exception's type and text; never the traceback (it names the code's paths).
            fields["exception"] = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    if not fields:
        return b""
    data = json.dumps(fields, default=str, ensure_ascii=False).encode()
    if len(data) > MAX_EXTRA_BYTES:
        return json.dumps({"extra_truncated": f"{len(data)} bytes, more than {MAX_EXTRA_BYTES}"}).encode()
    return data
