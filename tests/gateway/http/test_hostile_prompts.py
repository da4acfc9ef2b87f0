"""Issue #14: one hostile /v1/execute request must not freeze the gateway.

A real `toolmesh up` with the router on, in a process of its own; while prompts built
to be slow are routed and extracted, /healthz is polled every 20 ms and must answer each time
within 100 ms (or four times its time before the load, on a machine slower than that).
Over-long prompts and lone surrogates are the caller's 400, naming the field.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, pod_env
from toolmesh.config.config_defaults import DEFAULT_MAX_PROMPT_CHARS

#: The issue's repro: 68,000 characters, under the 1 MB body limit.
REPRO = "what is 2 plus 2 " * 4000
#: How long /healthz may take while the router works (the issue's acceptance bound), on a quiet
#: machine; on a loaded one, a few times what it took before the load (see `bound`).
HEALTHZ_BOUND = 0.1
#: Polls before the load that measure how fast this machine answers /healthz at all.
QUIET_POLLS = 10


def longest(unit: str, prefix: str = "") -> str:
    """`prefix`, then `unit` repeated up to the longest prompt the gateway accepts."""
    body = unit * (DEFAULT_MAX_PROMPT_CHARS // len(unit) + 1)
    return (prefix + body)[:DEFAULT_MAX_PROMPT_CHARS]


@pytest.fixture(scope="module")
def gateway(router_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`toolmesh up` in a process of its own (the gateway's threads must not share a GIL with the
    test's client, which would time the client too); its URL. Any best candidate is a match, so
    every prompt, however odd, goes on to extraction."""
    directory = tmp_path_factory.mktemp("hostile")
    config = directory / "toolmesh.toml"
    config.write_text(
        "[gateway]\nhttp_port = 0\ngrpc_port = 0\n"
        '[[runtimes]]\nname = "tools"\nmodules = ["hostile_tools"]\n'
        f"[router]\ncache_dir = {json.dumps(str(router_cache))}\n"
        f"data_dir = {json.dumps(str(directory / 'data'))}\nthreshold = -1.0\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "toolmesh", "up", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=pod_env(),
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None
        ready = json.loads(process.stdout.readline())
        yield f"http://127.0.0.1:{ready['http_port']}"
    finally:
        process.terminate()
        process.communicate(timeout=30)


@pytest.fixture
async def http(gateway: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as client:
        yield client


async def poll_healthz(url: str, stop: asyncio.Event, quiet: asyncio.Event, took: list[float]) -> None:
    """Append the seconds each /healthz took, polled every 20 ms until `stop` (on a client of its
    own); `quiet` is set after the first QUIET_POLLS."""
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        while not stop.is_set():
            started = time.perf_counter()
            response = await client.get("/healthz")
            took.append(time.perf_counter() - started)
            if len(took) == QUIET_POLLS:
                quiet.set()
            assert response.status_code == 200
            await asyncio.sleep(0.02)


def bound(healthz: list[float]) -> float:
    """The bound for the polls under load: the issue's 100 ms, or four times the slowest poll
    before the load when the machine itself is that slow (a blocked event loop takes seconds)."""
    return max(HEALTHZ_BOUND, 4 * max(healthz[:QUIET_POLLS]))


async def while_polling(url: str, requests: list[Any]) -> tuple[list[httpx.Response], list[float]]:
    """The answers to `requests`, and every /healthz time: QUIET_POLLS before the load, then under it."""
    stop = asyncio.Event()
    quiet = asyncio.Event()
    took: list[float] = []
    poller = asyncio.create_task(poll_healthz(url, stop, quiet, took))
    await asyncio.wait_for(quiet.wait(), timeout=30)
    try:
        responses = await asyncio.gather(*requests)
    finally:
        await asyncio.sleep(0.1)
        stop.set()
    await poller
    return list(responses), took


def error(response: httpx.Response) -> dict[str, Any]:
    found: dict[str, Any] = response.json()["error"]
    return found


async def test_the_issues_prompt_is_refused_at_once_and_healthz_stays_prompt(
    gateway: str, http: httpx.AsyncClient
) -> None:
    requests = [
        http.post("/v1/execute", json={"prompt": REPRO, "dry_run": True}),
        http.post("/v1/route", json={"prompt": REPRO}),
        # A URL cannot carry the repro; just over the limit then.
        http.get("/v1/tools", params={"query": longest("what is 2 plus 2 ") + "?"}),
    ]
    responses, healthz = await while_polling(gateway, requests)
    for response in responses:
        assert response.status_code == 400, response.text
        problem = error(response)
        assert problem["param"] == "prompt" and str(DEFAULT_MAX_PROMPT_CHARS) in problem["message"]
    print(f"healthz: {len(healthz)} polls, slowest {max(healthz):.3f} s, bound {bound(healthz):.3f} s")
    assert len(healthz) > QUIET_POLLS and max(healthz[QUIET_POLLS:]) < bound(healthz), healthz


@pytest.mark.parametrize(
    ("prompt", "function"),
    [
        # Thousands of numbers, each weighed against each numeric parameter.
        (longest("2 ", "what is 2 plus "), "add"),
        (longest("what is 2 plus 2 "), "add"),
        (longest("5 nights 2 guests 1 room in Oslo ", "book a hotel for "), "book_hotel"),
        # A word boundary at every letter: the email search's old worst case.
        (longest("a.", "what is 2 plus 2 "), "add"),
    ],
)
async def test_the_longest_worst_prompts_are_served_while_healthz_stays_prompt(
    gateway: str, http: httpx.AsyncClient, prompt: str, function: str
) -> None:
    assert len(prompt) == DEFAULT_MAX_PROMPT_CHARS
    # Several at once: more than the router's threads, so some of them wait in its queue.
    requests = [http.post("/v1/execute", json={"prompt": prompt, "dry_run": True}) for _ in range(4)]
    responses, healthz = await while_polling(gateway, requests)
    for response in responses:
        assert response.status_code in (200, 422), response.text
        answer = response.json()
        assert (answer.get("function") or answer["error"]["details"]["function"]) == function
    print(f"healthz: {len(healthz)} polls, slowest {max(healthz):.3f} s, bound {bound(healthz):.3f} s")
    assert len(healthz) > QUIET_POLLS and max(healthz[QUIET_POLLS:]) < bound(healthz), healthz


@pytest.mark.parametrize("path", ["/v1/route", "/v1/execute"])
@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"prompt": "what is 2 plus \ud800 2"}, "prompt"),
        ({"prompt": "what is 2 plus 2", "session_id": "s-\udfff"}, "session_id"),
        ({"prompt": "x" * (DEFAULT_MAX_PROMPT_CHARS + 1)}, "prompt"),
    ],
)
async def test_bad_text_is_a_400_naming_the_field(
    http: httpx.AsyncClient, path: str, body: dict[str, Any], param: str
) -> None:
    # Written with ASCII escapes: a lone surrogate goes as "\ud800", as a hostile client sends it.
    response = await http.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert error(response)["code"] == "invalid_request" and error(response)["param"] == param


async def test_the_longest_prompt_allowed_is_accepted(http: httpx.AsyncClient) -> None:
    answer = await http.post("/v1/route", json={"prompt": longest("what is 2 plus 2 ")})
    assert answer.status_code == 200 and answer.json()["match"] == "add"
