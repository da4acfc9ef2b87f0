"""The MCP conformance suite's tools of the tasks extension (SEP-2663), as toolmesh functions.

Names and behaviour follow the ``tasks-*`` scenarios of `@modelcontextprotocol/conformance`.
A function declared with `task_support` runs as a task (a toolmesh job) for a client that
supports tasks; `greet` has none, so it is always called directly. Served next to
`examples.mcp_conformance`.
"""

from __future__ import annotations

import asyncio

import toolmesh
from toolmesh.runtimes.functions import asking

_CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
_NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@toolmesh.function
def greet(name: str) -> str:
    """Greets someone, at once (never a task)."""
    return f"Hello, {name}!"


@toolmesh.function(task_support="optional")
async def slow_compute(seconds: float, label: str = "") -> str:
    """Computes for `seconds` seconds (0: at once), then reports it.

    Args:
        seconds: How long to compute.
        label: A label echoed in the result.
    """
    await asyncio.sleep(seconds)
    return f"{label or 'slow_compute'}: done after {seconds:g} s"


@toolmesh.function(task_support="required")
async def failing_job() -> str:
    """Fails after about a second, with a tool execution error."""
    await asyncio.sleep(1)
    raise RuntimeError("failing_job failed, as it always does")


@toolmesh.function(task_support="optional", timeout=0.5)
async def protocol_error_job() -> str:
    """Never finishes in its time limit: the call fails below the tool (a timeout)."""
    await asyncio.sleep(30)
    return "unreachable"


@toolmesh.function(task_support="optional")
async def confirm_delete(filename: str, ctx: toolmesh.Context) -> str:
    """Asks the user to confirm (a task waits in input_required), then deletes nothing.

    Args:
        filename: The file to delete.
    """
    answer = await ctx.elicit(f"Delete {filename}?", _CONFIRM, key="confirm")
    return f"{filename}: {'deleted' if answer.content.get('confirm') else 'kept'}"


@toolmesh.function(task_support="optional")
async def multi_input(ctx: toolmesh.Context) -> str:
    """Asks two questions at once."""
    name, confirm = await ctx.ask_all(
        asking.elicitation("Your name?", _NAME, key="name"),
        asking.elicitation("Confirm?", _CONFIRM, key="confirm"),
    )
    return f"name={name.content.get('name')}, confirm={confirm.content.get('confirm')}"


@toolmesh.function(task_support="required")
async def test_tool_with_task(ctx: toolmesh.Context) -> str:
    """Asks the user's name, then greets them as a task."""
    answer = await ctx.elicit("What is your name?", _NAME, key="user_name")
    return f"Hello, {answer.content.get('name', 'stranger')}!"
