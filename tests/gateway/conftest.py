"""Real gateways for the gateway tests: uvicorn, the gRPC Mesh service and child runtime pods."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

import pytest

from tests.conftest import pod_env
from toolmesh.config import (
    ChatConfig,
    GatewayConfig,
    KeyConfig,
    McpConfig,
    MeshConfig,
    RouterConfig,
    RuntimeConfig,
)
from toolmesh.gateway.server import Gateway, start_gateway


def runtime(name: str = "tools", *modules: str, **settings: Any) -> RuntimeConfig:
    """A runtime whose pod can import the test fixture modules."""
    return RuntimeConfig(
        name=name,
        modules=modules or ("sample_tools",),
        env={"PYTHONPATH": pod_env()["PYTHONPATH"]},
        **settings,
    )


StartGateway = Callable[..., Awaitable[Gateway]]


@pytest.fixture
async def gateway_factory() -> AsyncIterator[StartGateway]:
    """``await gateway_factory(runtime(...), keys=[...], max_body_bytes=2048)``; stopped after the test.

    `mcp` and `chat` set those sections; other keyword arguments go to [gateway].
    """
    started: list[Gateway] = []

    async def start(
        *runtimes: RuntimeConfig,
        keys: Sequence[KeyConfig] = (),
        environ: dict[str, str] | None = None,
        mcp: McpConfig | None = None,
        chat: ChatConfig | None = None,
        router: RouterConfig | None = None,
        **settings: Any,
    ) -> Gateway:
        config = MeshConfig(
            gateway=GatewayConfig(http_port=0, grpc_port=0, **settings),
            runtimes=runtimes or (runtime(),),
            keys=tuple(keys),
            mcp=mcp or McpConfig(),
            chat=chat or ChatConfig(),
            # The router has its own tests (tests/router, tests/gateway/core/test_free_text.py).
            router=router or RouterConfig(enabled=False),
        )
        gateway = await start_gateway(config, environ=environ or {})
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        await gateway.stop(grace=0)


@contextlib.contextmanager
def gateway_in_thread(*runtimes: RuntimeConfig, router: RouterConfig | None = None) -> Iterator[Gateway]:
    """A real gateway on an event loop of its own, in a thread, for blocking clients (schemathesis,
    a sync gRPC channel under hypothesis) that would stall a gateway sharing the test's loop."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="gateway-loop", daemon=True)
    thread.start()
    config = MeshConfig(
        gateway=GatewayConfig(http_port=0, grpc_port=0),
        runtimes=runtimes or (runtime(),),
        router=router or RouterConfig(enabled=False),
    )
    try:
        gateway = asyncio.run_coroutine_threadsafe(start_gateway(config, environ={}), loop).result(120)
        try:
            yield gateway
        finally:
            asyncio.run_coroutine_threadsafe(gateway.stop(grace=0), loop).result(60)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
