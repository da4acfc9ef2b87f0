"""The router's cost to the gateway: start-up time with a cached model, and resident memory.

    .venv/bin/python bench/router_gateway.py [--routes 200] [--json]

Builds the default model into the cache first if needed (not timed). Then:

* router start-up: `RouterService.start` over the example catalog, in this process,
  with the model cached, first with an empty embedding cache and then again (a restart);
* gateway RSS: `toolmesh up` serving examples/ as a child process, its resident set
  (VmRSS; pods are separate processes) after start-up and after --routes /v1/route
  calls, with the router on and with it off.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from toolmesh.config import EXAMPLE_MODULES, RouterConfig
from toolmesh.directories import default_cache_dir
from toolmesh.gateway.core.free_text import spec_documents
from toolmesh.router.embedding.model import ensure_model
from toolmesh.router.service import RouterService
from toolmesh.runtimes.functions.registry import Registry

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # examples/ imports as a package from the repository root
PROMPTS = [
    "weather in Oslo",
    "add 2 and 3",
    "order 2 tents",
    "what should I pack for Rome",
    "track order ord-7",
]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def start_up(cache: Path) -> dict[str, float]:
    docs = spec_documents(Registry.from_modules(list(EXAMPLE_MODULES)).specs())
    timings = {}
    with tempfile.TemporaryDirectory() as data:
        for label in ("first start (embeds the catalog)", "restart (embeddings cached)"):
            service = RouterService(RouterConfig(cache_dir=cache, data_dir=Path(data)))
            started = time.perf_counter()
            service.start(docs)
            timings[label] = time.perf_counter() - started
            assert service.state == "ready", service.reason
    return timings


def gateway_rss(cache: Path, routes: int, enabled: bool) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as data:
        config = Path(data) / "toolmesh.toml"
        modules = ", ".join(f'"{m}"' for m in EXAMPLE_MODULES)
        config.write_text(
            "[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n"
            f'[[runtimes]]\nname = "examples"\nmodules = [{modules}]\n'
            f'env = {{ PYTHONPATH = "{REPO}" }}\n\n'
            f'[router]\nenabled = {str(enabled).lower()}\ncache_dir = "{cache}"\ndata_dir = "{data}"\n'
        )
        command = [sys.executable, "-m", "toolmesh", "up", "--config", str(config), "--log-level", "warning"]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO
        )
        try:
            assert process.stdout is not None
            ready = json.loads(process.stdout.readline())
            after_start = rss_mb(process.pid)
            with httpx.Client(base_url=f"http://127.0.0.1:{ready['http_port']}") as http:
                for i in range(routes if enabled else 0):
                    http.post(
                        "/v1/route", json={"prompt": PROMPTS[i % len(PROMPTS)] + f" #{i}"}
                    ).raise_for_status()
            return after_start, rss_mb(process.pid)
        finally:
            process.terminate()
            process.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--routes", type=int, default=200)
    parser.add_argument("--cache-dir", default=str(default_cache_dir()))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cache = Path(args.cache_dir)
    ensure_model(cache, progress=lambda step: print(f"model: {step}", file=sys.stderr))

    result = {
        "router_start_s": {k: round(v, 3) for k, v in start_up(cache).items()},
        "gateway_rss_mb": {},
    }
    for enabled in (False, True):
        start, after = gateway_rss(cache, args.routes, enabled)
        label = "router on" if enabled else "router off"
        result["gateway_rss_mb"][label] = {
            "after start-up": round(start, 1),
            f"after {args.routes} routes": round(after, 1),
        }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{os.cpu_count()} cores; model cache {cache}")
    for label, seconds in result["router_start_s"].items():
        print(f"router start-up, cached model, {label:34} {seconds * 1000:8.0f} ms")
    for label, values in result["gateway_rss_mb"].items():
        print(f"gateway RSS, {label:10} " + ", ".join(f"{k}: {v:.0f} MB" for k, v in values.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
