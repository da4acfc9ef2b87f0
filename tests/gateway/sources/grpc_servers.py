"""The real grpcio server with reflection for the `grpc_reflection` runtime tests
(tests/fixtures/grpc_pets, its proto compiled at test time), in a subprocess."""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

from tests.conftest import FIXTURES, pod_env
from tests.gateway.sources.mcp_servers import ServerProcess, free_port

PROTO_DIR = FIXTURES / "grpc_pets"


def compile_pets(directory: Path) -> Path:
    """pets.proto compiled into `directory` (pets_pb2.py), for the server."""
    include = Path(protoc.__file__).parent / "_proto"
    status = protoc.main(
        ["protoc", f"-I{PROTO_DIR}", f"-I{include}", f"--python_out={directory}", "pets.proto"]
    )
    assert status == 0
    return directory


def pets_server(generated: Path, *flags: str) -> ServerProcess:
    """The pets server on a free port; `flags` as pets_server.py takes them (--v1, --tls ...)."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "tests.fixtures.grpc_pets.pets_server",
        str(port),
        str(generated),
        *flags,
    ]
    return ServerProcess(command, port, {"PYTHONPATH": pod_env()["PYTHONPATH"]})


def target(server: ServerProcess) -> str:
    return f"127.0.0.1:{server.port}"


BREADTH_DIR = FIXTURES / "grpc_breadth"
BREADTH_PROTOS = ("breadth.proto", "legacy.proto", "shapes/v1/shapes.proto")


def compile_breadth(directory: Path) -> Path:
    """breadth.proto, legacy.proto and shapes.proto compiled into `directory` (their *_pb2.py,
    for the server) with `descriptors.pb`, a FileDescriptorSet of them and their imports (for a
    test's own pool: importing the modules would put them in the gateway's default pool too)."""
    include = Path(protoc.__file__).parent / "_proto"
    status = protoc.main(
        [
            "protoc",
            f"-I{BREADTH_DIR}",
            f"-I{include}",
            f"--python_out={directory}",
            f"--descriptor_set_out={directory / 'descriptors.pb'}",
            "--include_imports",
            *BREADTH_PROTOS,
        ]
    )
    assert status == 0
    return directory


def breadth_server(generated: Path) -> ServerProcess:
    """The breadth server on a free port."""
    port = free_port()
    command = [sys.executable, "-m", "tests.fixtures.grpc_breadth.breadth_server", str(port), str(generated)]
    return ServerProcess(command, port, {"PYTHONPATH": pod_env()["PYTHONPATH"]})
