"""`grpc_reflection` runtimes over TLS: the real grpcio pets server serving TLS (and mutual TLS)
with certificates made by the test; reflection and calls go over the same TLS channel."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.sources.grpc_servers import compile_pets, pets_server, target
from tests.gateway.sources.mcp_servers import ServerProcess
from tests.gateway.sources.tls_certs import SERVER_NAME, Certificates, make_certificates
from toolmesh.config import ConfigError, RuntimeConfig
from toolmesh.config.runtime_config import HeaderFromEnv
from toolmesh.config.tls_config import GrpcTls, PemFromEnv, grpc_target, grpc_tls
from toolmesh.errors import Unavailable
from toolmesh.gateway.sources.factory import service_runtime


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_pets(tmp_path_factory.mktemp("pets"))


@pytest.fixture(scope="module")
def tls_pets(generated: Path, certificates: Certificates) -> Iterator[ServerProcess]:
    server = pets_server(
        generated, "--tls", str(certificates.server_cert), str(certificates.server_key)
    ).start()
    yield server
    server.kill()


@pytest.fixture(scope="module")
def mtls_pets(generated: Path, certificates: Certificates) -> Iterator[ServerProcess]:
    flags = (
        "--tls",
        str(certificates.server_cert),
        str(certificates.server_key),
        "--client-ca",
        str(certificates.ca),
    )
    server = pets_server(generated, *flags).start()
    yield server
    server.kill()


async def call(url: str, name: str, arguments: dict[str, object]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        return await http.post(f"/v1/functions/{name}/invoke", json=arguments)


async def ready(url: str) -> dict[str, bool]:
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        runtimes: dict[str, bool] = (await http.get("/readyz")).json()["runtimes"]
    return runtimes


async def test_a_tls_server_is_read_and_called_with_its_ca_and_metadata(
    gateway_factory: StartGateway, tls_pets: ServerProcess, certificates: Certificates
) -> None:
    tls = GrpcTls(ca_file=str(certificates.ca))
    auth = {"Authorization": HeaderFromEnv(env="PETS_TOKEN", prefix="Bearer ")}
    gateway = await gateway_factory(
        RuntimeConfig(name="pets", grpc_reflection=target(tls_pets), tls=tls, headers=auth),
        environ={"PETS_TOKEN": "s3cret"},
    )
    got = await call(gateway.url, "pets.Pets_GetPet", {"id": 4})
    assert got.status_code == 200, got.text
    assert got.json()["structured"]["id"] == "4"
    assert (await call(gateway.url, "pets.WhoAmI", {})).json()["structured"] == {"name": "Bearer s3cret"}


async def test_server_name_is_the_name_checked_and_relative_files_are_from_the_config_directory(
    tls_pets: ServerProcess, certificates: Certificates
) -> None:
    # "localhost" is not in the certificate: only with server_name does the check pass.
    address = f"grpcs://localhost:{tls_pets.port}"
    tls = GrpcTls(ca_file=certificates.ca.name, server_name=SERVER_NAME)
    source = service_runtime(
        RuntimeConfig(name="pets", grpc_reflection=address, tls=tls), {}, certificates.ca.parent
    )
    await source.start(strict=True)
    try:
        assert "pets.AddPet" in {spec.qualified_name for spec in source.specs}
    finally:
        await source.close()
    unnamed = service_runtime(
        RuntimeConfig(name="pets", grpc_reflection=address, tls=GrpcTls(ca_file=certificates.ca.name)),
        {},
        certificates.ca.parent,
    )
    with pytest.raises(Unavailable, match=r"runtime 'pets': gRPC server .*: TLS failed: "):
        await unnamed.start(strict=True)


async def test_mutual_tls_sends_the_client_certificate_and_without_it_the_server_refuses(
    gateway_factory: StartGateway,
    mtls_pets: ServerProcess,
    certificates: Certificates,
    caplog: pytest.LogCaptureFixture,
) -> None:
    mutual = GrpcTls(
        ca_file=str(certificates.ca),
        cert_file=str(certificates.client_cert),
        key_file=str(certificates.client_key),
    )
    gateway = await gateway_factory(
        RuntimeConfig(name="pets", grpc_reflection=target(mtls_pets), tls=mutual),
        RuntimeConfig(
            name="anonymous",
            grpc_reflection=target(mtls_pets),
            tls=GrpcTls(ca_file=str(certificates.ca)),
            startup_timeout=2,
        ),
    )
    added = await call(gateway.url, "pets.AddPet", {"pet": {"name": "Tom"}})
    assert added.json()["structured"] == {"id": "2", "name": "Tom"}
    assert await ready(gateway.url) == {"pets": True, "anonymous": False}
    # The server closes the connection of a client with no certificate: no TLS error to tell.
    assert f"runtime 'anonymous': gRPC server {target(mtls_pets)}: not reachable within 2 s (" in caplog.text


async def test_tls_material_from_the_environment_serves_as_files_do(
    gateway_factory: StartGateway, mtls_pets: ServerProcess, certificates: Certificates
) -> None:
    """`{ env = ... }` values hold the PEM text itself (a Secret's keys as the gateway's variables)."""
    tls = GrpcTls(
        ca=PemFromEnv(env="PETS_CA"),
        cert=PemFromEnv(env="PETS_CERT"),
        key=PemFromEnv(env="PETS_KEY"),
    )
    environ = {
        "PETS_CA": certificates.ca.read_text(),
        "PETS_CERT": certificates.client_cert.read_text(),
        "PETS_KEY": certificates.client_key.read_text(),
    }
    gateway = await gateway_factory(
        RuntimeConfig(name="pets", grpc_reflection=target(mtls_pets), tls=tls), environ=environ
    )
    added = await call(gateway.url, "pets.AddPet", {"pet": {"name": "Kit"}})
    assert added.status_code == 200, added.text
    assert added.json()["structured"]["name"] == "Kit"


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "runtimes.pets: tls: ca: environment variable PETS_CA is not set"),
        (
            {"PETS_CA": "/etc/certs/ca.pem"},
            "runtimes.pets: tls: ca: environment variable PETS_CA holds no PEM",
        ),
    ],
)
async def test_tls_material_missing_from_the_environment_stops_start_up_naming_it(
    gateway_factory: StartGateway, environ: dict[str, str], message: str
) -> None:
    pets = RuntimeConfig(
        name="pets", grpc_reflection="127.0.0.1:1", tls=GrpcTls(ca=PemFromEnv(env="PETS_CA"))
    )
    with pytest.raises(ConfigError, match=re.escape(message)):
        await gateway_factory(pets, environ=environ)


async def test_a_plaintext_runtime_is_not_served_by_a_tls_server(
    gateway_factory: StartGateway, tls_pets: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = await gateway_factory(
        runtime("tools"), RuntimeConfig(name="pets", grpc_reflection=target(tls_pets), startup_timeout=1)
    )
    assert "runtime 'pets': gRPC server" in caplog.text
    assert await ready(gateway.url) == {"tools": True, "pets": False}


async def test_a_wrong_ca_is_a_source_error_naming_the_runtime_and_the_others_serve(
    gateway_factory: StartGateway, tls_pets: ServerProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other = make_certificates(tmp_path, prefix="other-")
    gateway = await gateway_factory(
        runtime("tools"),
        RuntimeConfig(name="pets", grpc_reflection=target(tls_pets), tls=GrpcTls(ca_file=str(other.ca))),
    )
    assert f"runtime 'pets': gRPC server {target(tls_pets)}: TLS failed: " in caplog.text
    assert await ready(gateway.url) == {"tools": True, "pets": False}
    added = await call(gateway.url, "add", {"a": 2, "b": 3})
    assert added.json()["structured"] == 5


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"mcp_url": "http://127.0.0.1:1/mcp", "tls": True}, "`tls` goes with `grpc_reflection`"),
        ({"grpc_reflection": "grpc://127.0.0.1:1", "tls": True}, "says plaintext (grpc://) but `tls` is set"),
        (
            {"grpc_reflection": "127.0.0.1:1", "tls": {"cert_file": "me.pem"}},
            "the client's certificate and its key together",
        ),
        (
            {"grpc_reflection": "127.0.0.1:1", "tls": {"key": {"env": "KEY"}}},
            "the client's certificate and its key together",
        ),
        (
            {"grpc_reflection": "127.0.0.1:1", "tls": {"ca": {"env": "CA"}, "ca_file": "ca.pem"}},
            "give `ca` or `ca_file`, not both",
        ),
        (
            {"grpc_reflection": "127.0.0.1:1", "tls": {"ca": {"env": "CA", "pem": "-----BEGIN"}}},
            "Extra inputs are not permitted",
        ),
        ({"grpc_reflection": "grpcs://"}, "must be a gRPC target"),
        ({"grpc_reflection": "127.0.0.1:1", "roots": True}, "`roots` goes with `mcp_command` or `mcp_url`"),
    ],
)
def test_tls_settings_that_cannot_work_are_refused_with_the_key_named(
    settings: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        RuntimeConfig.model_validate({"name": "pets", **settings})


def test_a_grpcs_target_asks_for_tls_with_the_systems_roots() -> None:
    config = RuntimeConfig(name="pets", grpc_reflection="grpcs://pets.internal:443")
    assert config.grpc_reflection is not None
    assert grpc_tls(config.grpc_reflection, config.tls) == GrpcTls()
    assert grpc_target(config.grpc_reflection) == "pets.internal:443"
    assert grpc_tls("pets.internal:443", False) is None
