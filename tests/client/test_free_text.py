"""Free text from the Python clients (Client and AsyncClient alike): route, execute, and the
confirmation a call that changes data waits for, against a real gateway with the router on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.client.conftest import Connect, Driven, raises
from tests.gateway.conftest import runtime
from tests.gateway.core.test_free_text import router_config
from toolmesh import ConfirmationInvalid, FunctionNotFound, GrpcClient, NotFromFreeText
from toolmesh.config import GatewayConfig, MeshConfig
from toolmesh.config.jobs_config import JobsConfig
from toolmesh.gateway.server import start_gateway

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_execute_runs_reads_and_confirm_runs_a_planned_call_once(
    connect: Connect, router_cache: Path, tmp_path: Path
) -> None:
    config = MeshConfig(
        gateway=GatewayConfig(http_port=0, grpc_port=0),
        runtimes=(runtime("shop", "inventory_tools"),),
        router=router_config(router_cache, tmp_path),
        jobs=JobsConfig(path=tmp_path / "jobs.sqlite3"),
    )
    gateway = await start_gateway(config, environ={})
    try:
        await drive(connect(gateway.url, timeout=30))
        async with GrpcClient(f"127.0.0.1:{gateway.grpc_port}") as grpc_mesh:
            assert (await grpc_mesh.get_function("get_item")).annotations.read_only
            await raises(FunctionNotFound, grpc_mesh.get_function("nope"))
            await drive(grpc_mesh)  # its methods are coroutines already
    finally:
        await gateway.stop(grace=0)


async def drive(mesh: Driven | GrpcClient) -> None:
    routed = await mesh.route("look up the item with sku HW-001", k=2)
    assert routed["match"] == "get_item" and len(routed["candidates"]) == 2
    looked = await mesh.execute("look up the item with sku HW-001")
    assert looked["status"] == "done" and looked["result"]["structured"]["name"] == "hammer"
    planned = await mesh.execute("remove the item with sku HW-001")
    assert planned["status"] == "needs_confirmation" and planned["confirmation"]["destructive"]
    assert (await mesh.execute("look up the item with sku HW-001"))["result"]["structured"] is not None
    done = await mesh.confirm(planned["confirmation"]["token"])
    assert done["status"] == "done" and done["result"]["content"][0]["text"] == "removed HW-001"
    await raises(ConfirmationInvalid, mesh.confirm(planned["confirmation"]["token"]))
    await raises(NotFromFreeText, mesh.execute("wipe the whole inventory"))
    await mesh.invoke("add_item", {"sku": "HW-001", "name": "hammer", "quantity": 1})
