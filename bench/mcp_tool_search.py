"""MCP tool-search mode on a large catalog: what a client reads, and what a search costs.

    .venv/bin/python bench/mcp_tool_search.py [--functions 320] [--calls 200] [--json]

Serves a generated catalog of --functions functions (verbs x nouns, each with a docstring and
three parameters) from one runtime, in a gateway in this process, twice: with the router (the
default model, cached; built first if needed, not timed) and with it off. Then, over raw
2026-07-28 POSTs to the real endpoint:

* bytes a client reads: `tools/list` of `/mcp` (every page) against `/mcp?tools=search`
  (two meta-tools) plus one `search_tools` answer (limit 10);
* latency (wall, sequential, one client): `search_tools` ranked by the router and by keywords,
  and a no-op function through `call_tool` against a direct `tools/call` of it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from toolmesh.config import (
    GatewayConfig,
    JobsConfig,
    McpConfig,
    MeshConfig,
    ProjectConfig,
    RouterConfig,
    RuntimeConfig,
)
from toolmesh.directories import default_cache_dir
from toolmesh.gateway.server import start_gateway
from toolmesh.router.embedding.model import ensure_model

VERBS = ["get", "list", "create", "update", "delete", "search", "export", "archive"]
NOUNS = [
    "invoice", "customer", "order", "ticket", "shipment", "repository", "issue", "calendar_event",
    "email", "forecast", "payment", "refund", "subscription", "product", "inventory_item", "warehouse",
    "employee", "timesheet", "expense", "contract", "lead", "campaign", "survey", "document",
    "folder", "spreadsheet", "meeting", "flight", "hotel_booking", "car_rental", "recipe", "playlist",
    "song", "podcast", "photo", "video", "backup", "server", "database", "dns_record",
]  # fmt: skip
QUERIES = [
    "refund a payment to a customer",
    "what's the weather forecast",
    "book a hotel",
    "delete a dns record",
    "export the timesheets to a spreadsheet",
    "find an email from last week",
    "archive old backups",
    "create a support ticket",
]
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def catalog_module(directory: Path, count: int) -> str:
    lines = ["import toolmesh", ""]
    for verb, noun in itertools.islice(itertools.product(VERBS, NOUNS), count):
        words = noun.replace("_", " ")
        lines += [
            "",
            "@toolmesh.function",
            f"def {verb}_{noun}(id: str = '', query: str = '', limit: int = 10) -> str:",
            f'    """{verb.capitalize()} a {words} (or {words}s) in the back office by id or by a query."""',
            "    return id",
            "",
        ]
    lines += ["", "@toolmesh.function", "def noop() -> None:", '    """Do nothing."""', ""]
    (directory / "bench_catalog.py").write_text("\n".join(lines))
    return "bench_catalog"


async def post(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> httpx.Response:
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if method == "tools/call":
        headers["mcp-name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": ENVELOPE}}
    answer = await http.post(url, json=body, headers=headers)
    assert answer.status_code == 200 and "error" not in answer.json(), answer.text[:300]
    return answer


async def listing_bytes(http: httpx.AsyncClient, url: str) -> tuple[int, int]:
    size, tools, cursor = 0, 0, None
    while True:
        answer = await post(http, url, "tools/list", {"cursor": cursor} if cursor else {})
        size += len(answer.content)
        result = answer.json()["result"]
        tools += len(result["tools"])
        cursor = result.get("nextCursor")
        if cursor is None:
            return size, tools


async def timed(http: httpx.AsyncClient, url: str, calls: int, params: list[dict[str, Any]]) -> list[float]:
    for args in params[:5]:  # warm
        await post(http, url, "tools/call", args)
    seconds = []
    for index in range(calls):
        started = time.perf_counter()
        await post(http, url, "tools/call", params[index % len(params)])
        seconds.append(time.perf_counter() - started)
    return seconds


def ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return f"{statistics.median(ordered) * 1000:.2f} / {p95 * 1000:.2f}"


async def measure(functions: int, calls: int, router_on: bool, work: Path) -> dict[str, Any]:
    module = catalog_module(work, functions)
    data = work / ("on" if router_on else "off")
    router = RouterConfig(enabled=router_on, cache_dir=default_cache_dir(), data_dir=data / "router")
    config = MeshConfig(
        gateway=GatewayConfig(http_port=0, grpc_port=0, access_log=False),
        runtimes=(RuntimeConfig(name="catalog", modules=(module,), env={"PYTHONPATH": str(work)}),),
        mcp=McpConfig(),
        router=router,
        jobs=JobsConfig(path=data / "jobs.sqlite3"),
        project=ProjectConfig(data_dir=data),
    )
    gateway = await start_gateway(config, environ={})
    found: dict[str, Any] = {}
    try:
        async with httpx.AsyncClient(timeout=60) as http:
            full, tools = await listing_bytes(http, f"{gateway.url}/mcp")
            search_url = f"{gateway.url}/mcp?tools=search"
            meta, _ = await listing_bytes(http, search_url)
            one = await post(
                http, search_url, "tools/call", {"name": "search_tools", "arguments": {"query": QUERIES[0]}}
            )
            structured = one.json()["result"]["structuredContent"]
            searches = [{"name": "search_tools", "arguments": {"query": q}} for q in QUERIES]
            found = {
                "tools": tools,
                "list_bytes": full,
                "search_list_bytes": meta,
                "search_answer_bytes": len(one.content),
                "ranking": structured["ranking"],
                "top": [t["name"] for t in structured["tools"][:3]],
                "search": await timed(http, search_url, calls, searches),
            }
            if router_on:
                direct = [{"name": "noop", "arguments": {}}]
                via = [{"name": "call_tool", "arguments": {"name": "noop", "arguments": {}}}]
                found["direct"] = await timed(http, search_url, calls, direct)
                found["call_tool"] = await timed(http, search_url, calls, via)
    finally:
        await gateway.stop(grace=0)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--functions", type=int, default=320)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    ensure_model(default_cache_dir())
    with tempfile.TemporaryDirectory() as work:
        on = asyncio.run(measure(options.functions, options.calls, True, Path(work)))
        off = asyncio.run(measure(options.functions, options.calls, False, Path(work)))
    if options.json:
        json.dump({"router": on, "keyword": off}, sys.stdout)
        return
    print(f"catalog: {on['tools']} tools; a client reads (bytes, ~4 per token):")
    print("| what | bytes |\n|---|---|")
    print(f"| tools/list of /mcp, every page | {on['list_bytes']} |")
    print(f"| tools/list of /mcp?tools=search | {on['search_list_bytes']} |")
    print(f"| one search_tools answer (limit 10) | {on['search_answer_bytes']} |")
    print(f"\n{QUERIES[0]!r}: router's top 3 {on['top']}, keywords' {off['top']}")
    print(f"\nlatency, ms, p50 / p95 over {options.calls} sequential calls:")
    print("| call | ms |\n|---|---|")
    print(f"| search_tools, router ({on['ranking']}) | {ms(on['search'])} |")
    print(f"| search_tools, keywords ({off['ranking']}) | {ms(off['search'])} |")
    print(f"| tools/call noop, direct (fast path) | {ms(on['direct'])} |")
    print(f"| call_tool noop (SDK path) | {ms(on['call_tool'])} |")


if __name__ == "__main__":
    main()
