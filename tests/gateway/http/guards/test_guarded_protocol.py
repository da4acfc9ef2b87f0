"""Slowloris against a real `toolmesh up` with a low file limit: legitimate calls keep working while
more connections than the whole file limit trickle request heads, the cap is reported, and slow
heads and bodies are cut off by their timeouts."""

from __future__ import annotations

import contextlib
import http.client
import signal
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from tests.gateway.conftest import StartUp
from tests.gateway.test_shutdown import http_call

#: The gateway's RLIMIT_NOFILE: its connection cap is derived from it (half of it, here).
FILE_LIMIT = 256
#: Trickling connections held open at once: more than the whole file limit.
TRICKLERS = FILE_LIMIT + 64
TIMEOUT = 1.0
LIMITS = f"header_timeout = {TIMEOUT}\nbody_timeout = {TIMEOUT}\n"
#: Seconds legitimate calls run against the flood.
ATTACK_SECONDS = 3.0


def healthz(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
        return int(response.status)


@contextlib.contextmanager
def slowloris(port: int, connections: int) -> Iterator[list[int]]:
    """Keep `connections` sockets sending a request head a byte at a time (every 0.1 s), reopening
    each one the gateway closes; yields [connections opened so far]."""
    opened = [0]
    stop = threading.Event()
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 10_000

    def connect() -> tuple[socket.socket, int]:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.setblocking(False)
        opened[0] += 1
        return sock, 0

    def run() -> None:
        socks = [connect() for _ in range(connections)]
        while not stop.wait(0.1):
            for i, (sock, sent) in enumerate(socks):
                try:
                    sock.send(head[sent : sent + 1])
                    socks[i] = (sock, sent + 1)
                    if sock.recv(1024) == b"":
                        raise ConnectionResetError
                except BlockingIOError:
                    pass  # nothing to read: still open
                except OSError:
                    sock.close()
                    socks[i] = connect()
        for sock, _ in socks:
            sock.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield opened
    finally:
        stop.set()
        thread.join(10)


@pytest.mark.slow
def test_legitimate_calls_pass_while_more_connections_trickle_than_the_file_limit(up: StartUp) -> None:
    gateway = up(LIMITS, file_limit=FILE_LIMIT)
    assert healthz(gateway.http_port) == 200
    with slowloris(gateway.http_port, TRICKLERS) as opened:
        deadline = time.monotonic() + ATTACK_SECONDS
        statuses = []
        while time.monotonic() < deadline:
            statuses += [healthz(gateway.http_port), http_call(gateway.http_port, "add", {"a": 1}, 5)[0]]
            time.sleep(0.1)
        held = opened[0]
    assert held > FILE_LIMIT, "the flood alone would exhaust the file limit"
    assert len(statuses) > 10 and set(statuses) == {200}
    gateway.process.send_signal(signal.SIGTERM)
    _, stderr = gateway.process.communicate(timeout=30)
    assert "evicted at the cap to make room" in stderr
    assert "of at most 128 connections open" in stderr


def closed_after(sock: socket.socket, trickle: bytes, limit: float) -> tuple[float | None, bytes]:
    """Send `trickle` a byte every 0.1 s (then nothing) until the gateway closes the connection:
    (seconds it took, or None if still open after `limit`; what the gateway answered)."""
    start = time.monotonic()
    answer = b""
    sock.settimeout(0.1)
    for i in range(int(limit * 10)):
        try:
            if i < len(trickle):
                sock.sendall(trickle[i : i + 1])
            received = sock.recv(4096)
            if not received:
                return time.monotonic() - start, answer
            answer += received
        except TimeoutError:
            continue
        except OSError:
            return time.monotonic() - start, answer
    return None, answer


@pytest.mark.slow
def test_slow_heads_and_stalled_bodies_are_cut_off_by_their_timeouts(up: StartUp) -> None:
    gateway = up(LIMITS)
    trickled = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100
    with socket.create_connection(("127.0.0.1", gateway.http_port)) as head:
        took, answer = closed_after(head, trickled, limit=10 * TIMEOUT)
    assert took is not None and took < TIMEOUT + 1.0, "a byte now and then does not hold the head open"
    assert answer == b""
    stalled = (
        b'POST /v1/functions/add/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"a": '
    )
    with socket.create_connection(("127.0.0.1", gateway.http_port)) as body:
        body.sendall(stalled)
        took, answer = closed_after(body, b"", limit=10 * TIMEOUT)
    assert took is not None and took < TIMEOUT + 1.0
    assert answer.startswith(b"HTTP/1.1 408 ")
    # Requests on a kept-alive connection are untouched by either timer.
    kept = http.client.HTTPConnection("127.0.0.1", gateway.http_port, timeout=5)
    statuses = []
    for _ in range(3):
        kept.request("POST", "/v1/functions/add/invoke", body=b'{"a": 1}')
        response = kept.getresponse()
        response.read()
        statuses.append(response.status)
        time.sleep(TIMEOUT * 0.7)
    kept.close()
    assert statuses == [200] * 3
    gateway.process.send_signal(signal.SIGTERM)
    _, stderr = gateway.process.communicate(timeout=30)
    assert "closed without a complete request head after header_timeout" in stderr


@pytest.mark.slow
def test_an_idle_kept_alive_connection_closes_after_the_keep_alive_timeout(up: StartUp) -> None:
    # uvicorn's keep-alive timeout (5 s) is a deadline of the connection's one timer: it still
    # closes a connection that sent nothing since its last answer, sooner than the head timeout.
    gateway = up("header_timeout = 30.0\nbody_timeout = 30.0\n")
    with socket.create_connection(("127.0.0.1", gateway.http_port)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        took, answer = closed_after(sock, b"", limit=15)
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert took is not None and 4.5 < took < 7.0
    # A connection that answered nothing yet is not under the keep-alive timeout: a head that
    # keeps trickling in is given the head timeout (30 s), not cut after 5 s.
    with socket.create_connection(("127.0.0.1", gateway.http_port)) as sock:
        took, answer = closed_after(sock, b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 200, limit=8)
    assert took is None
