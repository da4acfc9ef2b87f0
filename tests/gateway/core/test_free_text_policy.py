"""Free text never does harm: through a real gateway, only read_only functions run from
`/v1/execute` at once; any other call is planned and waits for a one-time confirmation bound to
its caller, function and arguments; `free_text="never"` never runs; and what the router chose
alone teaches it nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

import toolmesh
from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.core.test_free_text import router_config
from tests.gateway.grpc.test_mesh_servicer import failure, mesh_stub
from toolmesh.config import KeyConfig, hash_key
from toolmesh.gateway.server import Gateway
from toolmesh.gateway.state.confirmations import LocalConfirmations, PendingCall
from toolmesh.v1 import mesh_pb2

KEYS = [
    KeyConfig(name="teacher", key_hash=hash_key("teacher-key"), scopes=("*", "@learn")),
    KeyConfig(name="other", key_hash=hash_key("other-key"), scopes=("*",)),
]
TEACHER = {"Authorization": "Bearer teacher-key"}
OTHER = {"Authorization": "Bearer other-key"}


@pytest.fixture
async def inventory(gateway_factory: StartGateway, router_cache: Path, tmp_path: Path) -> Gateway:
    return await gateway_factory(
        runtime("shop", "inventory_tools"), keys=KEYS, router=router_config(router_cache, tmp_path)
    )


async def stock(http: httpx.AsyncClient) -> list[str]:
    """The skus in stock, asked directly (not through free text)."""
    answer = await http.post("/v1/functions/list_items/invoke", json={}, headers=TEACHER)
    listed: list[str] = answer.json()["structured"]
    return listed


async def test_a_destructive_call_waits_for_its_confirmation_and_runs_once(inventory: Gateway) -> None:
    async with httpx.AsyncClient(base_url=inventory.url, timeout=30) as http:
        await http.post(
            "/v1/functions/add_item/invoke",
            json={"sku": "GR-001", "name": "grapes", "quantity": 4},
            headers=TEACHER,
        )
        planned = await http.post(
            "/v1/execute", json={"prompt": "remove the item with sku GR-001"}, headers=TEACHER
        )
        answer = planned.json()
        assert planned.status_code == 200 and answer["status"] == "needs_confirmation"
        assert answer["function"] == "remove_item" and answer["arguments"] == {"sku": "GR-001"}
        assert answer["result"] is None
        confirmation = answer["confirmation"]
        assert confirmation["destructive"] is True and "destructive" in confirmation["reason"]
        assert confirmation["expires_in"] > 0 and confirmation["carried"] == []
        assert await stock(http) == ["GR-001", "HW-001"], "nothing ran before the confirmation"

        # Another key cannot use it (and does not spend it).
        stolen = await http.post("/v1/execute", json={"confirm": confirmation["token"]}, headers=OTHER)
        assert stolen.status_code == 403 and stolen.json()["error"]["code"] == "permission_denied"

        done = await http.post("/v1/execute", json={"confirm": confirmation["token"]}, headers=TEACHER)
        assert done.status_code == 200, done.text
        ran = done.json()
        assert ran["status"] == "done" and ran["function"] == "remove_item"
        assert ran["arguments"] == {"sku": "GR-001"} and ran["routing_id"] == answer["routing_id"]
        assert ran["result"]["content"][0]["text"] == "removed GR-001"
        assert await stock(http) == ["HW-001"]

        again = await http.post("/v1/execute", json={"confirm": confirmation["token"]}, headers=TEACHER)
        assert again.status_code == 409 and again.json()["error"]["code"] == "confirmation_invalid"


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"confirm": "not a token!"}, 400, "confirm"),
        ({"confirm": 5}, 400, "confirm"),
        ({"confirm": "x" * 65}, 400, "confirm"),
        ({"confirm": "abc", "prompt": "remove the item with sku HW-001"}, 400, "prompt"),
        ({"confirm": "abcdefghijklmnop"}, 409, "confirm"),
    ],
)
async def test_bad_confirmations_get_a_clear_4xx(
    inventory: Gateway, body: dict[str, Any], status: int, param: str
) -> None:
    async with httpx.AsyncClient(base_url=inventory.url, timeout=30) as http:
        response = await http.post("/v1/execute", json=body, headers=TEACHER)
    assert response.status_code == status and response.json()["error"]["param"] == param


async def test_read_only_calls_run_at_once_and_never_policies_refuse(inventory: Gateway) -> None:
    async with httpx.AsyncClient(base_url=inventory.url, timeout=30) as http:
        looked = (
            await http.post(
                "/v1/execute", json={"prompt": "look up the item with sku HW-001"}, headers=TEACHER
            )
        ).json()
        assert looked["status"] == "done" and looked["function"] == "get_item"
        assert looked["confirmation"] is None and looked["result"]["structured"]["name"] == "hammer"
        never = await http.post("/v1/execute", json={"prompt": "wipe the whole inventory"}, headers=TEACHER)
        error = never.json()["error"]
        assert never.status_code == 403 and error["code"] == "not_from_free_text"
        assert error["function"] == "wipe_inventory" and "call it directly" in error["message"]
        assert await stock(http) == ["HW-001"]


async def test_a_runtime_can_make_free_text_confirm_or_run(
    gateway_factory: StartGateway, router_cache: Path, tmp_path: Path
) -> None:
    shop = runtime("shop", "inventory_tools", free_text={"*": "confirm", "restock": "run"})
    gateway = await gateway_factory(shop, router=router_config(router_cache, tmp_path))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        listed = {
            f["name"]: f["annotations"]["free_text"]
            for f in (await http.get("/v1/functions")).json()["functions"]
        }
        assert listed["restock"] == "run" and listed["get_item"] == "confirm"
        looked = (await http.post("/v1/execute", json={"prompt": "look up the item with sku HW-001"})).json()
        assert looked.get("status") == "needs_confirmation" and looked["function"] == "get_item", looked
        added = (await http.post("/v1/execute", json={"prompt": "restock sku HW-001 with 3 units"})).json()
        assert added.get("status") == "done" and added["function"] == "restock", added


async def test_grpc_execute_plans_and_confirms_like_http(inventory: Gateway) -> None:
    channel, mesh = mesh_stub(inventory)
    teacher = (("authorization", "Bearer teacher-key"),)
    other = (("authorization", "Bearer other-key"),)
    async with channel:
        planned = await mesh.Execute(
            mesh_pb2.ExecuteRequest(prompt="remove the item with sku HW-001"), metadata=teacher
        )
        assert planned.status == "needs_confirmation" and planned.function == "remove_item"
        assert planned.arguments_json == b'{"sku": "HW-001"}' and not planned.result_json
        assert planned.confirmation.destructive and planned.confirmation.token
        denied = await failure(
            mesh.Execute(mesh_pb2.ExecuteRequest(confirm=planned.confirmation.token), metadata=other)
        )
        assert isinstance(denied, toolmesh.PermissionDenied)
        mixed = await failure(
            mesh.Execute(
                mesh_pb2.ExecuteRequest(confirm=planned.confirmation.token, prompt="x"), metadata=teacher
            )
        )
        assert isinstance(mixed, toolmesh.InvalidRequest)
        done = await mesh.Execute(
            mesh_pb2.ExecuteRequest(confirm=planned.confirmation.token), metadata=teacher
        )
        assert done.status == "done" and b"removed HW-001" in done.result_json
        used = await failure(
            mesh.Execute(mesh_pb2.ExecuteRequest(confirm=planned.confirmation.token), metadata=teacher)
        )
        assert isinstance(used, toolmesh.ConfirmationInvalid)
        never = await failure(
            mesh.Execute(mesh_pb2.ExecuteRequest(prompt="wipe the whole inventory"), metadata=teacher)
        )
        assert isinstance(never, toolmesh.NotFromFreeText)


async def test_the_router_learns_from_confirmed_calls_only(inventory: Gateway) -> None:
    """The loop a user saw: every routed call that did not raise was learned, right or wrong, so
    two misrouted prompts pulled a third one their way. Now nothing the router chose alone is
    learned; a confirmed call is."""
    assert inventory.router is not None
    index = inventory.router.router().index
    async with httpx.AsyncClient(base_url=inventory.url, timeout=30) as http:
        for prompt in (
            "look up the item with sku HW-001",
            "show me the item with sku HW-001",
            "what is the item with sku HW-001",
        ):
            answer = await http.post("/v1/execute", json={"prompt": prompt}, headers=TEACHER)
            assert answer.json()["status"] == "done"
        # Routed and run, not confirmed by anyone: nothing learned.
        assert all(index.learned(name) == [] for name in ("get_item", "list_items", "remove_item"))
        planned = (
            await http.post(
                "/v1/execute", json={"prompt": "remove the item with sku HW-001"}, headers=TEACHER
            )
        ).json()
        assert index.learned("remove_item") == [], "planned, not confirmed: nothing learned"
        token = planned["confirmation"]["token"]
        await http.post("/v1/execute", json={"confirm": token}, headers=TEACHER)
        assert index.learned("remove_item") == ["remove the item with sku HW-001"]


async def test_a_follow_up_shows_what_it_carried_from_the_session(inventory: Gateway) -> None:
    async with httpx.AsyncClient(base_url=inventory.url, timeout=30) as http:
        session = {"session_id": "s1"}
        first = await http.post(
            "/v1/execute",
            headers=TEACHER,
            json={"prompt": "restock sku HW-001 with 5 units", **session},
        )
        assert first.status_code == 200, first.text
        token = first.json()["confirmation"]["token"]
        await http.post("/v1/execute", json={"confirm": token}, headers=TEACHER)
        again = (
            await http.post(
                "/v1/execute", json={"prompt": "same again with 7 units", **session}, headers=TEACHER
            )
        ).json()
        assert again["function"] == "restock" and again["status"] == "needs_confirmation", again
        carried = again["confirmation"]["carried"]
        assert carried and all(again["argument_sources"][name] == "previous" for name in carried)
        assert "carried over" in again["confirmation"]["reason"]


async def test_pending_calls_expire_and_are_taken_once(tmp_path: Path) -> None:
    store = LocalConfirmations()
    call = PendingCall("p", "remove_item", {"sku": "A1"}, {"sku": "string"}, "remove A1")
    token = await store.put(call, ttl=0.05)
    await asyncio.sleep(0.1)
    with pytest.raises(toolmesh.ConfirmationInvalid):
        await store.take(token, "p")
    token = await store.put(call, ttl=30)
    with pytest.raises(toolmesh.PermissionDenied):
        await store.take(token, "q")
    assert await store.take(token, "p") == call
    with pytest.raises(toolmesh.ConfirmationInvalid):
        await store.take(token, "p")


async def test_a_question_or_a_prohibition_after_a_destructive_plan_does_not_follow_it(
    inventory: Gateway,
) -> None:
    """A follow-up keeps the session's function only if the router would let it match: neither
    "should I ...?" nor "don't ..." after "remove ..." plans a second removal."""
    async with httpx.AsyncClient(base_url=inventory.url, timeout=30, headers=TEACHER) as http:
        for i, prompt in enumerate(("should I do the same for HW-002?", "don't do the same for HW-002")):
            session = {"session_id": f"s{i}"}
            first = await http.post(
                "/v1/execute", json={"prompt": "remove the item with sku HW-001", **session}
            )
            assert first.json()["function"] == "remove_item"
            answer = (await http.post("/v1/execute", json={"prompt": prompt, **session})).json()
            planned = answer.get("function", answer.get("error", {}).get("function"))
            assert planned != "remove_item" and not answer.get("follow_up"), answer
