"""A FrameReader's two directions over a real Unix socket pair: frames read whole, in order, from
any split of the bytes; frames sent in one event-loop step leave with one write, at once."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolmesh.protocol.frames import HEADER, INVOKE, PING, RESULT, FrameReader, frame


class Recorder(FrameReader):
    """Keeps the frames it reads, and counts the writes its transport is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[tuple[int, int, float, bytes]] = []
        self.arrived = asyncio.Event()
        self.writes = 0

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        write = transport.write

        def counted(data: bytes) -> None:
            self.writes += 1
            write(data)

        self.transport.write = counted  # type: ignore[method-assign,union-attr]

    def on_frame(self, kind: int, call_id: int, timeout: float, payload: bytes) -> None:
        self.frames.append((kind, call_id, timeout, payload))
        self.arrived.set()


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Recorder, Recorder]]:
    loop = asyncio.get_running_loop()
    left, right = socket.socketpair()
    _, sender = await loop.connect_accepted_socket(Recorder, left)
    _, receiver = await loop.connect_accepted_socket(Recorder, right)
    yield sender, receiver
    for end in (sender, receiver):
        assert end.transport is not None
        end.transport.close()


async def until(receiver: Recorder, count: int) -> None:
    while len(receiver.frames) < count:
        receiver.arrived.clear()
        await asyncio.wait_for(receiver.arrived.wait(), 5)


async def test_frames_sent_in_one_loop_step_leave_with_one_write(pair: tuple[Recorder, Recorder]) -> None:
    sender, receiver = pair
    for call_id in range(1, 6):
        sender.send(frame(INVOKE, call_id, b"request %d" % call_id, 1.5))
    assert sender.writes == 0, "kept for the end of the step"
    await until(receiver, 5)
    assert sender.writes == 1
    assert receiver.frames == [(INVOKE, n, 1.5, b"request %d" % n) for n in range(1, 6)]


async def test_a_lone_frame_leaves_at_the_loops_next_turn_not_on_a_timer(
    pair: tuple[Recorder, Recorder],
) -> None:
    sender, receiver = pair
    sender.send(frame(PING, 9))
    await asyncio.sleep(0)  # one turn of the loop
    assert sender.writes == 1
    await until(receiver, 1)
    assert receiver.frames == [(PING, 9, 0.0, b"")]


async def test_frames_are_read_whole_from_any_split_of_their_bytes(pair: tuple[Recorder, Recorder]) -> None:
    _, receiver = pair
    big = bytes(range(256)) * 1000
    stream = frame(RESULT, 1, b"small") + frame(RESULT, 2, big) + frame(PING, 3) + frame(RESULT, 4, b"x")
    for size in (1, 7, HEADER.size, HEADER.size + 3, 4096, len(stream)):
        receiver.frames.clear()
        for start in range(0, len(stream), size):
            receiver.data_received(stream[start : start + size])
        assert receiver.frames == [
            (RESULT, 1, 0.0, b"small"),
            (RESULT, 2, 0.0, big),
            (PING, 3, 0.0, b""),
            (RESULT, 4, 0.0, b"x"),
        ], size


async def test_frames_kept_for_a_closing_connection_are_dropped(pair: tuple[Recorder, Recorder]) -> None:
    sender, _ = pair
    sender.send(frame(PING, 1))
    assert sender.transport is not None
    sender.transport.close()
    await asyncio.sleep(0)
    assert sender.writes == 0
