"""Mesh gRPC calls: the request id in the response's metadata, and one access-log line each."""

from __future__ import annotations

import json
import logging

import grpc
import pytest

from tests.gateway.conftest import StartGateway
from tests.gateway.grpc.test_mesh_servicer import mesh_stub, request
from toolmesh.error_shapes import from_rpc_error
from toolmesh.errors import FunctionNotFound
from toolmesh.protocol import wire


async def test_the_request_id_comes_back_in_the_metadata(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    channel, mesh = mesh_stub(gateway)
    async with channel:
        generated = mesh.Invoke(request("add", a=1))
        result = wire.result_from_proto(await generated)
        sent = dict(await generated.trailing_metadata())
        assert sent["x-request-id"] == result.request_id and len(result.request_id) == 32
        chosen = mesh.Invoke(request("add", a=1), metadata=(("x-request-id", "from-metadata"),))
        assert wire.result_from_proto(await chosen).request_id == "from-metadata"
        assert dict(await chosen.trailing_metadata())["x-request-id"] == "from-metadata"
        own = request("add", a=1)
        own.request_id = "in-the-message"
        in_message = mesh.Invoke(own, metadata=(("x-request-id", "ignored"),))
        assert wire.result_from_proto(await in_message).request_id == "in-the-message"
        assert dict(await in_message.trailing_metadata())["x-request-id"] == "in-the-message"
        # A refusal keeps both: the id, and the trailers a toolmesh client rebuilds the error from.
        refused = mesh.Invoke(request("no_such_function"), metadata=(("x-request-id", "refused"),))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await refused
        assert dict(caught.value.trailing_metadata())["x-request-id"] == "refused"
        assert isinstance(from_rpc_error(caught.value), FunctionNotFound)
        # A stream's id comes before its first item, in the initial metadata.
        streamed = mesh.InvokeStream(request("count", n=2), metadata=(("x-request-id", "streamed"),))
        assert dict(await streamed.initial_metadata())["x-request-id"] == "streamed"
        assert [event async for event in streamed]


async def test_one_access_line_per_mesh_call_with_its_code(
    gateway_factory: StartGateway, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolmesh.access")
    gateway = await gateway_factory()
    capsys.readouterr()
    channel, mesh = mesh_stub(gateway)
    async with channel:
        await mesh.Invoke(request("add", a=1))
        with pytest.raises(grpc.aio.AioRpcError):
            await mesh.Invoke(request("no_such_function"))
    assert gateway.rpc_log is not None
    gateway.rpc_log.flush()
    err = capsys.readouterr().err
    lines = [json.loads(line) for line in err.splitlines() if '"toolmesh.access"' in line]
    assert [(line["msg"], line["method"], line["code"]) for line in lines] == [
        ("grpc", "/toolmesh.v1.Mesh/Invoke", "OK"),
        ("grpc", "/toolmesh.v1.Mesh/Invoke", "NOT_FOUND"),
    ]
    assert all(line["principal"] == "anonymous" and len(str(line["request_id"])) == 32 for line in lines)
