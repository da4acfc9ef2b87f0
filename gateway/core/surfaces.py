"""Which failures each surface refuses, and which it answers as an error result: one table.

A *refusal* is the surface's own error (an HTTP status, a gRPC status, a JSON-RPC
error); an *error result* is a normal answer with ``is_error`` whose content says
what went wrong, so a model can read it and try again. Code calling one function
wants refusals; a model wants results; MCP's spec draws the line in between.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from toolmesh.errors import (
    FunctionNotFound,
    FunctionTimeout,
    InputRequired,
    InvalidArguments,
    PermissionDenied,
    RateLimited,
    ResourceExhausted,
    ToolmeshError,
    Unauthenticated,
)
from toolmesh.runtimes.functions.results import ErrorInfo, Result


class Surface(enum.Enum):
    #: HTTP invoke, gRPC Invoke/InvokeStream, /v1/execute: one call, made by code.
    DIRECT = "direct"
    #: MCP tools/call: a model reads failures; unknown tools and refused callers are protocol errors.
    MCP = "mcp"
    #: /v1/tool_calls and the chat proxy's rounds: every call in the batch gets an answer.
    BATCH = "batch"


@dataclass(frozen=True, slots=True)
class Refusals:
    #: Errors raised before or instead of running the function that the surface refuses with.
    raised: tuple[type[ToolmeshError], ...]
    #: Codes of error *results* (the function ran, or was validated) that it refuses with too.
    results: frozenset[str]

    def settle(self, error: ToolmeshError) -> Result:
        """An error raised on the way to the function: re-raise it, or make it the call's result."""
        if isinstance(error, self.raised):
            raise error
        return Result.failure(ErrorInfo.from_exception(error))

    def check(self, result: Result) -> Result:
        """The result, unless its error is one this surface refuses with (then raised)."""
        if result.error is not None and result.error.code in self.results:
            raise result.error.to_exception()
        return result


REFUSALS: dict[Surface, Refusals] = {
    Surface.DIRECT: Refusals(
        (ToolmeshError,),
        frozenset({InvalidArguments.code, FunctionTimeout.code, ResourceExhausted.code, InputRequired.code}),
    ),
    Surface.MCP: Refusals((FunctionNotFound, PermissionDenied, RateLimited, Unauthenticated), frozenset()),
    Surface.BATCH: Refusals((), frozenset()),
}
