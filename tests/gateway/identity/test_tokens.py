"""Bearer tokens on a real gateway: a valid token is a caller with its own catalog; every kind of
bad token is refused with 401 and the RFC 9728 challenge; API keys keep working beside them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.identity.conftest import AUDIENCE, Issuer, new_key
from toolmesh.config import KeyConfig, hash_key
from toolmesh.config.oauth_config import OAuthConfig
from toolmesh.gateway.server import Gateway

SCOPES = {"tools.read": ("echo", "add"), "tools.admin": ("*", "@admin")}


def oauth(issuer: Issuer, **settings: Any) -> OAuthConfig:
    return OAuthConfig(
        issuer=issuer.url, audience=AUDIENCE, scopes=SCOPES, **{"jwks_min_interval": 0, **settings}
    )


async def start(gateway_factory: StartGateway, issuer: Issuer, **settings: Any) -> Gateway:
    keys = [KeyConfig(name="ci", key_hash=hash_key("ci-key"), scopes=("noop",))]
    return await gateway_factory(runtime(), keys=keys, oauth=oauth(issuer, **settings))


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def names(http: httpx.AsyncClient, token: str) -> list[str]:
    response = await http.get("/v1/functions", headers=bearer(token))
    assert response.status_code == 200, response.text
    return sorted(f["name"] for f in response.json()["functions"])


async def test_a_token_is_a_caller_with_the_catalog_its_scopes_allow(
    gateway_factory: StartGateway, issuer: Issuer
) -> None:
    gateway = await start(gateway_factory, issuer)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        assert await names(http, issuer.token()) == ["add", "echo"]
        added = await http.post(
            "/v1/functions/add/invoke", json={"a": 2, "b": 3}, headers=bearer(issuer.token())
        )
        assert added.status_code == 200 and added.json()["content"] == [{"type": "json", "json": 5}]
        # Outside its scopes a function is answered as one that does not exist.
        hidden = await http.post("/v1/functions/noop/invoke", json={}, headers=bearer(issuer.token()))
        assert hidden.status_code == 404
        tools = await http.get("/v1/tools", headers=bearer(issuer.token()))
        assert sorted(t["function"]["name"] for t in tools.json()["tools"]) == ["add", "echo"]
        # Scopes add up; the admin's reach everything.
        everything = await names(http, issuer.token(scope="tools.read tools.admin"))
        assert {"add", "echo", "noop", "fail"} <= set(everything)
        # `scp` as a list (Azure AD, Okta) works as well as `scope`.
        assert await names(http, issuer.token(scope=None, scp=["tools.read"])) == ["add", "echo"]
        # The API key keeps working next to tokens.
        assert await names(http, "ci-key") == ["noop"]


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda i: i.token(aud="https://another.example.com"), "not for this resource"),
        (lambda i: i.token(aud=None), "'aud'"),
        (lambda i: i.token(iss="http://127.0.0.1:1"), "another issuer"),
        (lambda i: i.token(exp=1_000_000), "expired"),
        (lambda i: i.token(nbf=4_000_000_000), "not valid yet"),
        (lambda i: i.token(key=new_key()), "signature is not the issuer's"),
        (lambda i: i.token(kid="key-404", key=new_key()), "a key the issuer does not publish"),
        (lambda i: i.unsigned(), "'none' is not accepted"),
        (lambda i: i.hs256_with_public_key(), "'HS256' is not accepted"),
        (lambda i: i.token(sub=None), "'sub'"),
        (lambda i: "eyJhbGciOi.not-a.token", "not a readable JWT"),
        (lambda i: i.token(sub="ci"), "is the name of an API key"),
        (lambda i: i.token(sub="mesh"), "is the name of an API key or of the mesh"),
        (lambda i: i.token() + "A", "signature"),
        (lambda i: i.token().rsplit(".", 1)[0] + ".a*b", "signature is not base64url"),
        (
            lambda i: i.token(headers={"crit": ["urn:example"], "urn:example": 1}),
            "critical header extensions",
        ),
    ],
    ids=[
        "wrong-audience",
        "no-audience",
        "wrong-issuer",
        "expired",
        "not-yet-valid",
        "foreign-signature",
        "unknown-kid",
        "alg-none",
        "hs256-public-key",
        "no-subject",
        "garbage",
        "subject-is-a-key-name",
        "subject-is-the-mesh",
        "signature-too-long",
        "signature-not-base64url",
        "unknown-critical-header",
    ],
)
async def test_bad_tokens_are_refused_with_the_challenge(
    gateway_factory: StartGateway, issuer: Issuer, make: Any, why: str
) -> None:
    gateway = await start(gateway_factory, issuer, clock_skew=5)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        response = await http.get("/v1/functions", headers=bearer(make(issuer)))
    assert response.status_code == 401
    assert why in response.json()["error"]["message"]
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer resource_metadata=")
    assert 'resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/toolmesh"' in challenge
    assert 'scope="tools.admin tools.read"' in challenge


async def test_no_token_gets_the_challenge_and_too_few_scopes_get_403(
    gateway_factory: StartGateway, issuer: Issuer
) -> None:
    gateway = await start(gateway_factory, issuer)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        anonymous = await http.get("/v1/functions")
        assert anonymous.status_code == 401
        assert "resource_metadata=" in anonymous.headers["www-authenticate"]
        # A valid token whose scopes mean nothing here.
        stranger = await http.get("/v1/functions", headers=bearer(issuer.token(scope="email profile")))
        assert stranger.status_code == 403
        assert 'error="insufficient_scope"' in stranger.headers["www-authenticate"]
        # A reader asking for an operator's permission.
        reload = await http.post("/v1/admin/reload", headers=bearer(issuer.token()))
        assert reload.status_code == 403 and "@admin" in reload.json()["error"]["message"]
        assert 'error="insufficient_scope"' in reload.headers["www-authenticate"]
        admin = await http.post("/v1/admin/reload", headers=bearer(issuer.token(scope="tools.admin")))
        assert admin.status_code == 200


async def test_each_subject_has_its_own_rate_limit(gateway_factory: StartGateway, issuer: Issuer) -> None:
    gateway = await start(gateway_factory, issuer, rate=0.5, burst=2)
    async with httpx.AsyncClient(base_url=gateway.url) as http:

        async def call(subject: str) -> int:
            headers = bearer(issuer.token(sub=subject))
            return (await http.post("/v1/functions/add/invoke", json={"a": 1}, headers=headers)).status_code

        assert [await call("alice") for _ in range(3)] == [200, 200, 429]
        # Another subject has a bucket of its own; a new token of the same subject shares its bucket.
        assert await call("bob") == 200
        assert await call("alice") == 429


async def test_a_rotated_key_is_fetched_once_and_forged_kids_do_not_hammer_the_issuer(
    gateway_factory: StartGateway, issuer: Issuer
) -> None:
    gateway = await start(gateway_factory, issuer)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        old = issuer.token()
        assert await names(http, old) == ["add", "echo"]
        fetched = issuer.jwks_requests
        new_kid = issuer.rotate()
        assert await names(http, issuer.token(kid=new_kid)) == ["add", "echo"]
        assert issuer.jwks_requests == fetched + 1
        # The issuer withdraws the old key: the next fetch forgets the tokens it signed, seen or not.
        del issuer.keys["key-1"]
        assert await names(http, issuer.token(kid=issuer.rotate())) == ["add", "echo"]
        assert (await http.get("/v1/functions", headers=bearer(old))).status_code == 401
    # Within the minimum interval since the last fetch (at start), unknown kids cost no fetch.
    limited = await start(gateway_factory, issuer, jwks_min_interval=60)
    async with httpx.AsyncClient(base_url=limited.url) as http:
        before = issuer.jwks_requests
        for n in range(5):
            forged = issuer.token(kid=f"forged-{n}", key=new_key())
            assert (await http.get("/v1/functions", headers=bearer(forged))).status_code == 401
        assert issuer.jwks_requests == before


async def test_an_unreachable_issuer_refuses_tokens_but_not_keys(gateway_factory: StartGateway) -> None:
    config = OAuthConfig(issuer="http://127.0.0.1:9", audience=AUDIENCE, scopes=SCOPES, timeout=1)
    keys = [KeyConfig(name="ci", key_hash=hash_key("ci-key"), scopes=("noop",))]
    gateway = await gateway_factory(runtime(), keys=keys, oauth=config)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        assert await names(http, "ci-key") == ["noop"]
        fake = Issuer(url="http://127.0.0.1:9")
        fake.rotate()
        response = await http.get("/v1/functions", headers=bearer(fake.token()))
        assert response.status_code == 401


async def test_groups_and_roles_grant_what_the_groups_table_says(
    gateway_factory: StartGateway, issuer: Issuer
) -> None:
    gateway = await start(gateway_factory, issuer, groups={"ops": ("noop",), "auditors": ("add",)})
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        # A directory group alone is enough: no scope of the table needed.
        assert await names(http, issuer.token(scope="email", groups=["ops"])) == ["noop"]
        # App roles (Azure AD's `roles`, Keycloak's `realm_access.roles`) count as groups.
        assert await names(http, issuer.token(scope=None, roles="auditors")) == ["add"]
        nested = issuer.token(scope=None, realm_access={"roles": ["ops", "unknown"]})
        assert await names(http, nested) == ["noop"]
        # Groups and scopes add up.
        assert await names(http, issuer.token(groups=["ops"])) == ["add", "echo", "noop"]
        # A group the table does not name grants nothing, and says which ones it knows.
        stranger = await http.get("/v1/functions", headers=bearer(issuer.token(scope=None, groups=["x"])))
        assert stranger.status_code == 403
        assert "groups: auditors, ops" in stranger.json()["error"]["message"]
        # A groups claim of another shape is ignored, not an error.
        odd = await http.get("/v1/functions", headers=bearer(issuer.token(scope=None, groups={"ops": 1})))
        assert odd.status_code == 403


async def test_groups_claims_are_ignored_without_a_groups_table(
    gateway_factory: StartGateway, issuer: Issuer
) -> None:
    gateway = await start(gateway_factory, issuer)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        # "tools.admin" as a group name means nothing unless [oauth] groups says so.
        only_group = await http.get(
            "/v1/functions", headers=bearer(issuer.token(scope=None, groups=["tools.admin"]))
        )
        assert only_group.status_code == 403
