"""Real tokens from a certified OpenID provider (`oidc-provider` from npm, on loopback under node):
the gateway discovers it, fetches its keys and takes its JWT access tokens (client credentials)."""

from __future__ import annotations

import contextlib
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import jwt
import pytest
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from tests.conftest import ROOT, missing, require_tool
from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.http.console.test_console_e2e import CHROMIUM_ARGS
from tests.gateway.identity.conftest import AUDIENCE
from tests.gateway.identity.test_tokens import SCOPES, bearer
from toolmesh.config.oauth_config import OAuthConfig

try:
    from playwright.async_api import async_playwright, expect
except ImportError:  # pragma: no cover - the dev extras install it
    async_playwright = None  # type: ignore[assignment]

PROVIDER = Path(__file__).resolve().parent / "oidc"
CLIENT = "toolmesh-test"


@contextlib.contextmanager
def provider(secret: str, console_redirect: str | None = None) -> Iterator[str]:
    node = require_tool("node", "Node.js 20+")
    if not (PROVIDER / "node_modules" / "oidc-provider").is_dir():
        missing(f"oidc-provider is not installed: npm ci --prefix {PROVIDER.relative_to(ROOT)}")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [node, str(PROVIDER / "issuer.mjs"), str(port), AUDIENCE, secret, *filter(None, [console_redirect])],
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


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
    port = free_port()
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


@pytest.mark.slow
async def test_a_person_signs_in_to_the_console_at_the_issuer_with_pkce(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    chromium = shutil.which("chromium") or require_tool("chromium", "apt-get install chromium")
    if async_playwright is None:
        missing("the playwright package is not installed (pip install -e '.[dev]')")
    port = free_port()
    public_url = f"http://127.0.0.1:{port}"
    with provider(secrets.token_urlsafe(16), console_redirect=f"{public_url}/ui/") as issuer:
        config = OAuthConfig(issuer=issuer, scopes=SCOPES, console_client_id="toolmesh-console")
        gateway = await gateway_factory(runtime(), oauth=config, http_port=port, public_url=public_url)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch_persistent_context(
                str(tmp_path / "profile"), executable_path=chromium, headless=True, args=CHROMIUM_ARGS
            )
            try:
                errors: list[str] = []
                page = browser.pages[0] if browser.pages else await browser.new_page()
                page.on("pageerror", lambda error: errors.append(str(error)))
                await page.goto(f"{gateway.url}/ui/")
                status = page.get_by_role("status")
                await expect(status).to_contain_text("needs an API key")
                await page.get_by_role("button", name="Sign in at 127.0.0.1").click()
                # The provider's own pages: any login and password, then consent.
                await page.locator("input[name=login]").fill("carol")
                await page.locator("input[name=password]").fill("anything")
                await page.get_by_role("button", name="Sign-in").click()
                await page.get_by_role("button", name="Continue").click()
                await expect(status).to_contain_text("functions for this key")
                token = await page.evaluate("sessionStorage.getItem('toolmesh.console.key')")
                assert page.url == f"{gateway.url}/ui/"  # the code is not left in the address
            finally:
                await browser.close()
        assert errors == []
        # The console's token is carol's, for this gateway, with the scopes it offered.
        claims = jwt.decode(token, options={"verify_signature": False})
        assert claims["sub"] == "carol" and claims["aud"] == public_url
        assert {"tools.read", "tools.admin"} <= set(claims["scope"].split())
        async with httpx.AsyncClient(base_url=gateway.url) as http:
            listed = await http.get("/v1/functions", headers=bearer(token))
            offer = (await http.get("/ui/sign-in.json")).json()
            page_policy = (await http.get("/ui/")).headers["content-security-policy"]
        assert listed.status_code == 200 and len(listed.json()["functions"]) == len(gateway.mesh.catalog)
        assert offer["client_id"] == "toolmesh-console" and offer["resource"] == public_url
        assert offer["scope"] == "openid tools.admin tools.read"
        # The page may fetch from the issuer's token endpoint, and from nowhere else.
        assert page_policy.endswith(f"connect-src 'self' {issuer}")


async def test_without_a_console_client_the_console_offers_no_sign_in(
    gateway_factory: StartGateway, oidc_issuer: tuple[str, str]
) -> None:
    issuer, _ = oidc_issuer
    gateway = await gateway_factory(
        runtime(), oauth=OAuthConfig(issuer=issuer, audience=AUDIENCE, scopes=SCOPES)
    )
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        offer = await http.get("/ui/sign-in.json")
        page_policy = (await http.get("/ui/")).headers["content-security-policy"]
    assert offer.status_code == 200 and offer.json() == {}
    assert "connect-src" not in page_policy
