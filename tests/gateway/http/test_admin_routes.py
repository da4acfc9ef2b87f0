"""`POST /v1/admin/reload` against a real gateway and real pods: who may call it, and what it answers."""

from __future__ import annotations

import httpx

from tests.gateway.conftest import StartGateway, runtime
from toolmesh.config import KeyConfig, hash_key

KEYS = [
    KeyConfig(name="caller", key_hash=hash_key("caller-key"), scopes=("*",)),
    KeyConfig(name="operator", key_hash=hash_key("operator-key"), scopes=("@admin",)),
]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_reload_needs_the_admin_permission_and_names_each_runtime(
    gateway_factory: StartGateway,
) -> None:
    runtimes = (runtime("tools", min_replicas=1), runtime("more", "pool_tools"))
    gateway = await gateway_factory(*runtimes, keys=KEYS)
    [old_pod] = gateway.pool.sets["tools"].replicas  # type: ignore[attr-defined]
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as http:
        denied = await http.post("/v1/admin/reload", headers=bearer("caller-key"))
        assert denied.status_code == 403 and "'@admin'" in denied.json()["error"]["message"]
        assert (await http.post("/v1/admin/reload")).status_code == 401
        operator = bearer("operator-key")
        unknown = await http.post("/v1/admin/reload", json={"runtime": "nope"}, headers=operator)
        assert unknown.status_code == 404 and unknown.json()["error"]["param"] == "runtime"
        bad = await http.post("/v1/admin/reload", json={"runtimes": ["tools"]}, headers=operator)
        assert bad.status_code == 400
        one = await http.post("/v1/admin/reload", json={"runtime": "tools"}, headers=operator)
        assert one.status_code == 200
        assert one.json() == {
            "ok": True,
            "catalog_changed": False,
            "runtimes": [{"runtime": "tools", "status": "reloaded"}],
        }
        # The warm pod was replaced by one of the new template's, and calls go there.
        pods = [r for r in gateway.pool.sets["tools"].replicas if r.state == "ready"]  # type: ignore[attr-defined]
        assert len(pods) == 1 and pods[0].pid != old_pod.pid
        called = await http.post(
            "/v1/functions/add/invoke", json={"a": 1, "b": 2}, headers=bearer("caller-key")
        )
        assert called.json()["structured"] == 3
        every = await http.post("/v1/admin/reload", headers=operator)
        assert [r["runtime"] for r in every.json()["runtimes"]] == ["tools", "more"]
