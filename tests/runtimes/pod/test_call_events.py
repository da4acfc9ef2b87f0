"""A call's log records and progress reports, from a real pod to the gateway's two clients: the Unix
socket and gRPC (`InvokeStream`, which a unary call that wants events is sent as)."""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from tests.conftest import InProcessPod
from toolmesh.gateway.pool.runtime_client import RuntimeClient
from toolmesh.gateway.pool.socket_client import SocketClient
from toolmesh.protocol.calls import Call
from toolmesh.runtimes.functions.call_events import (
    MAX_LOG_EVENTS,
    MAX_PROGRESS_EVENTS,
    CallEvent,
    Listener,
    LogEvent,
    ProgressEvent,
)
from toolmesh.runtimes.functions.results import Result, Text

Invoke = Callable[[Call], Awaitable[Result]]


@pytest.fixture(params=["socket", "grpc"])
async def invoke(request: pytest.FixtureRequest, pod_factory: Callable[..., object]) -> AsyncIterator[Invoke]:
    """Runs a Call on a pod serving log_tools over one of the two transports."""
    folder = tempfile.mkdtemp(prefix="tm-")
    socket_path = str(Path(folder) / "pod.sock")
    pod: InProcessPod = await pod_factory("log_tools", socket_path=socket_path)  # type: ignore[assignment, misc]
    client: SocketClient | RuntimeClient
    if request.param == "socket":
        client = SocketClient("logs", socket_path)
    else:
        client = RuntimeClient("logs", pod.address)

    async def run(call: Call) -> Result:
        return await client.invoke(call, 10)

    yield run
    await client.close()


def listening(level: int = 0, progress: bool = False) -> tuple[Listener, list[CallEvent]]:
    events: list[CallEvent] = []
    return Listener(level, progress, events.append), events


def call(function: str, events: Listener | None = None, **arguments: object) -> Call:
    return Call(function, json.dumps(arguments).encode(), events=events)


def logs(events: list[CallEvent]) -> list[tuple[int, str, dict[str, object]]]:
    return [(e.level, e.message, e.data()) for e in events if isinstance(e, LogEvent)]


@pytest.mark.parametrize("function", ["levels", "levels_sync"])
async def test_records_at_or_above_the_level_arrive_in_order_before_the_result(
    invoke: Invoke, function: str
) -> None:
    listener, events = listening(logging.INFO)
    result = await invoke(call(function, listener))
    assert result.content == [Text("done")]
    got = logs(events)
    assert got[0] == (logging.INFO, "started", {"message": "started", "city": "Paris", "days": 3})
    assert ("noticed something" in [m for _, m, _ in got]) == (function == "levels")
    assert all(level >= logging.INFO for level, _, _ in got)
    assert (logging.WARNING, "running low on coffee", {"message": "running low on coffee"}) in got
    if function == "levels":
        assert [m for _, m, _ in got] == [
            "started",
            "noticed something",
            "running low on coffee",
            "failed once",
            "on fire",
        ]
        assert got[3][2]["exception"] == "ValueError: bad input"
    assert {e.logger for e in events if isinstance(e, LogEvent)} == {function}


async def test_debug_records_arrive_when_asked_and_nothing_when_not(invoke: Invoke) -> None:
    listener, events = listening(1)
    await invoke(call("levels", listener))
    assert logs(events)[0][:2] == (logging.DEBUG, "looking closely")
    # The listener of a caller who wants nothing: no events, and the pod builds no channel.
    silent, none = listening(0, progress=False)
    result = await invoke(call("levels", silent))
    plain = await invoke(call("progress"))
    assert none == [] and result.content == [Text("done")] and plain.structured == 3


@pytest.mark.parametrize("function", ["progress", "progress_sync"])
async def test_progress_reports_arrive_only_when_asked(invoke: Invoke, function: str) -> None:
    listener, events = listening(progress=True)
    result = await invoke(call(function, listener, count=3))
    assert result.structured == 3
    if function == "progress":
        assert events == [ProgressEvent(i, 3.0, f"step {i}") for i in (1, 2, 3)]
    else:
        assert events == [ProgressEvent(i, None, None) for i in (1, 2, 3)]
    logs_only, nothing = listening(logging.DEBUG)
    await invoke(call(function, logs_only, count=3))
    assert nothing == []


async def test_a_flood_is_capped_and_the_call_still_succeeds(invoke: Invoke) -> None:
    listener, events = listening(logging.INFO, progress=True)
    result = await invoke(call("log_flood", listener, lines=100_000, reports=5000))
    assert result.structured == 100_000 and not result.is_error
    records = [e for e in events if isinstance(e, LogEvent)]
    assert len(records) == MAX_LOG_EVENTS
    assert records[-2].message == f"line {MAX_LOG_EVENTS - 2}"
    assert records[-1].level == logging.WARNING and "limit of 1000 log records" in records[-1].message
    reports = [e for e in events if isinstance(e, ProgressEvent)]
    # As many as the cap, then the last one, held back until the function returned.
    assert len(reports) == MAX_PROGRESS_EVENTS + 1
    assert reports[-1] == ProgressEvent(5000, 5000.0, None)
    assert events[-1] == reports[-1]


async def test_a_generator_logs_between_its_items(invoke: Invoke) -> None:
    listener, events = listening(logging.INFO)
    result = await invoke(call("items_and_logs", listener))
    assert result.content == [Text("item 0"), Text("item 1")]
    assert [m for _, m, _ in logs(events)] == ["making item 0", "making item 1", "all made"]
