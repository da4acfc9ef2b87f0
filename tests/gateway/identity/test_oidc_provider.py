"""Real tokens from a certified OpenID provider (`oidc-provider` from npm, on loopback under node):
the gateway discovers it, fetches its keys and takes its JWT access tokens (client credentials)."""

from __future__ import annotations

import contextlib
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from tests.conftest import ROOT, missing, require_tool
from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.identity.conftest import AUDIENCE
from tests.gateway.identity.test_tokens import SCOPES, bearer
from toolmesh.oauth_config import OAuthConfig

PROVIDER = Path(__file__).resolve().parent / "oidc"
CLIENT = "toolmesh-test"


@contextlib.contextmanager
def provider(secret: str) -> Iterator[str]:
    node = require_tool("node", "Node.js 20+")
    if not (PROVIDER / "node_modules" / "oidc-provider").is_dir():
        missing(f"oidc-provider is not installed: npm ci --prefix {PROVIDER.relative_to(ROOT)}")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [node, str(PROVIDER / "issuer.mjs"), str(port), AUDIENCE, secret],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("ready "), f"oidc-provider did not start: {line!r}"
        yield line.split()[1]
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture
def oidc_issuer() -> Iterator[tuple[str, str]]:
    secret = secrets.token_urlsafe(16)
    with provider(secret) as url:
        yield url, secret


async def access_token(issuer: str, secret: str, scope: str, resource: str = AUDIENCE) -> str:
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{issuer}/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
            auth=(CLIENT, secret),
        )
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token


async def test_tokens_of_a_real_provider_open_each_callers_catalog(
    gateway_factory: StartGateway, oidc_issuer: tuple[str, str]
) -> None:
    issuer, secret = oidc_issuer
    config = OAuthConfig(issuer=issuer, audience=AUDIENCE, scopes=SCOPES)
    gateway = await gateway_factory(runtime(), oauth=config)
    reader = await access_token(issuer, secret, "tools.read")
    admin = await access_token(issuer, secret, "tools.admin")
    elsewhere = await access_token(issuer, secret, "tools.read", resource="https://elsewhere.example.com")
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        listed = (await http.get("/v1/functions", headers=bearer(reader))).json()["functions"]
        assert sorted(f["name"] for f in listed) == ["add", "echo"]
        denied = await http.post("/v1/admin/reload", headers=bearer(reader))
        assert (
            denied.status_code == 403 and 'error="insufficient_scope"' in denied.headers["www-authenticate"]
        )
        assert (await http.post("/v1/admin/reload", headers=bearer(admin))).status_code == 200
        wrong = await http.get("/v1/functions", headers=bearer(elsewhere))
        assert wrong.status_code == 401 and "not for this resource" in wrong.json()["error"]["message"]
        metadata = (await http.get("/.well-known/oauth-protected-resource")).json()
        assert metadata["authorization_servers"] == [issuer]
    async with (
        httpx2.AsyncClient(headers=bearer(reader), timeout=30) as client_http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=client_http)) as client,
    ):
        assert sorted(tool.name for tool in (await client.list_tools()).tools) == ["add", "echo"]
        started = time.monotonic()
        result = await client.call_tool("add", {"a": 40, "b": 2})
        assert not result.is_error and time.monotonic() - started < 10


class MemoryTokens:
    """The MCP SDK's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def test_the_mcp_sdk_finds_the_issuer_from_the_challenge_and_gets_its_own_token(
    gateway_factory: StartGateway, oidc_issuer: tuple[str, str]
) -> None:
    # As a custom connector would: the client knows only the gateway's URL and its credentials;
    # the 401's resource_metadata leads it to the issuer, and it asks for a token for the gateway.
    issuer, secret = oidc_issuer
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    public_url = f"http://127.0.0.1:{port}"
    config = OAuthConfig(issuer=issuer, scopes=SCOPES)
    gateway = await gateway_factory(runtime(), oauth=config, http_port=port, public_url=public_url)
    storage = MemoryTokens()
    oauth = ClientCredentialsOAuthProvider(
        f"{gateway.url}/mcp", storage, CLIENT, secret, scope="tools.read", issuer=issuer
    )
    async with (
        httpx2.AsyncClient(auth=oauth, timeout=30) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
    ):
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert (await client.call_tool("echo", {"text": "signed in"})).content[0].text == "signed in"  # type: ignore[union-attr]
    # The SDK asks for the scopes the challenge names (the MCP spec's order of preference) over its
    # own: here both, so the token opens the admin's catalog.
    assert storage.tokens is not None and set(storage.tokens.scope.split()) == {"tools.read", "tools.admin"}
    assert len(tools) == len(gateway.mesh.catalog) and {"add", "echo", "noop"} <= set(tools)
