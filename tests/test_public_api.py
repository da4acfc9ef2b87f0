"""The public surface is what we mean it to be."""

from __future__ import annotations
import __future__

import inspect
import json
import os
import subprocess
import sys
import textwrap

import toolmesh
import toolmesh.runtimes
from toolmesh import errors


def test_the_top_level_exports_the_sdk_the_clients_and_every_error() -> None:
    # Derived from the modules that own each name, so a new error class, SDK name or client
    # that is not exported (or an export nobody owns) fails here.
    import toolmesh.client

    owned = (
        {cls.__name__ for cls in errors.ERROR_CLASSES}
        | {"ToolmeshError", "Violation", "DefinitionError"}
        | set(toolmesh.runtimes.__all__)
        | set(toolmesh.client.__all__)
        | {"__version__"}
    )
    assert set(toolmesh.__all__) == owned
    for name in toolmesh.__all__:
        value = getattr(toolmesh, name)
        if name != "__version__":
            assert (value.__doc__ or "").strip(), f"toolmesh.{name} has no docstring"
    # Nothing else public: submodules aside (and `from __future__ import annotations`).
    public = {
        name
        for name in dir(toolmesh)
        if not name.startswith("_")
        and not inspect.ismodule(getattr(toolmesh, name))
        and not isinstance(getattr(toolmesh, name), __future__._Feature)
    }
    assert public == set(toolmesh.__all__) - {"__version__"}


def test_runtime_sdk_exports_match_the_top_level() -> None:
    for name in toolmesh.runtimes.__all__:
        assert getattr(toolmesh.runtimes, name) is getattr(toolmesh, name)


def test_import_toolmesh_loads_the_clients_only_when_asked() -> None:
    # Every runtime pod imports toolmesh; it must not pay for httpx or the gateway.
    script = textwrap.dedent(
        """
        import sys
        import toolmesh

        loaded = [name for name in ("httpx", "toolmesh.gateway", "toolmesh.client") if name in sys.modules]
        assert not loaded, loaded
        from toolmesh.client import AsyncClient, Client, GrpcClient

        assert (toolmesh.Client, toolmesh.AsyncClient) == (Client, AsyncClient)
        assert toolmesh.GrpcClient is GrpcClient
        assert {"Client", "AsyncClient", "GrpcClient"} <= set(dir(toolmesh))
        assert not hasattr(toolmesh, "Nope")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


#: What users import from `toolmesh`, written out: a name added to or dropped from `__all__` is a
#: decision, made here too.
INTENDED = {
    # writing functions (the SDK)
    "function", "prompt", "resource", "completion", "Toolset", "Context", "FunctionDefinition",
    "FunctionSpec", "Annotations", "Parameter", "Result", "Text", "Json", "Binary", "Embedded", "Message",
    # calling them
    "Client", "AsyncClient", "GrpcClient", "RemoteJob",
    # what goes wrong
    "ToolmeshError", "Violation", "DefinitionError", "Cancelled", "ConfirmationInvalid", "FunctionError",
    "FunctionNotFound", "FunctionTimeout", "IdempotencyConflict", "IdempotencyMismatch", "InputRequired",
    "InternalError", "InvalidArguments", "InvalidRequest", "JobNotFound", "NotFromFreeText",
    "OutcomeUnknown", "Overloaded", "PayloadTooLarge", "PermissionDenied", "RateLimited",
    "ResourceExhausted", "StateUnavailable", "TriggerNotFound", "Unauthenticated", "Unavailable",
    "UnsupportedMediaType",
    "__version__",
}  # fmt: skip


def test_all_is_exactly_the_intended_set_and_every_name_resolves() -> None:
    assert set(toolmesh.__all__) == INTENDED
    assert len(toolmesh.__all__) == len(INTENDED)  # no name twice
    script = "from toolmesh import *; import toolmesh; print(sorted(set(toolmesh.__all__) - set(dir())))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_import_toolmesh_leaves_the_environment_alone() -> None:
    # A library import must not change its host's environment (nor what its subprocesses inherit).
    script = textwrap.dedent(
        """
        import json, os
        before = dict(os.environ)
        import toolmesh
        print(json.dumps([before, dict(os.environ)]))
        """
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GRPC_")}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=environ
    )
    assert done.returncode == 0, done.stderr
    before, after = json.loads(done.stdout)
    assert after == before
