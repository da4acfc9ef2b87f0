"""Learning from use through a real gateway: `POST /v1/route/feedback` (which also corrects a wrong
match), confirmed routed calls, the `@learn` permission, persistence across a restart (SQLite
under the router's data dir), and the CLI's removals reaching the running gateway."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

import toolmesh
from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.core.test_free_text import router_config
from tests.gateway.grpc.test_mesh_servicer import failure, mesh_stub
from toolmesh.cli import main
from toolmesh.config import KeyConfig, hash_key
from toolmesh.router.learning import LearnedExamples
from toolmesh.router.service import LEARNED_FILE
from toolmesh.v1 import mesh_pb2

KEYS = [
    KeyConfig(name="teacher", key_hash=hash_key("teacher-key"), scopes=("*", "@learn")),
    KeyConfig(name="plain", key_hash=hash_key("plain-key"), scopes=("*",)),
]
PROMPT = "grab me that thing at https://example.org/report.pdf"
#: Fits set_timer; taught wrongly to send_email first.
PASTA = "ping me when the pasta is done in 9 minutes"
#: Close to none of router_tools' functions, so what is learned decides where it goes.
PARCELS = "ship the parcels left in the warehouse"


async def test_feedback_and_routed_calls_teach_the_router_only_with_learn(
    gateway_factory: StartGateway, router_cache: Path, tmp_path: Path
) -> None:
    config = router_config(router_cache, tmp_path)
    gateway = await gateway_factory(runtime("tools", "router_tools"), keys=KEYS, router=config)
    teacher = {"Authorization": "Bearer teacher-key"}
    plain = {"Authorization": "Bearer plain-key"}
    async with httpx.AsyncClient(base_url=gateway.url, timeout=20) as http:
        routed = (await http.post("/v1/route", json={"prompt": PROMPT}, headers=plain)).json()
        before = {c["name"]: c["score"] for c in routed["candidates"]}
        feedback = {"routing_id": routed["routing_id"], "function": "download_file"}
        denied = await http.post("/v1/route/feedback", json=feedback, headers=plain)
        assert denied.status_code == 403 and "@learn" in denied.json()["error"]["message"]
        taught = await http.post("/v1/route/feedback", json=feedback, headers=teacher)
        assert taught.status_code == 200
        assert taught.json() == {
            "function": "download_file",
            "learned": PROMPT,
            "learned_examples": 1,
            "unlearned": {},
        }
        again = (await http.post("/v1/route", json={"prompt": PROMPT}, headers=plain)).json()
        assert again["match"] == "download_file"
        scores = {c["name"]: c["score"] for c in again["candidates"]}
        assert scores["download_file"] > before.get("download_file", 0) + 0.1
        unknown = {"routing_id": "nope", "function": "download_file"}
        assert (await http.post("/v1/route/feedback", json=unknown, headers=teacher)).status_code == 400
        missing = {"routing_id": routed["routing_id"], "function": "no_such_function"}
        assert (await http.post("/v1/route/feedback", json=missing, headers=teacher)).status_code == 404
        # A call the router chose alone teaches nothing (it may be wrong); a call someone
        # confirmed teaches it, for a caller with @learn only.
        for headers in (plain, teacher):
            done = await http.post(
                "/v1/execute", json={"prompt": "weather in Lisbon please"}, headers=headers
            )
            assert done.status_code == 200 and done.json()["status"] == "done"
            timer = {"prompt": "set a timer for 5 minutes"}
            planned = (await http.post("/v1/execute", json=timer, headers=headers)).json()
            token = planned["confirmation"]["token"]
            confirmed = await http.post("/v1/execute", json={"confirm": token}, headers=headers)
            assert confirmed.json()["status"] == "done" and confirmed.json()["function"] == "set_timer"
    store = LearnedExamples(tmp_path / LEARNED_FILE)
    learned = {(row.function, row.prompt, row.principal) for row in store.listing()}
    store.close()
    assert learned == {
        ("download_file", PROMPT, "teacher"),
        ("set_timer", "set a timer for 5 minutes", "teacher"),
    }
    # Persisted: a gateway started on the same data directory routes with what was learned.
    restarted = await gateway_factory(runtime("tools", "router_tools"), keys=KEYS, router=config)
    async with httpx.AsyncClient(base_url=restarted.url, timeout=20) as http:
        answer = (await http.post("/v1/route", json={"prompt": PROMPT}, headers=plain)).json()
        assert answer["match"] == "download_file"


async def test_grpc_route_feedback_answers_like_http(
    gateway_factory: StartGateway, router_cache: Path, tmp_path: Path
) -> None:
    config = router_config(router_cache, tmp_path)
    gateway = await gateway_factory(runtime("tools", "router_tools"), keys=KEYS, router=config)
    channel, mesh = mesh_stub(gateway)
    teacher = (("authorization", "Bearer teacher-key"),)
    plain = (("authorization", "Bearer plain-key"),)
    async with channel:
        routed = await mesh.Route(mesh_pb2.RouteRequest(prompt=PROMPT), metadata=plain)
        assert routed.routing_id
        request = mesh_pb2.RouteFeedbackRequest(routing_id=routed.routing_id, function="download_file")
        denied = await failure(mesh.RouteFeedback(request, metadata=plain))
        assert isinstance(denied, toolmesh.PermissionDenied)
        taught = await mesh.RouteFeedback(request, metadata=teacher)
        assert (taught.function, taught.learned, taught.learned_examples) == ("download_file", PROMPT, 1)
        unknown = mesh_pb2.RouteFeedbackRequest(routing_id="nope", function="download_file")
        bad = await failure(mesh.RouteFeedback(unknown, metadata=teacher))
        assert isinstance(bad, toolmesh.InvalidRequest) and bad.param == "routing_id"
        # A wrong match corrected, then one only said to be wrong.
        first = await mesh.Route(mesh_pb2.RouteRequest(prompt=PARCELS), metadata=teacher)
        await mesh.RouteFeedback(
            mesh_pb2.RouteFeedbackRequest(routing_id=first.routing_id, function="send_email"),
            metadata=teacher,
        )
        wrong = await mesh.Route(mesh_pb2.RouteRequest(prompt=PARCELS), metadata=teacher)
        assert wrong.match == "send_email"
        corrected = await mesh.RouteFeedback(
            mesh_pb2.RouteFeedbackRequest(routing_id=wrong.routing_id, function="book_flight"),
            metadata=teacher,
        )
        assert (corrected.function, corrected.learned) == ("book_flight", PARCELS)
        assert {k: list(v.prompts) for k, v in corrected.unlearned.items()} == {"send_email": [PARCELS]}
        wrong = await mesh.Route(mesh_pb2.RouteRequest(prompt=PARCELS), metadata=teacher)
        assert wrong.match == "book_flight"
        undone = await mesh.RouteFeedback(
            mesh_pb2.RouteFeedbackRequest(routing_id=wrong.routing_id, wrong=True), metadata=teacher
        )
        assert (undone.function, undone.learned, undone.learned_examples) == ("", "", 0)
        assert {k: list(v.prompts) for k, v in undone.unlearned.items()} == {"book_flight": [PARCELS]}
        both = mesh_pb2.RouteFeedbackRequest(routing_id=wrong.routing_id, function="set_timer", wrong=True)
        refused = await failure(mesh.RouteFeedback(both, metadata=teacher))
        assert isinstance(refused, toolmesh.InvalidRequest) and refused.param == "function"


async def test_feedback_corrects_a_wrong_match_or_only_says_it_was_wrong(
    gateway_factory: StartGateway, router_cache: Path, tmp_path: Path
) -> None:
    config = router_config(router_cache, tmp_path)
    gateway = await gateway_factory(runtime("tools", "router_tools"), keys=KEYS, router=config)
    teacher = {"Authorization": "Bearer teacher-key"}
    async with httpx.AsyncClient(base_url=gateway.url, timeout=20, headers=teacher) as http:

        async def route(prompt: str) -> dict[str, Any]:
            answer: dict[str, Any] = (await http.post("/v1/route", json={"prompt": prompt})).json()
            return answer

        async def feedback(**document: Any) -> httpx.Response:
            return await http.post("/v1/route/feedback", json=document)

        # Taught wrongly: the pasta prompt is learned for send_email, which now matches it.
        assert (
            await feedback(routing_id=(await route(PASTA))["routing_id"], function="send_email")
        ).is_success
        wrong = await route(PASTA)
        assert wrong["match"] == "send_email"
        corrected = await feedback(routing_id=wrong["routing_id"], function="set_timer")
        assert corrected.status_code == 200
        assert corrected.json() == {
            "function": "set_timer",
            "learned": PASTA,
            "learned_examples": 1,
            "unlearned": {"send_email": [PASTA]},
        }
        assert (await route(PASTA))["match"] == "set_timer"

        # Negative feedback alone: what the match taught goes, nothing is learned.
        assert (
            await feedback(routing_id=(await route(PARCELS))["routing_id"], function="book_flight")
        ).is_success
        wrong = await route(PARCELS)
        assert wrong["match"] == "book_flight"
        undone = await feedback(routing_id=wrong["routing_id"], correct=False)
        assert undone.status_code == 200
        assert undone.json() == {
            "function": None,
            "learned": None,
            "learned_examples": 0,
            "unlearned": {"book_flight": [PARCELS]},
        }
        assert (await route(PARCELS))["match"] != "book_flight"
        # A routing that matched nothing: nothing to undo.
        nothing = await feedback(routing_id=(await route(PARCELS))["routing_id"], correct=False)
        assert nothing.json()["unlearned"] == {}

        both = await feedback(routing_id=wrong["routing_id"], correct=False, function="set_timer")
        assert both.status_code == 400 and both.json()["error"]["param"] == "function"
        not_a_bool = await feedback(routing_id=wrong["routing_id"], correct="no")
        assert not_a_bool.status_code == 400 and not_a_bool.json()["error"]["param"] == "correct"
        no_function = await feedback(routing_id=wrong["routing_id"], correct=True)
        assert no_function.status_code == 400 and no_function.json()["error"]["param"] == "function"

        # The CLI removes from the SQLite file the running gateway uses: its very next route follows.
        assert (
            await feedback(routing_id=(await route(PARCELS))["routing_id"], function="book_flight")
        ).is_success
        assert (await route(PARCELS))["match"] == "book_flight"
        removal = ["router", "examples", "remove", "book_flight", "--data-dir", str(tmp_path)]
        assert await asyncio.to_thread(main, removal) == 0
        assert (await route(PARCELS))["match"] != "book_flight"
