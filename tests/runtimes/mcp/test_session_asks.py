"""The stdio session's handling of what a server asks its client during a call (elicitation,
sampling, roots), against a real server process (tests/fixtures/asking_stdio_server.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.conftest import pod_env
from toolmesh.errors import InputRequired
from toolmesh.runtimes.functions.asking import Root
from toolmesh.runtimes.mcp.server_asks import CAPABILITIES, ROOTS_CAPABILITIES, answerer
from toolmesh.runtimes.mcp.stdio_session import StdioSession

COMMAND = [sys.executable, "-m", "tests.fixtures.asking_stdio_server"]


@pytest.fixture
async def session() -> AsyncIterator[StdioSession]:
    started = await StdioSession.start(COMMAND, {**pod_env(), "PYTHONUNBUFFERED": "1"}, roots=True)
    try:
        yield started
    finally:
        await started.close()


def replied(result: Any) -> dict[str, Any]:
    """What the server got back from the client, as its tool call reports it."""
    reply: dict[str, Any] = json.loads(result["content"][0]["text"])
    return reply


async def test_the_client_offers_elicitation_sampling_and_roots(session: StdioSession) -> None:
    assert session.server["client"] == ROOTS_CAPABILITIES
    # Roots without `listChanged`: they are each call's caller's, never a list that changes.
    assert session.server["client"]["roots"] == {}


async def test_without_roots_offered_a_servers_roots_list_is_declined() -> None:
    plain = await StdioSession.start(COMMAND, {**pod_env(), "PYTHONUNBUFFERED": "1"})
    try:
        assert plain.server["client"] == CAPABILITIES
        result = await plain.request("tools/call", {"name": "roots"}, answer=lambda m, p: {"roots": []})
        declined = replied(result)["error"]
        assert declined["code"] == -32601 and "roots = true" in declined["message"]
    finally:
        await plain.close()


async def test_an_answer_goes_back_to_the_server(session: StdioSession) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append((method, params))
        return {"action": "accept", "content": {"city": "Lyon"}}

    result = await session.request("tools/call", {"name": "plan", "arguments": {}}, answer=answer)
    assert replied(result) == {"result": {"action": "accept", "content": {"city": "Lyon"}}}
    assert asked == [
        ("elicitation/create", {"message": "ask plan", "requestedSchema": asked[0][1]["requestedSchema"]})
    ]
    sampled = await session.request("tools/call", {"name": "sample"}, answer=lambda m, p: {"method": m})
    assert replied(sampled) == {"result": {"method": "sampling/createMessage"}}
    rooted = await session.request("tools/call", {"name": "roots"}, answer=lambda m, p: {"method": m})
    assert replied(rooted) == {"result": {"method": "roots/list"}}


async def test_the_callers_roots_are_the_servers_answer(session: StdioSession) -> None:
    """A caller's roots (as `ctx.list_roots` gives them) go back as a ListRootsResult."""
    roots = [Root("file:///work/repo", "repo"), Root("file:///tmp")]
    result = await session.request(
        "tools/call",
        {"name": "roots"},
        answer=answerer(lambda kind, params: roots if kind == "roots" else None, lambda kind: True),
    )
    assert replied(result) == {
        "result": {"roots": [{"uri": "file:///work/repo", "name": "repo"}, {"uri": "file:///tmp"}]}
    }


async def test_an_ask_without_its_answer_ends_the_call_and_cancels_it(session: StdioSession) -> None:
    def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise InputRequired("waiting for the caller")

    with pytest.raises(InputRequired, match="waiting for the caller"):
        await session.request("tools/call", {"name": "plan", "arguments": {}}, answer=answer)
    heard = replied(await session.request("tools/call", {"name": "heard"}))
    cancelled = [m for m in heard if m["method"] == "notifications/cancelled"]
    assert cancelled and cancelled[0]["params"]["requestId"] == 2  # the call (1 was `initialize`)


async def test_a_caller_that_cannot_give_roots_has_none_and_the_call_goes_on(session: StdioSession) -> None:
    """Not ended input-required: the server's `roots/list` may not be about this call at all."""

    def ask(kind: str, params: dict[str, Any]) -> Any:
        raise InputRequired("must not be asked")

    result = await session.request("tools/call", {"name": "roots"}, answer=answerer(ask, lambda kind: False))
    assert replied(result) == {"result": {"roots": []}}


async def test_with_no_answerer_or_two_calls_in_flight_the_server_is_refused(session: StdioSession) -> None:
    alone = await session.request("tools/call", {"name": "plan"})
    assert replied(alone)["error"]["code"] == -32601
    rootless = replied(await session.request("tools/call", {"name": "roots"}))["error"]
    assert rootless["code"] == -32601 and "caller" in rootless["message"]
    answered: list[str] = []

    def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        answered.append(method)
        return {"action": "accept"}

    both = await asyncio.gather(
        session.request("tools/call", {"name": "one"}, answer=answer),
        session.request("tools/call", {"name": "two"}, answer=answer),
    )
    # Whose request it is cannot be told: the first, asked while both were in flight, is refused.
    assert replied(both[0])["error"]["code"] == -32601
    assert session.alive


async def test_a_request_of_the_pods_own_in_flight_does_not_take_a_calls_ask(session: StdioSession) -> None:
    """The pod lists its server again after a `list_changed` while calls run: that listing
    answers nothing, so the only call that answers is still known to be the one asked."""
    call, listing = await asyncio.gather(
        session.request("tools/call", {"name": "plan"}, answer=lambda m, p: {"action": "accept"}),
        session.request("tools/list"),
        return_exceptions=True,
    )
    assert isinstance(listing, Exception)  # this server lists nothing; what matters is the call
    assert replied(call) == {"result": {"action": "accept"}}
