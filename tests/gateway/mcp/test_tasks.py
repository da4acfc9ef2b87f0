"""MCP tasks over toolmesh jobs, driven by the official `mcp` client against real pods: the
2026-07-28 tasks extension and 2025-11-25's experimental tasks, a task seen as a job over
HTTP, and (slow) one gateway reading the task another created, through a real redis-server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.state.conftest import RedisServer
from toolmesh.config import KeyConfig, StateConfig
from toolmesh.gateway.server import Gateway

EXTENSION = "io.modelcontextprotocol/tasks"


class CreatedTask(types.Result):
    """SEP-2663's CreateTaskResult, as this test's client extension claims it."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    """What tasks/get answers in 2026-07-28."""

    task_id: str
    status: str
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    status_message: str | None = None
    input_requests: dict[str, Any] | None = None


class UpdateParams(types.GetTaskRequestParams):
    input_responses: dict[str, Any]


class UpdateRequest(types.Request[UpdateParams, str]):
    method: str
    params: UpdateParams


class Ack(types.Result):
    """Any result, every field kept: an ack must carry none of a task's."""

    model_config = ConfigDict(extra="allow")


class TaskRequest(types.Request[types.GetTaskRequestParams, str]):
    method: str
    params: types.GetTaskRequestParams


async def _finish(created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
    task = await poll(ctx.session.send_request, created.task_id)
    assert task.result is not None, task
    return types.CallToolResult.model_validate(task.result)


class Tasks(ClientExtension):
    """The client side of the tasks extension: a task the server creates is polled to its end."""

    identifier = EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=_finish)]


async def task_method(send: Any, method: str, task_id: str, result: type[types.Result]) -> Any:
    params = types.GetTaskRequestParams(task_id=task_id)
    return await send(TaskRequest(method=method, params=params), result)


async def poll(send: Any, task_id: str, timeout: float = 15.0, waiting: bool = False) -> DetailedTask:
    """tasks/get until the task ends (or, `waiting`, asks for input)."""
    end = time.monotonic() + timeout
    while True:
        task: DetailedTask = await task_method(send, "tasks/get", task_id, DetailedTask)
        if task.status != "working" and (waiting or task.status != "input_required"):
            return task
        assert time.monotonic() < end, f"task still {task.status}"
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def connect(
    url: str, mode: str = "auto", tasks: bool = True, key: str | None = None
) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=30, headers=bearer(key) if key else {}) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=mode, extensions=[Tasks()] if tasks else None
        ) as client,
    ):
        yield client


async def tasks_mesh(gateway_factory: StartGateway, **settings: Any) -> Gateway:
    return await gateway_factory(runtime("tools", "task_tools"), **settings)


# -- 2026-07-28: the tasks extension ----------------------------------------------------------------


async def test_a_task_is_created_polled_and_its_result_inlined(gateway_factory: StartGateway) -> None:
    gateway = await tasks_mesh(gateway_factory)
    async with connect(f"{gateway.url}/mcp") as client:
        assert EXTENSION in (client.server_capabilities.extensions or {})
        assert client.server_capabilities.model_dump().get("tasks") is None
        # The extension's claim polls tasks/get and hands back the tool's result.
        done = await client.call_tool("crunch", {"seconds": 0.2, "word": "polled"})
        assert done.structured_content == {"word": "polled"}
        created = await client.session.call_tool("crunch", {"seconds": 0.2}, allow_claimed=True)
        assert isinstance(created, CreatedTask)
        assert created.status == "working" and created.ttl_ms and created.poll_interval_ms
        task = await poll(client.session.send_request, created.task_id)
        assert task.status == "completed" and task.result is not None
        assert task.result["content"][0]["type"] == "text"
        # A function that never declared task support is called directly, as before.
        direct = await client.call_tool("plain", {"text": "direct"})
        assert direct.content == [types.TextContent(text="direct")]


async def test_tool_errors_complete_with_is_error_and_failures_fail(gateway_factory: StartGateway) -> None:
    gateway = await tasks_mesh(gateway_factory)
    async with connect(f"{gateway.url}/mcp") as client:
        raised = await client.session.call_tool("only_as_task", {"fail": True}, allow_claimed=True)
        assert isinstance(raised, CreatedTask)
        task = await poll(client.session.send_request, raised.task_id)
        assert task.status == "completed" and task.result is not None and task.result["isError"] is True
        overran = await client.session.call_tool("overrun", {}, allow_claimed=True)
        assert isinstance(overran, CreatedTask)
        task = await poll(client.session.send_request, overran.task_id)
        assert task.status == "failed" and task.result is None
        assert task.error is not None and isinstance(task.error["code"], int)
        assert "did not finish within 0.3 s" in task.error["message"]


async def test_a_long_task_is_cancelled_while_it_runs(gateway_factory: StartGateway) -> None:
    gateway = await tasks_mesh(gateway_factory)
    async with connect(f"{gateway.url}/mcp") as client:
        created = await client.session.call_tool("crunch", {"seconds": 30}, allow_claimed=True)
        assert isinstance(created, CreatedTask)
        async with httpx.AsyncClient(base_url=gateway.url) as http:
            # The worker has it: cancelling stops a running job, not only a queued one.
            end = time.monotonic() + 10
            while (await http.get(f"/v1/jobs/{created.task_id}")).json()["status"] != "running":
                assert time.monotonic() < end
                await asyncio.sleep(0.05)
            ack = await task_method(client.session.send_request, "tasks/cancel", created.task_id, Ack)
            assert ack.model_extra == {"resultType": "complete"}  # no task fields: an empty ack
            task = await poll(client.session.send_request, created.task_id, timeout=2)
            assert task.status == "cancelled"
            # Cancelling again is the same ack; an unknown task is -32602.
            await task_method(client.session.send_request, "tasks/cancel", created.task_id, types.Result)
            with pytest.raises(MCPError) as unknown:
                await task_method(client.session.send_request, "tasks/get", "job_nope", DetailedTask)
            assert unknown.value.code == types.INVALID_PARAMS
            # The worker is free again: its call was stopped, not left to run 30 s.
            assert not gateway.jobs or not gateway.jobs.runner._calls


async def test_a_task_that_asks_waits_for_each_round_of_answers(gateway_factory: StartGateway) -> None:
    gateway = await tasks_mesh(gateway_factory)
    async with connect(f"{gateway.url}/mcp") as client:
        send = client.session.send_request
        created = await client.session.call_tool("two_questions", {}, allow_claimed=True)
        assert isinstance(created, CreatedTask)

        async def waiting(keys: set[str]) -> DetailedTask:
            task = await poll(send, created.task_id, waiting=True)
            assert task.status == "input_required" and set(task.input_requests or {}) == keys, task
            return task

        asked = await waiting({"name", "color"})
        assert (asked.input_requests or {})["name"]["method"] == "elicitation/create"

        async def update(answers: dict[str, Any]) -> None:
            params = UpdateParams(task_id=created.task_id, input_responses=answers)
            ack = await send(UpdateRequest(method="tasks/update", params=params), Ack)
            assert ack.model_extra == {"resultType": "complete"}

        def answer(text: str) -> dict[str, Any]:
            return {"action": "accept", "content": {"text": text}}

        # One of two answers: still waiting, for the other only; an unknown key is ignored.
        await update({"name": answer("Ada"), "nobody-asked": answer("x")})
        await waiting({"color"})
        await update({"color": answer("green")})
        await waiting({"sure"})  # the replay with both answers asked once more
        await update({"sure": answer("yes")})
        task = await poll(send, created.task_id)
        assert task.status == "completed" and task.result is not None
        assert task.result["content"][0]["text"] == "Ada likes green (yes)"
        # Cancelling one that waits ends it.
        other = await client.session.call_tool("two_questions", {}, allow_claimed=True)
        assert isinstance(other, CreatedTask)
        await poll(send, other.task_id, waiting=True)
        await task_method(send, "tasks/cancel", other.task_id, Ack)
        assert (await poll(send, other.task_id)).status == "cancelled"


async def test_a_client_without_the_extension_calls_directly_or_is_refused(
    gateway_factory: StartGateway,
) -> None:
    gateway = await tasks_mesh(gateway_factory)
    async with connect(f"{gateway.url}/mcp", tasks=False) as client:
        direct = await client.call_tool("crunch", {"word": "now"})
        assert not direct.is_error and direct.structured_content is not None
        with pytest.raises(MCPError) as refused:
            await client.call_tool("only_as_task", {})
        assert refused.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
        assert refused.value.data == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
        with pytest.raises(MCPError) as gated:
            await task_method(client.session.send_request, "tasks/get", "job_x", DetailedTask)
        assert gated.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY


async def test_a_task_is_a_job_over_http_and_only_its_callers(gateway_factory: StartGateway) -> None:
    keys = [KeyConfig(name="alice", key_env="ALICE_KEY"), KeyConfig(name="bob", key_env="BOB_KEY")]
    environ = {"ALICE_KEY": "alice-secret", "BOB_KEY": "bob-secret"}
    gateway = await tasks_mesh(gateway_factory, keys=keys, environ=environ)
    async with connect(f"{gateway.url}/mcp", key="alice-secret") as alice:
        created = await alice.session.call_tool("crunch", {"word": "shared"}, allow_claimed=True)
        assert isinstance(created, CreatedTask)
        await poll(alice.session.send_request, created.task_id)
    async with connect(f"{gateway.url}/mcp", key="bob-secret") as bob:
        with pytest.raises(MCPError) as hidden:  # another key's task is an unknown one
            await task_method(bob.session.send_request, "tasks/get", created.task_id, DetailedTask)
        assert hidden.value.code == types.INVALID_PARAMS
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        job = (await http.get(f"/v1/jobs/{created.task_id}", headers=bearer("alice-secret"))).json()
        other = await http.get(f"/v1/jobs/{created.task_id}", headers=bearer("bob-secret"))
    assert other.status_code == 404
    assert job["function"] == "crunch" and job["status"] == "succeeded"
    assert job["result"]["structured"] == {"word": "shared"}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# -- 2025-11-25: experimental tasks ----------------------------------------------------------------


async def test_the_handshake_era_augments_a_call_with_a_task(gateway_factory: StartGateway) -> None:
    gateway = await tasks_mesh(gateway_factory)
    async with connect(f"{gateway.url}/mcp", mode="legacy", tasks=False) as client:
        tasks = client.server_capabilities.tasks
        assert tasks is not None and tasks.requests is not None and tasks.cancel is not None
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listed["crunch"].execution == types.ToolExecution(task_support="optional")
        assert listed["plain"].execution is None
        send = client.session.send_request

        async def as_task(name: str, arguments: dict[str, Any]) -> types.Task:
            # The SDK's client reads a tools/call answer as a CallToolResult only (its 2025 task
            # types are types only), so the task-augmented call itself goes out by hand.
            params = {"name": name, "arguments": arguments, "task": {"ttl": 60_000}}
            return types.CreateTaskResult.model_validate(await legacy_call(gateway.url, params)).task

        task = await as_task("crunch", {"seconds": 0.2, "word": "later"})
        assert task.status == "working" and task.ttl and task.poll_interval
        result = await task_method(send, "tasks/result", task.task_id, types.CallToolResult)
        assert result.structured_content == {"word": "later"}
        assert (result.meta or {})["io.modelcontextprotocol/related-task"] == {"taskId": task.task_id}
        got = await task_method(send, "tasks/get", task.task_id, types.GetTaskResult)
        assert got.status == "completed"
        listing = await send(types.ListTasksRequest(), types.ListTasksResult)
        assert task.task_id in {t.task_id for t in listing.tasks}

        # 2025-11-25 has no way to answer a task's asks: a function that asks ends with an error.
        asks = await as_task("two_questions", {})
        asked = await task_method(send, "tasks/result", asks.task_id, types.CallToolResult)
        assert asked.is_error is True

        long = await as_task("crunch", {"seconds": 30})
        cancelled = await task_method(send, "tasks/cancel", long.task_id, types.CancelTaskResult)
        assert cancelled.status == "cancelled"
        with pytest.raises(MCPError) as finished:  # a finished task cannot be cancelled (2025)
            await task_method(send, "tasks/cancel", long.task_id, types.CancelTaskResult)
        assert finished.value.code == types.INVALID_PARAMS
        with pytest.raises(MCPError) as not_a_task:
            await as_task("plain", {})
        assert not_a_task.value.code == types.METHOD_NOT_FOUND
        with pytest.raises(MCPError) as needs_task:
            await client.call_tool("only_as_task", {})
        assert needs_task.value.code == types.METHOD_NOT_FOUND


async def legacy_call(url: str, params: dict[str, Any]) -> dict[str, Any]:
    """A 2025-11-25 tools/call sent by hand; its result, or MCPError."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(f"{url}/mcp", json=body, headers=headers)
    lines = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    reply: dict[str, Any] = json.loads(lines[-1]) if lines else response.json()
    if "error" in reply:
        raise MCPError(reply["error"]["code"], reply["error"]["message"])
    result: dict[str, Any] = reply["result"]
    return result


# -- shared through Redis -----------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_task_made_through_one_gateway_is_read_through_another(
    gateway_factory: StartGateway, redis_server: RedisServer
) -> None:
    state = StateConfig(url=redis_server.url)
    first = await tasks_mesh(gateway_factory, state=state)
    second = await tasks_mesh(gateway_factory, state=state)
    async with connect(f"{first.url}/mcp") as client:
        created = await client.session.call_tool(
            "crunch", {"seconds": 0.5, "word": "shared"}, allow_claimed=True
        )
        assert isinstance(created, CreatedTask)
    async with connect(f"{second.url}/mcp") as client:
        task = await poll(client.session.send_request, created.task_id)
    assert task.status == "completed" and task.result is not None
    assert task.result["structuredContent"] == {"word": "shared"}
