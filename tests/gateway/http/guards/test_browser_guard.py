"""Web pages cannot use an open gateway: Host, Origin and Content-Type checks on a real one."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.datastructures import Headers

from tests.gateway.conftest import StartGateway
from toolmesh.config import McpConfig
from toolmesh.errors import PermissionDenied
from toolmesh.gateway.http.guards.browser_guard import (
    HOSTS_REMEMBERED,
    BrowserGuard,
    host_allowed,
    origin_allowed,
    split_host,
)

EVIL = "https://evil.example"


async def current(http: httpx.AsyncClient) -> int:
    response = await http.post("/v1/functions/counter.current/invoke", json={})
    return int(response.json()["structured"])


async def test_a_cross_origin_simple_post_runs_nothing(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()  # no keys: the open default
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        before = await current(http)
        # What a page sends with fetch(..., {mode: "no-cors", body: "{}"}): no preflight.
        forged = await http.post(
            "/v1/functions/counter.increment/invoke",
            content=b'{"by": 5}',
            headers={"Origin": EVIL, "Content-Type": "text/plain;charset=UTF-8"},
        )
        # The same from a browser that sends no Origin, and as a form post.
        no_origin = await http.post(
            "/v1/functions/counter.increment/invoke",
            content=b'{"by": 5}',
            headers={"Content-Type": "text/plain"},
        )
        form = await http.post(
            "/v1/tool_calls",
            content=b"name=counter.increment",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        with_json = await http.post(
            "/v1/functions/counter.increment/invoke", json={"by": 5}, headers={"Origin": EVIL}
        )
        after = await current(http)
    assert forged.status_code == 403 and forged.json()["error"]["param"] == "Origin"
    assert "evil.example" in forged.json()["error"]["message"]
    assert no_origin.status_code == 415 and no_origin.json()["error"]["param"] == "Content-Type"
    assert no_origin.json()["error"]["code"] == "unsupported_media_type"
    assert form.status_code == 415
    assert with_json.status_code == 403
    assert after == before, "no forged request ran the function"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/functions"),
        ("GET", "/metrics"),
        ("POST", "/v1/functions/counter.current/invoke"),
        ("POST", "/v1/tool_calls"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/mcp"),
    ],
)
async def test_a_rebound_host_name_is_refused_everywhere(
    gateway_factory: StartGateway, method: str, path: str
) -> None:
    gateway = await gateway_factory()
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        # DNS rebinding: the page's own name, now resolving to 127.0.0.1; its own origin.
        headers = {"Host": f"rebind.evil.example:{gateway.http_port}"}
        response = await http.request(method, path, json={}, headers=headers)
    assert response.status_code == 403
    error = response.json()["error"]
    if path == "/mcp":
        assert error["data"]["param"] == "Host"  # a JSON-RPC error, as MCP clients expect
    else:
        assert error["param"] == "Host" and "allowed_hosts" in error["message"]


async def test_what_is_allowed(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(
        allowed_hosts=("*.internal.example",),
        allowed_origins=("https://app.example.com",),
        mcp=McpConfig(allowed_origins=("https://inspector.example",)),
    )
    own = f"127.0.0.1:{gateway.http_port}"
    async with httpx.AsyncClient(base_url=gateway.url) as http:

        async def status(**headers: str) -> int:
            return (
                await http.post("/v1/functions/counter.current/invoke", json={}, headers=headers)
            ).status_code

        assert await status(Host="gw.internal.example") == 200
        assert await status(Host=f"localhost:{gateway.http_port}") == 200
        assert await status(Host="10.1.2.3:8080") == 200, "an IP literal cannot be a rebound name"
        assert await status(Host="internal.example") == 403
        assert await status(Origin=f"http://{own}") == 200, "the gateway's own pages"
        assert await status(Origin="http://localhost:6274") == 200
        assert await status(Origin="https://app.example.com") == 200
        assert await status(Origin="https://inspector.example") == 200, "[mcp] allowed_origins still counts"
        assert await status(Origin="null") == 403
        assert await status(Origin="https://app.example.com.evil.example") == 403
        preflight = await http.options(
            "/v1/functions/counter.current/invoke",
            headers={
                "Origin": "https://app.example.com",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "https://app.example.com"
        answer = await http.post(
            "/v1/functions/counter.current/invoke", json={}, headers={"Origin": "https://app.example.com"}
        )
        assert answer.headers["access-control-allow-origin"] == "https://app.example.com"
        plain = await http.post("/v1/functions/counter.current/invoke", json={})
        assert "access-control-allow-origin" not in plain.headers
        # A body with no Content-Type at all is read as JSON (code often omits it).
        bare = await http.post("/v1/functions/add/invoke", content=b'{"a": 1}')
        assert bare.status_code == 200 and bare.json()["structured"] == 2


def test_host_and_origin_rules() -> None:
    assert split_host("[::1]:8080") == ("::1", "8080") and split_host("Example.COM") == ("example.com", "")
    assert host_allowed("127.0.0.1:8080", ()) and host_allowed("[::1]", ()) and host_allowed(None, ())
    assert host_allowed("app.localhost:3000", ()) and not host_allowed("localhost.evil.example", ())
    assert host_allowed("gw.svc.cluster.local", ("*.svc.cluster.local",))
    assert host_allowed("anything", ("*",))
    assert origin_allowed(None, ()) and origin_allowed("http://[::1]:5173", ())
    assert origin_allowed("https://gw.example:8443", (), host="gw.example:8443")
    assert not origin_allowed("https://gw.example", (), host="gw.example:8443")
    assert not origin_allowed("file://", ()) and not origin_allowed("http://[bad", ())


def test_remembered_host_verdicts_stay_right_past_the_bound() -> None:
    guard = BrowserGuard(Starlette(), allowed_hosts=("*.svc.cluster.local",))
    hosts = [f"h{i}.svc.cluster.local" for i in range(HOSTS_REMEMBERED)]
    hosts += [f"rebound{i}.example" for i in range(HOSTS_REMEMBERED)]
    for _ in range(2):  # the second round is answered (partly) from what the first remembered
        for host in [*hosts, "127.0.0.1:8080", "localhost.evil.example"]:
            scope = {"type": "http", "headers": [(b"host", host.encode())]}
            refused = False
            try:
                guard.check(Headers(scope=scope), "GET")
            except PermissionDenied:
                refused = True
            assert refused == (not host_allowed(host, guard.allowed_hosts)), host
    assert len(guard._hosts) <= HOSTS_REMEMBERED
