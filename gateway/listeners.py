"""The gateway's listening sockets and its embedded uvicorn: bound before anything starts, so a
busy port fails start-up at once (server.py)."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Iterator

import uvicorn


class EmbeddedServer(uvicorn.Server):
    """uvicorn without its own signal handling: the gateway owns SIGTERM for both servers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind_listener(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # An explicit IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted
    # sockets whose proto says TCP, and without it every response waits ~40 ms
    # for a delayed ACK (uvloop sets it either way).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.setblocking(False)
    return sock


async def serve_http(
    config: uvicorn.Config, sock: socket.socket
) -> tuple[EmbeddedServer, asyncio.Task[None]]:
    """Start uvicorn on a bound socket; returns once it accepts connections."""
    server = EmbeddedServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            raise RuntimeError("the HTTP server stopped while starting")
        await asyncio.sleep(0.01)
    return server, task


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
