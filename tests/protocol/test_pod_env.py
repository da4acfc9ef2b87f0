"""The environment variables a pod reads: named once, read once, written by the same module."""

from __future__ import annotations

import pytest

from toolmesh.protocol.pod_env import (
    MESH_ADDRESS_ENV,
    MESH_TOKEN_ENV,
    POD_ENVIRONMENT,
    PodEnvironment,
    read_environment,
)


def test_reads_the_mesh_address_and_token() -> None:
    environment = read_environment(
        {MESH_ADDRESS_ENV: "127.0.0.1:50051", MESH_TOKEN_ENV: "s3cret", "UNRELATED": "x"}
    )
    assert environment == PodEnvironment(mesh_address="127.0.0.1:50051", mesh_token="s3cret")


@pytest.mark.parametrize("environ", [{}, {MESH_ADDRESS_ENV: "", MESH_TOKEN_ENV: ""}])
def test_unset_or_empty_variables_mean_no_mesh(environ: dict[str, str]) -> None:
    assert read_environment(environ) == PodEnvironment(mesh_address=None, mesh_token="")


@pytest.mark.parametrize(
    "environment", [PodEnvironment("gateway:50051", "s3cret"), PodEnvironment(), PodEnvironment("gw:1")]
)
def test_the_variables_it_writes_read_back_the_same(environment: PodEnvironment) -> None:
    variables = environment.variables()
    assert set(variables) == set(POD_ENVIRONMENT), "every variable is set, so none is inherited"
    assert read_environment({MESH_TOKEN_ENV: "inherited", **variables}) == environment


def test_the_token_stays_out_of_the_repr() -> None:
    assert "s3cret" not in repr(PodEnvironment("gateway:50051", "s3cret"))
