"""`CoalescingTransport` sends one loop step's writes as one, unchanged and in order, and never
loses what it keeps when the connection is closed."""

from __future__ import annotations

import asyncio
import socket

from toolmesh.gateway.http.guards.write_coalescing import CoalescingTransport


async def _connected() -> tuple[CoalescingTransport, socket.socket]:
    ours, theirs = socket.socketpair()
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
    theirs.setblocking(False)
    return CoalescingTransport(transport, loop), theirs  # type: ignore[arg-type]


async def _read(peer: socket.socket, at_least: int) -> bytes:
    loop = asyncio.get_running_loop()
    data = b""
    while len(data) < at_least:
        chunk = await asyncio.wait_for(loop.sock_recv(peer, 65536), 5)
        if not chunk:
            break
        data += chunk
    return data


async def test_a_steps_writes_arrive_together_and_in_order() -> None:
    transport, peer = await _connected()
    transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    transport.write(memoryview(b"{}"))
    assert transport.get_write_buffer_size() == 40  # kept, not yet sent
    await asyncio.sleep(0)  # the loop's next turn sends it
    await asyncio.sleep(0)
    assert transport.get_write_buffer_size() == 0
    assert await _read(peer, 40) == b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"
    transport.write(b"second")
    await asyncio.sleep(0)
    assert await _read(peer, 6) == b"second"
    transport.close()
    peer.close()


async def test_closing_sends_what_was_kept_first() -> None:
    transport, peer = await _connected()
    transport.write(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
    transport.close()
    assert transport.is_closing()
    assert await _read(peer, 1 << 20) == b"HTTP/1.1 408 Request Timeout\r\n\r\n"
    await asyncio.sleep(0)  # the scheduled flush finds nothing left, and writes nothing after close
    peer.close()
