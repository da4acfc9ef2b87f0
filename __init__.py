"""toolmesh: serve plain Python functions to LLMs and services.

    import toolmesh

    @toolmesh.function(timeout=5, read_only=True)
    def get_weather(city: str, unit: Literal["c", "f"] = "c") -> Weather:
        \"\"\"Current weather for a city.

        Args:
            city: City name, e.g. "Paris".
            unit: Temperature unit.
        \"\"\"

Serve a module with ``toolmesh runtime --module my_tools``.
"""

from __future__ import annotations

from toolmesh.errors import (
    Cancelled,
    DefinitionError,
    FunctionError,
    FunctionNotFound,
    FunctionTimeout,
    InternalError,
    InvalidArguments,
    InvalidRequest,
    Overloaded,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    ToolmeshError,
    Unauthenticated,
    Unavailable,
    Violation,
)
from toolmesh.runtimes import (
    Annotations,
    Binary,
    Context,
    FunctionDefinition,
    FunctionSpec,
    Json,
    Parameter,
    Result,
    Text,
    Toolset,
    function,
)

__version__ = "0.1.0"

__all__ = [
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
]
