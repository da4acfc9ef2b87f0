"""Learning from use through a real gateway: `POST /v1/route/feedback`, confirmed routed calls,
the `@learn` permission, and persistence across a restart (SQLite under the router's data dir)."""

from __future__ import annotations

from pathlib import Path

import httpx

import toolmesh
from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.core.test_free_text import router_config
from tests.gateway.grpc.test_mesh_servicer import failure, mesh_stub
from toolmesh.config import KeyConfig, hash_key
from toolmesh.router.learning import LearnedExamples
from toolmesh.router.service import LEARNED_FILE
from toolmesh.v1 import mesh_pb2

KEYS = [
    KeyConfig(name="teacher", key_hash=hash_key("teacher-key"), scopes=("*", "@learn")),
    KeyConfig(name="plain", key_hash=hash_key("plain-key"), scopes=("*",)),
]
PROMPT = "grab me that thing at https://example.org/report.pdf"


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
        assert taught.json() == {"function": "download_file", "learned": PROMPT, "learned_examples": 1}
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
