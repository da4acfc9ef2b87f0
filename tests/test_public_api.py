"""The public surface is what we mean it to be."""

from __future__ import annotations

import toolmesh
import toolmesh.runtimes


def test_top_level_exports() -> None:
    assert set(toolmesh.__all__) == {
        "Annotations",
        "Binary",
        "Cancelled",
        "Context",
        "DefinitionError",
        "FunctionDefinition",
        "FunctionError",
        "FunctionNotFound",
        "FunctionSpec",
        "FunctionTimeout",
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
