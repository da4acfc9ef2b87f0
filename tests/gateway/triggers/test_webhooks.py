"""Webhooks: `POST /v1/hooks/NAME` signed as GitHub, Stripe or a generic HMAC sender signs it
becomes a job (202); anything unsigned, wrongly signed or replayed is 401 and runs nothing; a
body that does not fit the function is a dead job naming the problem, never a 5xx."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

import httpx
import pytest

from tests.gateway.conftest import StartGateway, finished, wait_job
from toolmesh.config.jobs_config import TriggerConfig
from toolmesh.gateway.server import Gateway

SECRET = "It's a Secret to Everybody"
ENV = {"HOOK_SECRET": SECRET}
GITHUB = TriggerConfig(name="github", function="echo", webhook="github", secret_env="HOOK_SECRET")
STRIPE = TriggerConfig(
    name="stripe", function="echo", webhook="stripe", secret_env="HOOK_SECRET", signature="stripe"
)
WHOLE = TriggerConfig(
    name="whole", function="echo", webhook="whole", secret_env="HOOK_SECRET", argument="text"
)


def github_headers(body: bytes, secret: str = SECRET) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "content-type": "application/json",
        "x-github-event": "push",
        "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "x-hub-signature-256": f"sha256={digest}",
    }


def stripe_headers(body: bytes, stamp: int, secret: str = SECRET) -> dict[str, str]:
    signed = f"{stamp}.".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return {"content-type": "application/json", "stripe-signature": f"t={stamp},v1={digest},v0=deadbeef"}


async def hooks(gateway_factory: StartGateway, **settings: Any) -> Gateway:
    return await gateway_factory(triggers=[GITHUB, STRIPE, WHOLE], environ=ENV, **settings)


async def trigger_jobs(http: httpx.AsyncClient) -> list[dict[str, Any]]:
    return [j for j in (await http.get("/v1/jobs")).json()["jobs"] if j.get("trigger")]


async def test_a_github_delivery_becomes_a_job_that_runs(gateway_factory: StartGateway) -> None:
    gateway = await hooks(gateway_factory)
    body = json.dumps({"text": "pushed"}).encode()
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        response = await http.post("/v1/hooks/github", content=body, headers=github_headers(body))
        assert response.status_code == 202, response.text
        job = response.json()
        assert job["trigger"] == "github" and response.headers["location"] == f"/v1/jobs/{job['id']}"
        assert job["request_id"] == "hook:72d3162e-cc78-11e3-81ab-4c9367dc0958"
        done = await wait_job(http, job["id"], finished)
    assert done["status"] == "succeeded" and "pushed" in str(done["result"])


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"x-hub-signature-256": "sha256=" + "0" * 64},
        {"x-hub-signature-256": "sha1=abc"},
        {"x-signature-256": "sha256=" + "0" * 64},
    ],
    ids=["unsigned", "wrong", "other-scheme", "wrong-generic"],
)
async def test_a_request_not_signed_with_the_secret_is_401_and_runs_nothing(
    gateway_factory: StartGateway, headers: dict[str, str]
) -> None:
    gateway = await hooks(gateway_factory)
    body = json.dumps({"text": "forged"}).encode()
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        response = await http.post("/v1/hooks/github", content=body, headers=headers)
        assert response.status_code == 401, response.text
        assert response.json()["error"]["code"] == "unauthenticated"
        other = await http.post("/v1/hooks/github", content=body, headers=github_headers(body, "not it"))
        assert other.status_code == 401
        assert await trigger_jobs(http) == []


async def test_the_generic_hmac_header_is_accepted(gateway_factory: StartGateway) -> None:
    gateway = await hooks(gateway_factory)
    body = b'{"text": "generic"}'
    digest = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        response = await http.post(
            "/v1/hooks/github", content=body, headers={"x-signature-256": f"sha256={digest}"}
        )
        assert response.status_code == 202, response.text


async def test_stripe_signatures_are_checked_with_their_replay_window(gateway_factory: StartGateway) -> None:
    gateway = await hooks(gateway_factory)
    body = json.dumps({"text": "evt_1"}).encode()
    now = int(time.time())
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        fresh = await http.post("/v1/hooks/stripe", content=body, headers=stripe_headers(body, now))
        assert fresh.status_code == 202, fresh.text
        replayed = await http.post("/v1/hooks/stripe", content=body, headers=stripe_headers(body, now - 600))
        assert replayed.status_code == 401
        assert "replay window" in replayed.json()["error"]["message"]
        # This hook demands Stripe's signature: GitHub's, even correct, does not do.
        github = await http.post("/v1/hooks/stripe", content=body, headers=github_headers(body))
        assert github.status_code == 401
        tampered = await http.post(
            "/v1/hooks/stripe", content=body.replace(b"evt_1", b"evt_2"), headers=stripe_headers(body, now)
        )
        assert tampered.status_code == 401
        assert len(await trigger_jobs(http)) == 1


async def test_bodies_that_do_not_fit_are_dead_jobs_naming_the_problem(gateway_factory: StartGateway) -> None:
    gateway = await hooks(gateway_factory)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        for body, says in [
            (b'{"txt": "typo"}', "txt"),
            (b"[1, 2]", "JSON object"),
            (b"{not json", "not JSON"),
        ]:
            response = await http.post("/v1/hooks/github", content=body, headers=github_headers(body))
            assert response.status_code == 202, response.text
            job = response.json()
            assert job["status"] == "dead" and says in job["error"]["message"], job
        dead = (await http.get("/v1/jobs", params={"status": "dead"})).json()["jobs"]
        assert len(dead) == 3


async def test_argument_passes_the_whole_payload_as_one_argument(gateway_factory: StartGateway) -> None:
    gateway = await hooks(gateway_factory)
    body = b'"the whole thing"'
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        response = await http.post("/v1/hooks/whole", content=body, headers=github_headers(body))
        assert response.status_code == 202, response.text
        done = await wait_job(http, response.json()["id"], finished)
    assert done["status"] == "succeeded" and "the whole thing" in str(done["result"])


async def test_unknown_hooks_and_big_bodies_are_refused_before_anything_runs(
    gateway_factory: StartGateway,
) -> None:
    gateway = await hooks(gateway_factory, max_body_bytes=2048)
    big = json.dumps({"text": "x" * 4096}).encode()
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        assert (await http.post("/v1/hooks/nope", content=b"{}")).status_code == 404
        response = await http.post("/v1/hooks/github", content=big, headers=github_headers(big))
        assert response.status_code == 413
        assert await trigger_jobs(http) == []


async def test_a_webhook_whose_secret_is_not_in_the_environment_fails_start_up(
    gateway_factory: StartGateway,
) -> None:
    from toolmesh.config import ConfigError

    with pytest.raises(ConfigError, match="HOOK_SECRET is not set"):
        await gateway_factory(triggers=[GITHUB])
