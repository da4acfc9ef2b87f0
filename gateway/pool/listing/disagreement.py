"""Pods of one runtime whose functions disagree: a call the runtime lists that lands on a pod
without that function.

Each pod of a stdio MCP runtime runs its own server, and a server's tools can depend on what it
was asked (`list_changed`); the runtime serves what the last pod to change lists (the
template keeper, remote_listing.py). A call of a tool only that pod has can land on another pod,
which answers that it has no such function. The call never ran, so nothing is lost; the caller
gets a 404 `function_not_found` (never a 5xx) that says why, rather than a bare "no function
named ..." for a function the catalog lists. Calls are not steered to the pod that changed: on
Kubernetes the address balances over pods the gateway cannot pick, and a server whose tools depend
on its history is best run with `max_replicas = 1`, where the listing is exact.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable

from toolmesh.errors import FunctionNotFound
from toolmesh.runtimes.functions.results import Content, Result


def disagreed(runtime: str, function: str) -> FunctionNotFound:
    return FunctionNotFound(
        f"function {function!r} is listed by runtime {runtime!r} but the pod that took the call "
        "does not have it: its pods disagree (a pod's MCP server changed its tools, the others' "
        "did not). The call did not run; calling again may reach the pod that has it, and "
        "max_replicas = 1 keeps such a server's tools exact",
        param="function",
        details={"runtime": runtime},
    )


async def invoked(answer: Awaitable[Result], runtime: str, function: str) -> Result:
    """`answer`, with a pod's "no such function" for a listed one said as a disagreement."""
    try:
        return await answer
    except FunctionNotFound:
        raise disagreed(runtime, function) from None


async def streamed(
    events: AsyncIterator[list[Content] | Result], runtime: str, function: str
) -> AsyncIterator[list[Content] | Result]:
    try:
        async for event in events:
            yield event
    except FunctionNotFound:
        raise disagreed(runtime, function) from None
