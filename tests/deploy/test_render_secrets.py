"""What a service runtime reads from the gateway's environment (`headers` and TLS `{ env = ... }`
values) reaches the gateway's pod from the `toolmesh-keys` Secret, and never the ConfigMap."""

from __future__ import annotations

import tomllib

from tests.deploy.conftest import containers
from toolmesh.config import parse_config
from toolmesh.deploy.render import render

CONFIG = """
[[runtimes]]
name = "billing"
grpc_reflection = "billing.internal:50051"
headers = { authorization = { env = "BILLING_TOKEN", prefix = "Bearer " } }
tls = { ca = { env = "BILLING_CA" }, cert = { env = "BILLING_CERT" }, key = { env = "BILLING_KEY" } }
"""


def test_headers_and_tls_variables_come_from_the_keys_secret() -> None:
    files = render(parse_config(tomllib.loads(CONFIG)))
    (gateway,) = containers(files["deployment-gateway.yaml"])
    for variable in ("BILLING_TOKEN", "BILLING_CA", "BILLING_CERT", "BILLING_KEY"):
        assert {
            "name": variable,
            "valueFrom": {"secretKeyRef": {"name": "toolmesh-keys", "key": variable}},
        } in gateway["env"]
    rendered = tomllib.loads(files["configmap-gateway.yaml"]["data"]["toolmesh.toml"])
    # The ConfigMap names the variables, as the config did: the gateway reads them at start-up.
    assert rendered["runtimes"][0]["tls"] == {
        "ca": {"env": "BILLING_CA"},
        "cert": {"env": "BILLING_CERT"},
        "key": {"env": "BILLING_KEY"},
    }
