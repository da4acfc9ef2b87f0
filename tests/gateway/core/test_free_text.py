"""The router through the gateway: /v1/route, gRPC Mesh.Route, /v1/tools?query=, /v1/execute, sessions."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import toolmesh
from tests.conftest import pod_env
from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.grpc.test_mesh_servicer import failure, mesh_stub
from toolmesh.config import KeyConfig, LlmConfig, RouterConfig, hash_key
from toolmesh.gateway.server import Gateway
from toolmesh.router.search.index import LEXICAL_WEIGHT
from toolmesh.v1 import mesh_pb2


def router_config(cache: Path, data: Path, **settings: Any) -> RouterConfig:
    return RouterConfig(cache_dir=cache, data_dir=data, **settings)


@pytest.fixture
async def routed(gateway_factory: StartGateway, router_cache: Path, tmp_path: Path) -> Gateway:
    """A gateway serving tests/fixtures/router_tools.py with the router on."""
    return await gateway_factory(
        runtime("tools", "router_tools"), router=router_config(router_cache, tmp_path)
    )


@pytest.fixture
async def http(routed: Gateway) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=routed.url, timeout=10) as client:
        yield client


async def test_route_names_the_function_that_fits(http: httpx.AsyncClient) -> None:
    answer = (
        await http.post("/v1/route", json={"prompt": "What's the weather like in Oslo?", "k": 3})
    ).json()
    assert answer["match"] == "get_weather" and len(answer["candidates"]) == 3
    assert answer["candidates"][0]["name"] == "get_weather"
    scores = [c["score"] for c in answer["candidates"]]
    assert scores == sorted(scores, reverse=True)
    # Each fused score with the two it was fused from (no session: no recency bonus).
    for candidate in answer["candidates"]:
        dense, lexical = candidate["scores"]["dense"], candidate["scores"]["lexical"]
        assert candidate["score"] == pytest.approx(dense + LEXICAL_WEIGHT * lexical, abs=1e-3)
    assert answer["candidates"][0]["scores"]["dense"] > 0.2
    assert answer["candidates"][0]["scores"]["lexical"] > 0  # "weather" is in get_weather's text
    default_k = (await http.post("/v1/route", json={"prompt": "send an email"})).json()
    assert default_k["match"] == "send_email" and len(default_k["candidates"]) == 5


async def test_route_says_when_nothing_fits(http: httpx.AsyncClient) -> None:
    answer = (await http.post("/v1/route", json={"prompt": "bake a chocolate cake"})).json()
    assert answer["match"] is None and answer["candidates"]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "prompt"),
        ({"prompt": "  "}, "prompt"),
        ({"prompt": 5}, "prompt"),
        ({"prompt": "weather", "k": 500}, "k"),
        ({"prompt": "weather", "k": 0}, "k"),
        ({"prompt": "weather", "k": -1}, "k"),
        ({"prompt": "weather", "k": "two"}, "k"),
        ({"prompt": "weather", "session_id": 7}, "session_id"),
        ({"prompt": "weather", "colour": "red"}, "colour"),
    ],
)
async def test_bad_route_requests_get_400_naming_the_field(
    http: httpx.AsyncClient, body: dict[str, Any], param: str
) -> None:
    response = await http.post("/v1/route", json=body)
    assert response.status_code == 400 and response.json()["error"]["param"] == param
    assert (await http.post("/v1/route", content=b"[1, 2]")).status_code == 400


async def test_grpc_route_answers_like_http(routed: Gateway, http: httpx.AsyncClient) -> None:
    prompt = "book a plane ticket to Rome"
    over_http = (await http.post("/v1/route", json={"prompt": prompt, "k": 2})).json()
    channel, mesh = mesh_stub(routed)
    async with channel:
        answer = await mesh.Route(mesh_pb2.RouteRequest(prompt=prompt, k=2))
        assert answer.match == over_http["match"] == "book_flight"
        assert [c.name for c in answer.candidates] == [c["name"] for c in over_http["candidates"]]
        assert answer.candidates[0].score == pytest.approx(over_http["candidates"][0]["score"], abs=1e-3)
        for signal in ("dense", "lexical"):
            sent = getattr(answer.candidates[0], signal)
            assert sent == pytest.approx(over_http["candidates"][0]["scores"][signal], abs=1e-3)
        assert answer.candidates[0].dense > 0
        nothing = await mesh.Route(mesh_pb2.RouteRequest(prompt="bake a chocolate cake"))
        assert nothing.match == "" and len(nothing.candidates) == 5
        empty = await failure(mesh.Route(mesh_pb2.RouteRequest(prompt="")))
        assert isinstance(empty, toolmesh.InvalidRequest) and empty.param == "prompt"


async def test_tools_with_a_query_returns_only_the_top_k(http: httpx.AsyncClient) -> None:
    answer = (
        await http.get("/v1/tools", params={"query": "download a file", "k": 2, "format": "mcp"})
    ).json()
    assert [t["name"] for t in answer["tools"]] == [c["name"] for c in answer["candidates"]]
    assert len(answer["tools"]) == 2 and answer["tools"][0]["name"] == "download_file"
    assert "inputSchema" in answer["tools"][0]
    openai = (await http.get("/v1/tools", params={"query": "timer", "k": 1})).json()
    assert openai["tools"][0]["function"]["name"] == "set_timer"
    assert len((await http.get("/v1/tools")).json()["tools"]) == 5, "without a query: every tool"
    assert (await http.get("/v1/tools", params={"query": "timer", "k": "0.5"})).status_code == 400


async def test_execute_routes_extracts_invokes_and_shows_the_code(http: httpx.AsyncClient) -> None:
    prompt = "Send an urgent email to alice@example.com with subject 'Lunch moved'"
    planned = (await http.post("/v1/execute", json={"prompt": prompt})).json()
    # send_email is not read_only: free text plans it and waits for a confirmation.
    assert planned["status"] == "needs_confirmation" and planned["result"] is None
    assert planned["function"] == "send_email"
    assert planned["arguments"] == {"to": "alice@example.com", "subject": "Lunch moved", "urgent": True}
    token = planned["confirmation"]["token"]
    answer = (await http.post("/v1/execute", json={"confirm": token})).json()
    assert answer["status"] == "done" and answer["arguments"] == planned["arguments"]
    assert answer["result"]["content"] == [
        {"type": "text", "text": "sent to alice@example.com: Lunch moved (urgent)"}
    ]
    assert planned["candidates"][0]["name"] == "send_email"
    code = answer["code"]
    assert "curl -s -X POST" in code["curl"] and "/v1/functions/send_email/invoke" in code["curl"]
    # The Python snippet is runnable as it is and repeats the call.
    command = [sys.executable, "-c", code["python"]]
    done = await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, timeout=30, env=pod_env()
    )
    assert done.returncode == 0, done.stderr
    assert "sent to alice@example.com: Lunch moved (urgent)" in done.stdout


async def test_execute_dry_run_does_not_call(http: httpx.AsyncClient) -> None:
    prompt = "set a timer for 15 minutes called 'tea'"
    answer = (await http.post("/v1/execute", json={"prompt": prompt, "dry_run": True})).json()
    assert answer["function"] == "set_timer" and answer["arguments"] == {"seconds": 900, "label": "tea"}
    assert answer["result"] is None and answer["argument_sources"]["seconds"] == "number"
    # A dry run says that running it would need a confirmation, and hands out no token.
    assert answer["status"] == "planned" and "token" not in answer["confirmation"]
    bad = await http.post("/v1/execute", json={"prompt": prompt, "dry_run": "yes"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "dry_run"


async def test_execute_names_missing_arguments_and_no_fit(http: httpx.AsyncClient) -> None:
    missing = await http.post("/v1/execute", json={"prompt": "book a flight to Paris"})
    error = missing.json()["error"]
    assert missing.status_code == 422 and error["code"] == "invalid_arguments"
    assert {v["path"] for v in error["violations"]} == {"origin", "date"}
    assert error["function"] == "book_flight" and error["arguments"]["destination"] == "Paris"
    assert error["candidates"][0]["name"] == "book_flight"
    # The answer asks: it says so, and names what it needs.
    assert error["follow_up"] is True
    assert [(n["name"], n["reason"]) for n in error["needs"]] == [
        ("origin", "not in the prompt"),
        ("date", "not in the prompt"),
    ]
    unclear = await http.post("/v1/execute", json={"prompt": "weather in Oslo in celsius or fahrenheit"})
    asked = unclear.json()["error"]
    assert unclear.status_code == 422 and asked["function"] == "get_weather" and asked["follow_up"]
    assert asked["needs"] == [
        {
            "name": "unit",
            "reason": "the prompt names more than one choice",
            "options": ["celsius", "fahrenheit"],
        }
    ]
    nothing = await http.post("/v1/execute", json={"prompt": "bake a chocolate cake"})
    assert nothing.status_code == 404 and nothing.json()["error"]["candidates"]


async def test_sessions_prefer_recent_functions_and_fill_follow_ups(http: httpx.AsyncClient) -> None:
    first = await http.post(
        "/v1/execute", json={"prompt": "What's the weather in Oslo in fahrenheit?", "session_id": "trip"}
    )
    assert first.json()["arguments"] == {"city": "Oslo", "unit": "fahrenheit"}
    # The X-Session-Id header names the session too.
    follow = (
        await http.post(
            "/v1/execute", json={"prompt": "now do the same for Paris"}, headers={"X-Session-Id": "trip"}
        )
    ).json()
    assert follow["function"] == "get_weather" and follow["follow_up"] is True
    assert follow["arguments"] == {"city": "Paris", "unit": "fahrenheit"}
    assert follow["argument_sources"]["unit"] == "previous"
    assert follow["result"]["structured"] == {"city": "Paris", "unit": "fahrenheit", "temperature": 70}
    # Without the session, the same words fit nothing.
    alone = await http.post("/v1/execute", json={"prompt": "now do the same for Paris"})
    assert alone.status_code == 404


async def test_routing_respects_key_scopes(
    gateway_factory: StartGateway, router_cache: Path, tmp_path: Path
) -> None:
    keys = [KeyConfig(name="narrow", key_hash=hash_key("narrow-key"), scopes=("get_*", "set_*"))]
    gateway = await gateway_factory(
        runtime("tools", "router_tools"), keys=keys, router=router_config(router_cache, tmp_path)
    )
    headers = {"Authorization": "Bearer narrow-key"}
    async with httpx.AsyncClient(base_url=gateway.url, headers=headers) as http:
        answer = (await http.post("/v1/route", json={"prompt": "send an email to Bob", "k": 5})).json()
        assert {c["name"] for c in answer["candidates"]} == {"get_weather", "set_timer"}
        execute = await http.post("/v1/execute", json={"prompt": "weather in Rome", "dry_run": True})
        assert "Authorization: Bearer $TOOLMESH_API_KEY" in execute.json()["code"]["curl"]
        assert (
            await http.post("/v1/route", json={"prompt": "x"}, headers={"Authorization": ""})
        ).status_code == 401


async def test_without_a_router_the_endpoints_answer_503(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    broken = RouterConfig(
        model=tmp_path / "missing.onnx", tokenizer=tmp_path / "tokenizer.json", data_dir=tmp_path
    )
    for config, reason in ((RouterConfig(enabled=False), "disabled"), (broken, "missing.onnx")):
        gateway = await gateway_factory(runtime("tools", "router_tools"), router=config)
        async with httpx.AsyncClient(base_url=gateway.url) as http:
            for response in (
                await http.post("/v1/route", json={"prompt": "weather"}),
                await http.post("/v1/execute", json={"prompt": "weather"}),
                await http.get("/v1/tools", params={"query": "weather"}),
            ):
                assert response.status_code == 503 and reason in response.json()["error"]["message"]
            assert (await http.get("/v1/functions")).status_code == 200, "the rest still works"


class FakeLlm:
    """An OpenAI-compatible chat endpoint on loopback that always calls the offered tool."""

    def __init__(self, arguments: dict[str, Any]) -> None:
        self.arguments = arguments
        self.requests: list[tuple[dict[str, Any], str]] = []

    async def completions(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append((body, request.headers.get("authorization", "")))
        name = body["tools"][0]["function"]["name"]
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(self.arguments)},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return JSONResponse(
            {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message}]}
        )


@pytest.fixture
async def fake_llm() -> AsyncIterator[tuple[FakeLlm, str]]:
    llm = FakeLlm({"origin": "Lyon", "destination": "Nice"})
    app = Starlette(routes=[Route("/v1/chat/completions", llm.completions, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="off"))
    task = asyncio.create_task(server.serve())
    for _ in range(1000):  # up to 10 s
        if server.started:
            break
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield llm, f"http://127.0.0.1:{port}/v1"
    server.should_exit = True
    await task


async def test_an_llm_fills_what_the_rules_cannot(
    gateway_factory: StartGateway, router_cache: Path, tmp_path: Path, fake_llm: tuple[FakeLlm, str]
) -> None:
    llm, url = fake_llm
    config = router_config(
        router_cache, tmp_path, llm=LlmConfig(base_url=url, model="tiny", api_key_env="LLM_KEY")
    )
    gateway = await gateway_factory(
        runtime("tools", "router_tools"), router=config, environ={"LLM_KEY": "s3cret"}
    )
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        answer = (
            await http.post("/v1/execute", json={"prompt": "book a flight to Paris on 2026-06-01"})
        ).json()
    assert answer["function"] == "book_flight"
    # The rules found the destination and the date; the model only adds what was missing.
    assert answer["arguments"]["destination"] == "Paris" and answer["arguments"]["origin"] == "Lyon"
    assert (
        answer["argument_sources"]["origin"] == "llm"
        and answer["argument_sources"]["destination"] == "string"
    )
    body, authorization = llm.requests[0]
    assert authorization == "Bearer s3cret" and body["model"] == "tiny"
    assert body["tool_choice"]["function"]["name"] == "book_flight"
