"""The HTTP API against a real gateway and real pods: every endpoint, format and error."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx
import pytest

from tests.gateway.conftest import StartGateway, runtime
from toolmesh.config import KeyConfig, hash_key


async def client(gateway_factory: StartGateway, *runtimes: Any, **settings: Any) -> httpx.AsyncClient:
    gateway = await gateway_factory(*runtimes, **settings)
    return httpx.AsyncClient(base_url=gateway.url, timeout=10)


def error_of(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"type", "code", "message", "param"} <= set(body["error"])
    return dict(body["error"])


async def test_list_and_describe_functions(gateway_factory: StartGateway) -> None:
    async with await client(gateway_factory) as http:
        listing = (await http.get("/v1/functions")).json()["functions"]
        names = {f["name"] for f in listing}
        assert {"add", "echo", "counter.increment"} <= names
        add = next(f for f in listing if f["name"] == "add")
        assert add["parameters"]["properties"]["a"]["type"] == "integer"
        assert add["output_schema"] == {"type": "integer"}
        assert add["annotations"]["read_only"] is False
        one = await http.get("/v1/functions/counter.increment")
        assert one.status_code == 200 and one.json()["namespace"] == "counter"
        by_tool_name = await http.get("/v1/functions/counter__increment")
        assert by_tool_name.json()["name"] == "counter.increment"


async def test_invoke_each_result_kind(gateway_factory: StartGateway) -> None:
    async with await client(gateway_factory) as http:
        added = (await http.post("/v1/functions/add/invoke", json={"a": 2, "b": 40})).json()
        assert added["is_error"] is False
        assert added["content"] == [{"type": "json", "json": 42}]
        assert added["structured"] == 42
        text = (await http.post("/v1/functions/echo/invoke", json={"text": "héllo"})).json()
        assert text["content"] == [{"type": "text", "text": "héllo"}] and text["structured"] is None
        blob = (await http.post("/v1/functions/blob/invoke")).json()
        assert blob["content"] == [{"type": "binary", "mime_type": "image/png", "data": "iVBORw0KGgo="}]
        streamed = (await http.post("/v1/functions/count/invoke", json={"n": 2})).json()
        assert [c["text"] for c in streamed["content"]] == ["line 0", "line 1"]
        request_id = (await http.post("/v1/functions/noop/invoke", headers={"X-Request-Id": "req-7"})).json()
        assert request_id["request_id"] == "req-7"


async def test_a_function_that_raises_is_a_result_not_an_http_error(gateway_factory: StartGateway) -> None:
    async with await client(gateway_factory) as http:
        response = await http.post("/v1/functions/fail/invoke", json={"message": "disk full"})
        assert response.status_code == 200
        body = response.json()
        assert body["is_error"] is True
        assert body["error"]["code"] == "function_error"
        assert body["content"] == [{"type": "text", "text": "RuntimeError: disk full"}]


async def test_client_mistakes_get_clear_errors(gateway_factory: StartGateway) -> None:
    async with await client(gateway_factory) as http:
        malformed = await http.post("/v1/functions/add/invoke", content=b'{"a": 1,')
        assert malformed.status_code == 400
        assert "not valid JSON" in error_of(malformed)["message"]
        not_object = await http.post("/v1/functions/add/invoke", json=[1, 2])
        assert not_object.status_code == 400 and "JSON object" in error_of(not_object)["message"]
        invalid = await http.post("/v1/functions/add/invoke", json={"a": "one", "z": 1})
        assert invalid.status_code == 422
        error = error_of(invalid)
        assert error["code"] == "invalid_arguments"
        assert [(v["path"], v["expected"]) for v in error["violations"]] == [
            ("a", "integer"),
            ("z", "no such argument"),
        ]
        unknown = await http.post("/v1/functions/ad/invoke", json={})
        assert unknown.status_code == 404
        assert error_of(unknown)["suggestions"] == ["add"]
        assert (await http.get("/v1/functions/nope")).status_code == 404
        no_route = await http.get("/v2/whatever")
        assert no_route.status_code == 404 and error_of(no_route)["code"] == "invalid_request"
        wrong_method = await http.get("/v1/functions/add/invoke")
        assert wrong_method.status_code == 405
        bad_format = await http.get("/v1/tools", params={"format": "xml"})
        assert bad_format.status_code == 400 and error_of(bad_format)["param"] == "format"


async def test_timeouts_are_504(gateway_factory: StartGateway) -> None:
    async with await client(gateway_factory) as http:
        own_timeout = await http.post("/v1/functions/sleepy/invoke", json={"seconds": 5})
        assert own_timeout.status_code == 504 and error_of(own_timeout)["code"] == "timeout"
    async with await client(gateway_factory, call_timeout=0.3) as http:
        gateway_limit = await http.post("/v1/functions/block/invoke", json={"seconds": 5})
        assert gateway_limit.status_code == 504


async def test_oversized_and_deep_bodies_are_refused_and_the_gateway_keeps_serving(
    gateway_factory: StartGateway,
) -> None:
    async with await client(gateway_factory) as http:
        huge = await http.post(
            "/v1/functions/echo/invoke", content=b'{"text": "' + b"x" * (2 * 1024 * 1024) + b'"}'
        )
        assert huge.status_code == 413 and error_of(huge)["code"] == "payload_too_large"
        deep = await http.post("/v1/tool_calls", content=b"[" * 100 + b"]" * 100)
        assert deep.status_code == 400 and "deeper than 64" in error_of(deep)["message"]
        very_deep = await http.post("/v1/functions/echo/invoke", content=b'{"a":' * 5000 + b"1" + b"}" * 5000)
        assert very_deep.status_code == 400
        after = await http.post("/v1/functions/echo/invoke", json={"text": "still here"})
        assert after.json()["content"][0]["text"] == "still here"


async def test_tools_in_every_format(gateway_factory: StartGateway) -> None:
    async with await client(gateway_factory) as http:
        pattern = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
        chat = (await http.get("/v1/tools")).json()["tools"]
        assert all(t["type"] == "function" and pattern.match(t["function"]["name"]) for t in chat)
        assert "counter__increment" in {t["function"]["name"] for t in chat}
        strict = (await http.get("/v1/tools", params={"format": "openai", "strict": "true"})).json()["tools"]
        add = next(t["function"] for t in strict if t["function"]["name"] == "add")
        assert add["strict"] is True and add["parameters"]["required"] == ["a", "b"]
        responses = (await http.get("/v1/tools", params={"format": "responses"})).json()["tools"]
        assert all(t["type"] == "function" and "parameters" in t for t in responses)
        cloudflare = (await http.get("/v1/tools", params={"format": "cloudflare"})).json()["tools"]
        assert all(set(t) == {"name", "description", "parameters"} for t in cloudflare)
        mcp = (await http.get("/v1/tools", params={"format": "mcp"})).json()["tools"]
        assert all("inputSchema" in t and "annotations" in t for t in mcp)


async def test_namespaces_and_system_message(gateway_factory: StartGateway) -> None:
    async with await client(gateway_factory) as http:
        body = (await http.get("/v1/namespaces")).json()
        assert body["namespaces"] == [
            {
                "name": "counter",
                "description": "A stateful counter: one instance per pod.",
                "functions": ["counter.increment", "counter.current"],
            }
        ]
        assert body["system_message"]["role"] == "developer"
        assert "counter (2 functions)" in body["system_message"]["content"]


async def test_openapi_health_readiness_metrics(gateway_factory: StartGateway) -> None:
    async with await client(gateway_factory) as http:
        document = (await http.get("/openapi.json")).json()
        assert document["openapi"].startswith("3.1")
        for path in ("/v1/functions", "/v1/functions/{name}/invoke", "/v1/tools", "/v1/tool_calls"):
            assert path in document["paths"]
        assert (await http.get("/healthz")).json() == {"status": "ok"}
        assert (await http.get("/readyz")).json() == {"ready": True, "runtimes": {"tools": True}}
        await http.post("/v1/functions/add/invoke", json={"a": 1})
        metrics = (await http.get("/metrics")).text
        assert 'toolmesh_invocations_total{function="add",outcome="ok"} 1.0' in metrics


async def test_batches_run_concurrently_and_fail_per_call(gateway_factory: StartGateway) -> None:
    async with await client(gateway_factory) as http:
        calls = [{"name": "sync_sleep", "arguments": {"seconds": 0.4}} for _ in range(4)]
        calls += [
            {"name": "nope", "arguments": {}},
            {"name": "add", "arguments": {"a": "x"}},
            {"name": "add", "arguments": "{not json"},
            {"name": "add", "arguments": {"a": 1, "b": 2}},
        ]
        started = asyncio.get_running_loop().time()
        response = await http.post("/v1/tool_calls", json=calls)
        elapsed = asyncio.get_running_loop().time() - started
        assert response.status_code == 200
        results = response.json()["results"]
        assert [r["is_error"] for r in results] == [False] * 4 + [True, True, True, False]
        assert "no function named 'nope'" in results[4]["content"]
        assert "a: expected integer" in results[5]["content"]
        assert results[7]["structured"] == 3
        assert elapsed < 1.2, "four 0.4 s calls must run side by side"
        too_many = await http.post("/v1/tool_calls", json=[{"name": "noop", "arguments": {}}] * 65)
        assert too_many.status_code == 400


async def test_scopes_rate_limits_and_keys_on_http(gateway_factory: StartGateway) -> None:
    keys = [
        KeyConfig(name="narrow", key_hash=hash_key("narrow-key"), scopes=("add", "counter.*")),
        KeyConfig(name="slow", key_env="SLOW_KEY", rate=1, burst=2),
    ]
    gateway = await gateway_factory(runtime(), keys=keys, environ={"SLOW_KEY": "slow-key"})
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        missing = await http.get("/v1/functions")
        assert missing.status_code == 401 and error_of(missing)["code"] == "unauthenticated"
        wrong = await http.get("/v1/functions", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        narrow = {"Authorization": "Bearer narrow-key"}
        visible = {f["name"] for f in (await http.get("/v1/functions", headers=narrow)).json()["functions"]}
        assert visible == {"add", "counter.increment", "counter.current"}
        tools = (await http.get("/v1/tools", headers=narrow)).json()["tools"]
        assert {t["function"]["name"] for t in tools} == {"add", "counter__increment", "counter__current"}
        # Out of scope is answered exactly like unknown, and suggestions name only what the key may call.
        denied = await http.post("/v1/functions/echo/invoke", json={"text": "x"}, headers=narrow)
        unknown = await http.post("/v1/functions/ecko/invoke", json={"text": "x"}, headers=narrow)
        assert denied.status_code == unknown.status_code == 404
        assert error_of(denied)["message"] == error_of(unknown)["message"].replace("ecko", "echo")
        close = await http.post("/v1/functions/counter.incremnt/invoke", json={}, headers=narrow)
        assert set(error_of(close)["suggestions"]) <= {"add", "counter.increment", "counter.current"}
        assert error_of(close)["suggestions"][0] == "counter.increment"
        assert "echo" not in (await http.get("/v1/functions/ech", headers=narrow)).text
        batch = await http.post(
            "/v1/tool_calls", json=[{"name": "echo", "arguments": {"text": "x"}}], headers=narrow
        )
        assert batch.json()["results"][0]["is_error"] is True, "out-of-scope calls fail inside a batch too"
        allowed = await http.post("/v1/functions/add/invoke", json={"a": 1}, headers=narrow)
        assert allowed.status_code == 200
        slow = {"Authorization": "Bearer slow-key"}
        listings = [(await http.get("/v1/functions", headers=slow)).status_code for _ in range(5)]
        assert listings == [200] * 5, "listing does not spend the call budget"
        codes = [(await http.post("/v1/functions/noop/invoke", headers=slow)).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        limited = await http.post("/v1/functions/noop/invoke", headers=slow)
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
        assert (await http.get("/healthz")).status_code == 200, "health needs no key"


async def test_the_openapi_document_describes_exactly_the_routes_the_app_serves(
    gateway_factory: StartGateway,
) -> None:
    from starlette.routing import Route

    from toolmesh.gateway.http.openapi import openapi_document

    gateway = await gateway_factory()
    assert gateway.request_log is not None
    app = gateway.request_log.app  # the Starlette app inside the access log
    # MCP speaks JSON-RPC on its own paths (documented by its spec, not OpenAPI); the document
    # does not describe itself; the web console (and / that leads to it) is pages for people, not API.
    undocumented = {
        *("/", "/openapi.json", "/mcp", "/mcp/{namespace}"),
        *("/ui", "/ui/{name:path}", "/ui/sign-in.json"),
    }
    served = {
        route.path: {m.lower() for m in route.methods or ()} - {"head"}
        for route in app.routes
        if isinstance(route, Route) and route.path not in undocumented
    }
    document = openapi_document()
    assert json.loads(json.dumps(document)) == document
    documented = {path: set(operations) for path, operations in document["paths"].items()}
    assert documented == served


@pytest.mark.parametrize("body", [b"", b"null", b"42", b'"text"'])
async def test_tool_calls_with_bodies_of_the_wrong_shape(gateway_factory: StartGateway, body: bytes) -> None:
    async with await client(gateway_factory) as http:
        response = await http.post("/v1/tool_calls", content=body)
        assert response.status_code == 400


async def test_resources_are_listed_and_read_over_http(gateway_factory: StartGateway) -> None:
    async with await client(gateway_factory, runtime("tools", "feature_tools")) as http:
        listed = (await http.get("/v1/resources")).json()["resources"]
        functions = {f["name"] for f in (await http.get("/v1/functions")).json()["functions"]}
        read = await http.get("/v1/resources/read", params={"uri": "mem://users/ada/profile"})
        failing = await http.get("/v1/resources/read", params={"uri": "mem://users/nobody/profile"})
        unknown = await http.get("/v1/resources/read", params={"uri": "mem://nothing"})
        missing = await http.get("/v1/resources/read")
        as_tool = await http.post("/v1/functions/greeting/invoke", json={})
    by_uri = {r["uri"]: r for r in listed}
    assert set(by_uri) == {
        "mem://greeting",
        "mem://blob",
        "mem://users/{user}/profile",
        "library://catalogue",
    }
    assert (
        by_uri["mem://users/{user}/profile"]["template"]
        and by_uri["mem://users/{user}/profile"]["function"] == "profile"
    )
    assert not {"greeting", "profile", "greet"} & functions  # not tools
    assert read.status_code == 200 and read.json()["structured"] == {"user": "ada"}
    assert failing.status_code == 200 and failing.json()["is_error"]
    assert unknown.status_code == 404 and error_of(unknown)["uri"] == "mem://nothing"
    assert missing.status_code == 400 and error_of(missing)["param"] == "uri"
    assert as_tool.status_code == 404
