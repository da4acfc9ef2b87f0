"""A connection's writes in one event-loop step sent as one: a response's head and body, one syscall.

uvicorn writes a response's status line and headers, then its body, each with its own
`transport.write`; uvloop sends each at once when nothing is queued, so every answer costs two
`send` system calls (profiled on a no-op invoke: ~19 % of the gateway's samples, the largest
single item). `CoalescingTransport` keeps what is written in one step of the event loop and sends
it at the end of that step (or before anything that must see it sent: closing, write_eof). The
bytes and their order are unchanged; a write waits at most until the loop's next turn.
"""

from __future__ import annotations

import asyncio
from typing import Any


class CoalescingTransport:
    """`transport` with its writes of one loop step joined. Everything else is the transport's."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        """Send what is kept now (the transport drops it if the connection is gone)."""
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(data) for data in self._pending)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def __getattr__(self, name: str) -> Any:  # abort, set_protocol, ...: the transport's own
        return getattr(self._transport, name)
