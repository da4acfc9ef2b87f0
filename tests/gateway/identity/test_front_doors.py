"""One token, every front door: RFC 9728 metadata, MCP, gRPC, jobs, and the audit trail."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import grpc
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.conftest import StartGateway, finished, runtime, wait_job
from tests.gateway.identity.conftest import AUDIENCE, Issuer
from tests.gateway.identity.test_tokens import bearer, oauth
from toolmesh.v1 import function_pb2, mesh_pb2_grpc


async def test_protected_resource_metadata_names_the_issuer_for_each_endpoint(
    gateway_factory: StartGateway, issuer: Issuer
) -> None:
    gateway = await gateway_factory(runtime("tools", "sample_tools", "mcp_tools"), oauth=oauth(issuer))
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        root = await http.get("/.well-known/oauth-protected-resource")
        mcp = await http.get("/.well-known/oauth-protected-resource/mcp")
        counter = await http.get("/.well-known/oauth-protected-resource/mcp/counter")
    assert root.status_code == 200 and root.headers["access-control-allow-origin"] == "*"
    assert root.json() == {
        "resource": AUDIENCE,
        "authorization_servers": [issuer.url],
        "bearer_methods_supported": ["header"],
        "resource_name": "toolmesh",
        "scopes_supported": ["tools.admin", "tools.read"],
    }
    assert mcp.json()["resource"] == f"{AUDIENCE}/mcp"
    assert counter.json()["resource"] == f"{AUDIENCE}/mcp/counter"


async def test_without_oauth_there_is_no_metadata(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        assert (await http.get("/.well-known/oauth-protected-resource")).status_code == 404


async def test_mcp_shows_a_token_only_its_tools_and_refuses_without_one(
    gateway_factory: StartGateway, issuer: Issuer
) -> None:
    gateway = await gateway_factory(runtime("tools", "sample_tools", "mcp_tools"), oauth=oauth(issuer))
    # A token for the MCP endpoint's own resource (what an MCP client asks for) is accepted too.
    token = issuer.token(aud=f"{AUDIENCE}/mcp")
    async with (
        httpx2.AsyncClient(headers=bearer(token), timeout=30) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
    ):
        assert sorted(tool.name for tool in (await client.list_tools()).tools) == ["add", "echo"]
        result = await client.call_tool("echo", {"text": "hi"})
        assert result.content[0].text == "hi"  # type: ignore[union-attr]
    async with httpx.AsyncClient() as http:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        refused = await http.post(f"{gateway.url}/mcp", json=ping, headers=bearer(issuer.token(exp=1)))
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Bearer resource_metadata=")


async def test_grpc_takes_the_token_in_metadata(gateway_factory: StartGateway, issuer: Issuer) -> None:
    gateway = await gateway_factory(runtime(), oauth=oauth(issuer))
    async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.grpc_port}") as channel:
        mesh = mesh_pb2_grpc.MeshStub(channel)
        metadata = (("authorization", f"Bearer {issuer.token()}"),)
        listing = await mesh.ListFunctions(function_pb2.ListFunctionsRequest(), metadata=metadata)
        assert sorted(f.name for f in listing.functions) == ["add", "echo"]
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await mesh.ListFunctions(
                function_pb2.ListFunctionsRequest(),
                metadata=(("authorization", f"Bearer {issuer.unsigned()}"),),
            )
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_a_job_belongs_to_the_tokens_subject(gateway_factory: StartGateway, issuer: Issuer) -> None:
    gateway = await gateway_factory(runtime(), oauth=oauth(issuer))
    prefer = {"prefer": "respond-async"}
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        alice = bearer(issuer.token())
        job = (await http.post("/v1/functions/add/invoke", json={"a": 1}, headers={**alice, **prefer})).json()
        http.headers.update(alice)
        await wait_job(http, job["id"], finished)
        # Alice again with a fresh token (another client): still her job.
        again = await http.get(f"/v1/jobs/{job['id']}", headers=bearer(issuer.token(client_id="cli")))
        assert again.status_code == 200
        bob = await http.get(f"/v1/jobs/{job['id']}", headers=bearer(issuer.token(sub="bob")))
        assert bob.status_code == 404


async def test_every_call_leaves_one_audit_record_without_arguments(
    gateway_factory: StartGateway,
    issuer: Issuer,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolmesh.audit")  # as `toolmesh up` has it
    audit_file = tmp_path / "audit.jsonl"
    audit_file.write_text('{"an": "earlier line, kept"}\n')
    gateway = await gateway_factory(runtime(), oauth=oauth(issuer), audit_file=audit_file)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        headers = {**bearer(issuer.token()), "x-request-id": "audit-1"}
        await http.post("/v1/functions/echo/invoke", json={"text": "secret words"}, headers=headers)
        await http.post("/v1/functions/noop/invoke", json={}, headers={**headers, "x-request-id": "audit-2"})
    await gateway.stop()  # writes what is buffered
    lines = audit_file.read_text().splitlines()
    assert lines[0] == '{"an": "earlier line, kept"}'  # appended to, never truncated
    records = [json.loads(line) for line in lines[1:]]
    found = [
        {k: r[k] for k in ("logger", "principal", "client_id", "function", "outcome", "request_id")}
        for r in records
    ]
    expected = {"logger": "toolmesh.audit", "principal": "alice", "client_id": "test-client"}
    assert found == [
        {**expected, "function": "echo", "outcome": "ok", "request_id": "audit-1"},
        {**expected, "function": "noop", "outcome": "function_not_found", "request_id": "audit-2"},
    ]
    assert all(r["duration_ms"] >= 0 and r["trace_id"] == "" for r in records)
    assert "secret" not in audit_file.read_text()
    # The same records went to the log.
    logged = [json.loads(line) for line in capfd.readouterr().err.splitlines() if '"toolmesh.audit"' in line]
    assert [r["request_id"] for r in logged] == ["audit-1", "audit-2"]


async def test_the_audit_trail_is_off_when_turned_off(
    gateway_factory: StartGateway, issuer: Issuer, tmp_path: Path
) -> None:
    audit_file = tmp_path / "audit.jsonl"
    gateway = await gateway_factory(runtime(), oauth=oauth(issuer), audit_log=False, audit_file=audit_file)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        await http.post("/v1/functions/echo/invoke", json={"text": "x"}, headers=bearer(issuer.token()))
    await gateway.stop()
    assert not audit_file.exists()
