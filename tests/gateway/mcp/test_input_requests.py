"""Functions that ask their caller (`ctx.elicit`, `ctx.sample`, `ctx.list_roots`), answered by the
official `mcp` client's callbacks against a real gateway and real pods, in both protocol eras:
2026-07-28 input-required results with a sealed requestState, 2025 server-to-client requests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import warnings
from collections.abc import AsyncIterator
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from tests.gateway.conftest import StartGateway, runtime
from toolmesh.client.grpc import GrpcClient
from toolmesh.config import McpConfig
from toolmesh.errors import InputRequired
from toolmesh.gateway.mcp.input_requests import Round, state_boundary, too_many_rounds
from toolmesh.runtimes.functions.asking import ANSWERS_KEY, CAN_ANSWER_KEY

ERAS = ["auto", "legacy"]  # 2026-07-28 input-required results; 2025 requests on the call's stream
MODERN = "2026-07-28"


class Answers:
    """The client side: what the user, the model and the roots answer, and what was asked."""

    def __init__(self, action: str = "accept", content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content if content is not None else {}
        self.asked: list[str] = []

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(
            action=self.action, content=self.content if self.action == "accept" else None
        )  # type: ignore[arg-type]

    async def sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        prompt = params.messages[0].content
        self.asked.append(prompt.text if isinstance(prompt, types.TextContent) else "?")
        assert params.max_tokens in (5, 60)
        text = "calm" if params.max_tokens == 5 else "old pond / a frog jumps in"
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=text), model="test-model", stop_reason="endTurn"
        )

    async def roots(self, context: Any) -> types.ListRootsResult:
        self.asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/repo", name="repo")])  # type: ignore[arg-type]


async def start(gateway_factory: StartGateway, **mcp: Any) -> str:
    gateway = await gateway_factory(runtime("tools", "asking_tools"), mcp=McpConfig(**mcp))
    return gateway.url


@contextlib.asynccontextmanager
async def connect(url: str, mode: str, answers: Answers, **callbacks: Any) -> AsyncIterator[Client]:
    options: dict[str, Any] = {
        "elicitation_callback": answers.elicit,
        "sampling_callback": answers.sample,
        "list_roots_callback": answers.roots,
    }
    options.update(callbacks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)  # sampling and roots, from 2026-07-28
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode, **options) as client,
        ):
            yield client


def text(result: types.CallToolResult) -> str:
    assert isinstance(result.content[0], types.TextContent)
    return result.content[0].text


@pytest.mark.parametrize("mode", ERAS)
async def test_elicitation_accepted_with_a_dataclass_form(gateway_factory: StartGateway, mode: str) -> None:
    url = await start(gateway_factory)
    answers = Answers(content={"city": "Lyon", "days": 3})
    async with connect(url, mode, answers) as client:
        result = await client.call_tool("plan", {})
    assert not result.is_error, result
    assert text(result) == "3 days in Lyon"
    assert answers.asked == ["Where to?"]


@pytest.mark.parametrize("mode", ERAS)
async def test_elicitation_declined(gateway_factory: StartGateway, mode: str) -> None:
    url = await start(gateway_factory)
    async with connect(url, mode, Answers(action="decline")) as client:
        result = await client.call_tool("plan", {})
    assert text(result) == "no trip (decline)"


@pytest.mark.parametrize("mode", ERAS)
async def test_sampling_and_roots(gateway_factory: StartGateway, mode: str) -> None:
    url = await start(gateway_factory)
    answers = Answers()
    async with connect(url, mode, answers) as client:
        haiku = await client.call_tool("haiku", {"topic": "frogs"})
        roots = await client.call_tool("roots_sync", {})
    assert text(haiku) == "test-model: old pond / a frog jumps in"
    assert text(roots) == "repo=file:///work/repo"
    assert answers.asked == ["A haiku about frogs", "roots"]


@pytest.mark.parametrize("mode", ERAS)
async def test_several_asks_in_one_round_then_another_round(gateway_factory: StartGateway, mode: str) -> None:
    url = await start(gateway_factory)
    answers = Answers(content={"name": "Ada", "sure": True})
    async with connect(url, mode, answers) as client:
        result = await client.call_tool("interview", {})
    assert text(result) == "Ada is calm, sure=True"
    assert sorted(answers.asked[:2]) == ["Name?", "Pick a mood"]
    assert answers.asked[2:] == ["Sure?"]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_function_that_catches_its_ask_still_waits_for_the_answer(
    gateway_factory: StartGateway, mode: str
) -> None:
    url = await start(gateway_factory)
    async with connect(url, mode, Answers(content={"name": "Ada"})) as client:
        result = await client.call_tool("stubborn", {})
    assert text(result) == "got Ada"


@pytest.mark.parametrize("mode", ERAS)
async def test_rounds_are_bounded(gateway_factory: StartGateway, mode: str) -> None:
    url = await start(gateway_factory, max_input_rounds=3)
    answers = Answers(content={"answer": "yes"})
    async with connect(url, mode, answers) as client:
        result = await client.call_tool("pester", {})
    assert result.is_error
    assert "more than 3 rounds" in text(result)
    assert len(answers.asked) == 3


# -- the 2026-07-28 wire, by hand: requestState sealed, bound and refused when tampered ----------


def rpc(url: str, name: str, params: dict[str, Any], caps: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}} if caps is None else caps,
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, **params, "_meta": meta},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    response = httpx.post(f"{url}/mcp", json=body, headers=headers, timeout=30)
    # A refused requestState is a JSON-RPC error with HTTP 400; anything else is a 200.
    assert response.status_code in (200, 400), response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        reply: dict[str, Any] = json.loads(data[-1])
        return reply
    found: dict[str, Any] = response.json()
    return found


def first_round(url: str) -> dict[str, Any]:
    reply = rpc(url, "plan", {"arguments": {}})
    result = reply["result"]
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["elicit-0"]
    assert result["inputRequests"]["elicit-0"]["method"] == "elicitation/create"
    assert isinstance(result["requestState"], str)
    return dict(result)


ANSWER = {"elicit-0": {"action": "accept", "content": {"city": "Oslo", "days": 2}}}


async def test_the_state_round_trips_and_a_tampered_one_is_refused(gateway_factory: StartGateway) -> None:
    url = await start(gateway_factory)
    state = (await asyncio.to_thread(first_round, url))["requestState"]
    assert "Oslo" not in state and "elicit" not in state  # sealed, not only signed
    ok = await asyncio.to_thread(
        rpc, url, "plan", {"arguments": {}, "inputResponses": ANSWER, "requestState": state}
    )
    assert ok["result"]["content"][0]["text"] == "2 days in Oslo"
    flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
    for bad in (flipped, "v1.garbage", state + "x"):
        refused = await asyncio.to_thread(
            rpc, url, "plan", {"arguments": {}, "inputResponses": ANSWER, "requestState": bad}
        )
        assert refused["error"]["code"] == -32602
        assert refused["error"]["message"] == "Invalid or expired requestState"
    # Bound to the tool and its arguments: the same state for another call is refused too.
    other = await asyncio.to_thread(
        rpc, url, "haiku", {"arguments": {"topic": "x"}, "requestState": state}, {"sampling": {}}
    )
    assert other["error"]["code"] == -32602


async def test_an_expired_state_is_refused(gateway_factory: StartGateway) -> None:
    url = await start(gateway_factory, state_ttl=0.5)
    state = (await asyncio.to_thread(first_round, url))["requestState"]
    await asyncio.sleep(1.0)
    refused = await asyncio.to_thread(
        rpc, url, "plan", {"arguments": {}, "inputResponses": ANSWER, "requestState": state}
    )
    assert refused["error"]["code"] == -32602


async def test_a_state_sealed_with_a_shared_secret_is_read_by_another_gateway(
    gateway_factory: StartGateway,
) -> None:
    secret = {"MCP_STATE": "s" * 40}
    urls = []
    for _ in range(2):
        gateway = await gateway_factory(
            runtime("tools", "asking_tools"), mcp=McpConfig(state_secret_env="MCP_STATE"), environ=secret
        )
        urls.append(gateway.url)
    state = (await asyncio.to_thread(first_round, urls[0]))["requestState"]
    params = {"arguments": {}, "inputResponses": ANSWER, "requestState": state}
    ok = await asyncio.to_thread(rpc, urls[1], "plan", params)
    assert ok["result"]["content"][0]["text"] == "2 days in Oslo"


async def test_a_client_without_the_capability_gets_a_clear_error(gateway_factory: StartGateway) -> None:
    url = await start(gateway_factory)
    reply = await asyncio.to_thread(rpc, url, "plan", {"arguments": {}}, {"sampling": {}})
    error = reply["error"]  # MissingRequiredClientCapabilityError (SEP-2575)
    assert error["code"] == -32021
    assert error["data"]["requiredCapabilities"] == {"elicitation": {}}
    assert "did not declare" in error["message"]


# -- no channel back: HTTP and the OpenAI formats ----------------------------------------------------


async def test_http_and_openai_callers_get_input_required(gateway_factory: StartGateway) -> None:
    url = await start(gateway_factory)
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        response = await http.post("/v1/functions/plan/invoke", json={})
        assert response.status_code == 409, response.text
        error = response.json()["error"]
        assert error["code"] == "input_required"
        assert "MCP client" in error["message"]
        batch = await http.post(
            "/v1/tool_calls",
            json={
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "plan", "arguments": "{}"}}
                ]
            },
        )
    assert batch.status_code == 200, batch.text
    assert "MCP client" in json.dumps(batch.json())


# -- the seal, unit by unit (the SDK's RequestStateBoundary as input_requests.py sets it up) ------


def _context(params: dict[str, Any], principal: str | None = "alice") -> Any:
    from mcp.server import ServerRequestContext

    ctx: Any = ServerRequestContext(
        session=None,  # type: ignore[arg-type]
        lifespan_context=None,
        protocol_version=MODERN,
        method="tools/call",
        params=params,
    )
    ctx.principal = principal
    return ctx


def _boundary(secret: str | None, ttl: float = 60.0) -> Any:
    return state_boundary(secret, ttl, "toolmesh", lambda ctx: ctx.principal)


async def _seal(boundary: Any, plain: str, params: dict[str, Any], principal: str = "alice") -> str:
    async def handler(ctx: Any) -> Any:
        return types.InputRequiredResult(request_state=plain)

    sealed = await boundary(_context(params, principal), handler)
    return str(sealed.request_state)


async def _open(boundary: Any, state: str, params: dict[str, Any], principal: str = "alice") -> str:
    seen: list[str] = []

    async def handler(ctx: Any) -> Any:
        seen.append(ctx.params["requestState"])
        return types.CallToolResult(content=[])

    await boundary(_context({**params, "requestState": state}, principal), handler)
    return seen[0]


CALL = {"name": "plan", "arguments": {"a": 1}}


async def test_a_sealed_state_opens_only_for_the_same_key_call_and_caller() -> None:
    boundary = _boundary("k" * 32)
    state = await _seal(boundary, '{"answers": {}, "round": 1}', CALL)
    assert await _open(boundary, state, CALL) == '{"answers": {}, "round": 1}'
    assert await _open(_boundary("k" * 32), state, CALL) == '{"answers": {}, "round": 1}'  # another replica
    refusals = [
        (_boundary("z" * 32), state, CALL, "alice"),  # another secret
        (_boundary(None), state, CALL, "alice"),  # a per-process key
        (boundary, state, {"name": "plan", "arguments": {"a": 2}}, "alice"),  # other arguments
        (boundary, state, {"name": "haiku", "arguments": {"a": 1}}, "alice"),  # another tool
        (boundary, state, CALL, "mallory"),  # another API key
        (boundary, state[:-2] + ("AA" if state[-2:] != "AA" else "BB"), CALL, "alice"),  # tampered
    ]
    for other, token, params, principal in refusals:
        with pytest.raises(MCPError) as refused:
            await _open(other, token, params, principal)
        assert refused.value.error.code == -32602


def test_round_metadata_and_the_round_limit() -> None:
    asked = Round({"q": {"action": "accept"}}, 2, ("elicitation", "roots"), modern=True)
    assert asked.metadata() == {
        ANSWERS_KEY: '{"q": {"action": "accept"}}',
        CAN_ANSWER_KEY: "elicitation,roots",
    }
    assert Round().metadata() == {}
    assert too_many_rounds(asked, 3) is None
    refused = too_many_rounds(asked, 2)
    assert refused is not None and refused.error is not None
    assert refused.error.code == "input_required"


async def test_grpc_callers_get_input_required(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(runtime("tools", "asking_tools"))
    async with GrpcClient(f"127.0.0.1:{gateway.grpc_port}") as client:
        with pytest.raises(InputRequired) as raised:
            await client.invoke("plan", {})
    assert "MCP client" in raised.value.message
