"""An OpenAPI runtime's call against calling the service directly with httpx (issue #29).

A small REST service (Starlette on uvicorn, httptools, uvloop) runs in its own process with a
hand-written OpenAPI document; one GET operation with a path and a query parameter answers JSON.
Side by side, sequential calls (one in flight, warm connections), in interleaved rounds:

  direct httpx      an httpx.AsyncClient calling the service: the baseline
  OpenApiRuntime    the gateway's OpenAPI source calling it (what the pool runs for a call):
                    arguments to a request, the call, the answer to a result. Target: p50 within
                    1.2x of direct httpx.
  via gateway       a client calling `/v1/functions/shop.getItem/invoke` on `toolmesh up` (its own
                    process), which calls the service: two HTTP hops instead of one
  gateway noop      the same client calling a Python no-op function on that gateway (one warm pod):
                    what the gateway's hop costs on its own

    .venv/bin/python bench/openapi_call.py [--calls 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolmesh.config import RuntimeConfig  # noqa: E402
from toolmesh.gateway.sources.openapi import OpenApiRuntime  # noqa: E402
from toolmesh.protocol.calls import Call  # noqa: E402

SERVICE = """
import json, sys
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

async def item(request):
    return JSONResponse({"id": int(request.path_params["id"]), "name": "widget",
                         "detail": request.query_params.get("detail", "short")})

app = Starlette(routes=[Route("/items/{id}", item)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), http="httptools", loop="uvloop",
            log_level="warning", access_log=False, lifespan="off")
"""

DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "bench", "version": "1"},
    "paths": {
        "/items/{id}": {
            "get": {
                "operationId": "getItem",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
                    {
                        "name": "detail",
                        "in": "query",
                        "schema": {"type": "string", "enum": ["short", "long"]},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "an item",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Item"}}},
                    }
                },
            }
        }
    },
    "components": {
        "schemas": {
            "Item": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "name": {"type": "string"},
                    "detail": {"type": "string"},
                },
            }
        }
    },
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(url, timeout=1)
            return
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer")


@contextlib.contextmanager
def process(command: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def timed(call: Callable[[], Awaitable[object]], calls: int) -> list[float]:
    for _ in range(50):  # warm: connections open, caches filled
        await call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1e6)
    return samples


async def measure(
    service: str, gateway: str, document: Path, calls: int, rounds: int
) -> dict[str, list[float]]:
    runtime = OpenApiRuntime(RuntimeConfig(name="shop", openapi=str(document), base_url=service), {})
    await runtime.start()
    arguments = json.dumps({"id": 7, "detail": "long"}).encode()
    expected = {"id": 7, "name": "widget", "detail": "long"}
    results: dict[str, list[float]] = {}
    async with httpx.AsyncClient(base_url=service) as direct, httpx.AsyncClient(base_url=gateway) as client:

        async def call_direct() -> None:
            assert (await direct.get("/items/7", params={"detail": "long"})).json() == expected

        async def call_runtime() -> None:
            result = await runtime.invoke(Call("shop.getItem", arguments), 10)
            assert result.structured == expected

        async def call_gateway() -> None:
            answer = (await client.post("/v1/functions/shop.getItem/invoke", content=arguments)).json()
            assert answer["structured"] == expected, answer

        async def call_noop() -> None:
            answer = (await client.post("/v1/functions/noop/invoke", content=b"{}")).json()
            assert answer["is_error"] is False, answer

        targets = {
            "direct httpx": call_direct,
            "OpenApiRuntime": call_runtime,
            "via gateway": call_gateway,
            "gateway noop": call_noop,
        }
        for _ in range(rounds):
            for name, call in targets.items():
                results.setdefault(name, []).extend(await timed(call, calls))
    await runtime.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000, help="calls per target per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with tempfile.TemporaryDirectory(prefix="tm-bench-") as tmp:
        work = Path(tmp)
        document = work / "shop.json"
        document.write_text(json.dumps(DOCUMENT))
        service_port, http_port = free_port(), free_port()
        service = f"http://127.0.0.1:{service_port}"
        config = work / "toolmesh.toml"
        config.write_text(
            f"[gateway]\nhttp_port = {http_port}\ngrpc_port = 0\naccess_log = false\n"
            '[[runtimes]]\nname = "noop"\nmodules = ["bench.noop_tools"]\nmin_replicas = 1\n'
            'log_level = "warning"\n'
            f'[[runtimes]]\nname = "shop"\nopenapi = "shop.json"\nbase_url = "{service}"\n'
        )
        gateway_env = {**env, "TMPDIR": tmp, "XDG_DATA_HOME": str(work / "data")}
        with (
            process([sys.executable, "-c", SERVICE, str(service_port)], env),
            process([sys.executable, "-m", "toolmesh", "up", "--config", str(config)], gateway_env) as up,
        ):
            assert up.stdout is not None
            up.stdout.readline()  # the ready line
            wait_for(f"{service}/items/1")
            results = asyncio.run(
                measure(service, f"http://127.0.0.1:{http_port}", document, args.calls, args.rounds)
            )
    base = statistics.median(results["direct httpx"])
    print(f"{args.rounds} rounds x {args.calls} sequential calls per target, µs")
    print("| target | p50 µs | p99 µs | p50 vs direct httpx |")
    print("|---|---|---|---|")
    for name, samples in results.items():
        samples.sort()
        p50, p99 = statistics.median(samples), samples[int(len(samples) * 0.99)]
        print(f"| {name} | {p50:.0f} | {p99:.0f} | {p50 / base:.2f}x |")


if __name__ == "__main__":
    main()
