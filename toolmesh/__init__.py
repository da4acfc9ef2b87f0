"""toolmesh: serve plain Python functions to LLMs and services.

    import toolmesh

    @toolmesh.function(timeout=5, read_only=True)
    def get_weather(city: str, unit: Literal["c", "f"] = "c") -> Weather:
        \"\"\"Current weather for a city.

        Args:
            city: City name, e.g. "Paris".
            unit: Temperature unit.
        \"\"\"

Serve a module with ``toolmesh up --module my_tools`` (the gateway needs
``pip install 'toolmesh[mesh]'``); call it with ``toolmesh.Client``, ``toolmesh.AsyncClient``
or ``toolmesh.GrpcClient``, which the slim install has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from toolmesh._lazy import lazy_attributes as _lazy_attributes
from toolmesh._version import __version__
from toolmesh.errors import (
    Cancelled,
    ConfirmationInvalid,
    DefinitionError,
    FunctionError,
    FunctionNotFound,
    FunctionTimeout,
    IdempotencyConflict,
    IdempotencyMismatch,
    InputRequired,
    InternalError,
    InvalidArguments,
    InvalidRequest,
    JobNotFound,
    NotFromFreeText,
    OutcomeUnknown,
    Overloaded,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    ResourceExhausted,
    StateUnavailable,
    ToolmeshError,
    TriggerNotFound,
    Unauthenticated,
    Unavailable,
    UnsupportedMediaType,
    Violation,
)
from toolmesh.runtimes import (
    Annotations,
    Binary,
    Context,
    Embedded,
    FunctionDefinition,
    FunctionSpec,
    Json,
    Message,
    Parameter,
    Result,
    Text,
    Toolset,
    completion,
    function,
    prompt,
    resource,
)

if _TYPE_CHECKING:
    from toolmesh.client.grpc import GrpcClient
    from toolmesh.client.http import AsyncClient, Client
    from toolmesh.client.jobs import RemoteJob


__all__ = [
    "Annotations",
    "AsyncClient",
    "Binary",
    "Cancelled",
    "Client",
    "ConfirmationInvalid",
    "Context",
    "DefinitionError",
    "Embedded",
    "FunctionDefinition",
    "FunctionError",
    "FunctionNotFound",
    "FunctionSpec",
    "FunctionTimeout",
    "GrpcClient",
    "IdempotencyConflict",
    "IdempotencyMismatch",
    "InputRequired",
    "InternalError",
    "InvalidArguments",
    "InvalidRequest",
    "JobNotFound",
    "Json",
    "Message",
    "NotFromFreeText",
    "OutcomeUnknown",
    "Overloaded",
    "Parameter",
    "PayloadTooLarge",
    "PermissionDenied",
    "RateLimited",
    "RemoteJob",
    "ResourceExhausted",
    "Result",
    "StateUnavailable",
    "Text",
    "ToolmeshError",
    "Toolset",
    "TriggerNotFound",
    "Unauthenticated",
    "Unavailable",
    "UnsupportedMediaType",
    "Violation",
    "__version__",
    "completion",
    "function",
    "prompt",
    "resource",
]

# Every runtime pod imports toolmesh, and pods need neither httpx nor the gateway:
# the clients are imported on first use.
__getattr__, __dir__ = _lazy_attributes(
    __name__,
    {
        "AsyncClient": "toolmesh.client",
        "Client": "toolmesh.client",
        "GrpcClient": "toolmesh.client",
        "RemoteJob": "toolmesh.client",
    },
    globals(),
)
