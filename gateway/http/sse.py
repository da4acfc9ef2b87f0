"""Server-sent events: `POST /v1/functions/{name}/invoke` with `Accept: text/event-stream`.

The answer is one event per content item as the function produces it, then one last event:

    event: content   data: one Content object ({"type": "text", "text": ...}), per item
    event: result    data: the Result document a non-streaming call answers; its `content` holds
                     only what was not already sent as `content` events (a plain function's
                     whole content, nothing for a generator's yielded items)
    event: error     data: the error envelope ({"error": {...}}) of a call that failed after
                     items were sent, when the HTTP status is long gone
    event: log       data: {"level", "logger", "data": {"message", ...extra}}: a record the
                     function logged with ctx.logger, when the URL asked with ``?log_level=``
                     (debug, info, warning, error or critical: that level and above)
    event: progress  data: {"progress", "total", "message"}: a ctx.report_progress report, when
                     the URL asked with ``?progress=true``

A call refused before its first item (unknown function, bad arguments, a timeout...) is an
ordinary HTTP error with its status, as without SSE, so clients learn of a bad call the same way.
While a function is quiet between items for `keepalive` seconds, a comment line (`: keep-alive`)
goes out, so proxies with an idle timeout do not cut a live stream; readers skip comments.
`with_keepalives` is that pacing for any event stream (the chat proxy's uses it too).

Back-pressure: nothing here buffers. Starlette writes each event with `await send(...)`, which
uvicorn holds while the socket's write buffer is over its high-water mark, and only then is the
next event pulled from `Mesh.stream`, and so from the pod's gRPC stream, whose flow-control
window fills and stops the pod's sender; the pod's executor queues at most a few items before
the function itself waits in its `yield`. A slow reader pauses the function.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TypeVar

from starlette.responses import Response, StreamingResponse

from toolmesh.error_shapes import http_error
from toolmesh.errors import InvalidRequest, ToolmeshError
from toolmesh.gateway.core.result_json import content_json, result_json
from toolmesh.runtimes.functions.call_events import CallEvent, Interleaving, LogEvent, ProgressEvent
from toolmesh.runtimes.functions.results import Content, Result

EVENT_STREAM = "text/event-stream"
#: Proxies and browsers must pass each event on at once: no caching, no buffering (nginx).
HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}

Events = AsyncGenerator[list[Content] | Result | CallEvent, None]
Event = list[Content] | Result | CallEvent
#: The ``log_level`` values an SSE caller may ask for.
LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
LOG_LEVELS |= {"error": logging.ERROR, "critical": logging.CRITICAL}
T = TypeVar("T")


class _End:
    """What a finished iterator gives in `with_keepalives`."""


_END = _End()


def wants_events(accept: str | None) -> bool:
    """Whether an `Accept` header asks for an event stream (and does not refuse it with q=0)."""
    if not accept or EVENT_STREAM not in accept.lower():
        return False  # the common answer without splitting the header
    for part in accept.split(","):
        media, *params = (piece.strip().lower() for piece in part.split(";"))
        if media == EVENT_STREAM:
            return not any(
                param.replace(" ", "") in ("q=0", "q=0.0", "q=0.00", "q=0.000") for param in params
            )
    return False


def interleaving(query: Mapping[str, str]) -> Interleaving | None:
    """What the URL asked to hear while the call runs (``log_level``, ``progress``), if anything."""
    level_name = query.get("log_level", "").lower()
    if level_name and level_name not in LOG_LEVELS:
        raise InvalidRequest(f"log_level must be one of {', '.join(LOG_LEVELS)}", param="log_level")
    progress = query.get("progress", "").lower() in ("1", "true", "yes")
    if not level_name and not progress:
        return None
    return Interleaving(LOG_LEVELS.get(level_name, 0), progress)


def _call_event(item: CallEvent) -> bytes:
    if isinstance(item, LogEvent):
        level = logging.getLevelName(item.level).lower()
        document: dict[str, object] = {"level": level, "logger": item.logger, "data": item.data()}
        return event("log", json.dumps(document, separators=(",", ":")).encode())
    assert isinstance(item, ProgressEvent)
    report = {"progress": item.progress, "total": item.total, "message": item.message}
    return event("progress", json.dumps(report, separators=(",", ":")).encode())


def event(name: str, data: bytes) -> bytes:
    """One SSE event. JSON from toolmesh has no line breaks, but a function may build a `Json`
    item by hand: each line gets its own `data:` field, which readers join back with a newline."""
    if b"\n" in data or b"\r" in data:
        lines = b"".join(b"data: " + line + b"\n" for line in data.splitlines())
    else:
        lines = b"data: " + data + b"\n"
    return b"event: " + name.encode() + b"\n" + lines + b"\n"


KEEPALIVE = b": keep-alive\n\n"


async def event_stream(events: Events, keepalive: float) -> Response:
    """The SSE answer to a call whose events `Mesh.stream` gives. Its first event is awaited
    here, so a refusal before it raises and becomes an ordinary HTTP error."""
    try:
        first = await anext(events)
    except BaseException:
        await events.aclose()
        raise
    return StreamingResponse(_body(first, events, keepalive), media_type=EVENT_STREAM, headers=HEADERS)


async def with_keepalives(items: AsyncIterator[T], keepalive: float) -> AsyncGenerator[T | None, None]:
    """`items` as they come, and None each time `keepalive` seconds pass without one: the
    caller then sends its keep-alive. One item is asked for at a time (back-pressure), and
    waiting for it is not cancelled by a keep-alive, which would throw into `items`.
    Closing this stops the wait; closing `items` is the caller's."""
    pending: asyncio.Future[T | _End] | None = None
    try:
        while True:
            pending = asyncio.ensure_future(anext(items, _END))
            while not (await asyncio.wait({pending}, timeout=keepalive))[0]:
                yield None
            item, pending = pending.result(), None
            if isinstance(item, _End):
                return
            yield item
    finally:
        if pending is not None:
            pending.cancel()
            # Until `items` has taken the cancellation in: closing it while it runs would fail.
            # A cancelled caller (anyio's scopes cancel again at each await) waits all the same.
            while not pending.done():
                with contextlib.suppress(BaseException):
                    await asyncio.wait({pending})


async def _body(first: Event, events: Events, keepalive: float) -> AsyncIterator[bytes]:
    paced = with_keepalives(events, keepalive)
    current: Event | None = first
    try:
        while not isinstance(current, Result):
            if current is None:
                yield KEEPALIVE
            elif isinstance(current, LogEvent | ProgressEvent):
                yield _call_event(current)
            else:
                for item in current:
                    yield event("content", content_json(item))
            current = await anext(paced)
        yield event("result", result_json(current))
    except ToolmeshError as exc:
        yield event("error", http_error(exc).body)
    finally:
        await paced.aclose()
        # Also when the client left: the call is cancelled in the pod, not left to run.
        await events.aclose()
