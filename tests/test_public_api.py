"""The public surface is what we mean it to be."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import toolmesh
import toolmesh.runtimes


def test_top_level_exports() -> None:
    assert set(toolmesh.__all__) == {
        "Annotations",
        "AsyncClient",
        "Binary",
        "Cancelled",
        "Client",
        "Context",
        "DefinitionError",
        "FunctionDefinition",
        "FunctionError",
        "FunctionNotFound",
        "FunctionSpec",
        "FunctionTimeout",
        "GrpcClient",
        "InternalError",
        "InvalidArguments",
        "InvalidRequest",
        "Json",
        "Overloaded",
        "Parameter",
        "PayloadTooLarge",
        "PermissionDenied",
        "RateLimited",
        "Result",
        "Text",
        "ToolmeshError",
        "Toolset",
        "Unauthenticated",
        "Unavailable",
        "Violation",
        "__version__",
        "function",
    }
    for name in toolmesh.__all__:
        assert hasattr(toolmesh, name), name


def test_runtime_sdk_exports_match_the_top_level() -> None:
    for name in toolmesh.runtimes.__all__:
        assert getattr(toolmesh.runtimes, name) is getattr(toolmesh, name)


def test_import_toolmesh_loads_the_clients_only_when_asked() -> None:
    # Every runtime pod imports toolmesh; it must not pay for httpx or the gateway.
    script = textwrap.dedent(
        """
        import sys
        import toolmesh

        loaded = [name for name in ("httpx", "toolmesh.gateway") if name in sys.modules]
        assert not loaded, loaded
        from toolmesh.client.http import AsyncClient, Client
        from toolmesh.client.grpc import GrpcClient

        assert (toolmesh.Client, toolmesh.AsyncClient) == (Client, AsyncClient)
        assert toolmesh.GrpcClient is GrpcClient
        assert {"Client", "AsyncClient", "GrpcClient"} <= set(dir(toolmesh))
        assert not hasattr(toolmesh, "Nope")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
