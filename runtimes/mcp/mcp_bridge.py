"""The module a runtime with `mcp_command` serves: the MCP server's tools as functions, and its
resources, resource templates, prompts and completions as feature functions (server_features.py).

Imported by the runtime's template, it starts the server once to list what it brings, stops it,
and defines a `FunctionDefinition` per tool (its input schema as written, its name made a valid
function name). Each pod forked from the template starts its own server on its first call and
forwards calls to it (server_process.py, over the lean JSON-RPC client of stdio_session.py: the
SDK's session cost more than the rest of a pod's call); the server is the pod's child, so it goes
with the pod. The server is the pod's whole work, so when it exits during a call the pod exits
too: the pool then sees a pod that died mid-call, as for any runtime, and sends the call to a
new pod (with a new server) when that is safe (its tool says it is idempotent).

When a pod's server says its lists changed (`notifications/*/list_changed`), the pod lists it
again and serves what it now lists (the registry's `replace`); the gateway sees the registry's
new revision in the pod's next liveness answer and reads the pod's functions again
(gateway/pool/template_keeper.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys as _sys
from collections.abc import Callable, Coroutine
from typing import Any

from toolmesh.errors import DefinitionError, FunctionError
from toolmesh.runtimes.functions import registry as _registries
from toolmesh.runtimes.functions.context import Context as _Context
from toolmesh.runtimes.functions.definition import DIALECT, FunctionDefinition
from toolmesh.runtimes.functions.spec import Annotations, function_name, name_limit
from toolmesh.runtimes.mcp import COMMAND_ENV, NAMESPACE_ENV, ROOTS_ENV
from toolmesh.runtimes.mcp.mcp_content import passed_meta as _passed_meta
from toolmesh.runtimes.mcp.mcp_content import tool_error as _tool_error
from toolmesh.runtimes.mcp.mcp_content import tool_value as _tool_value
from toolmesh.runtimes.mcp.server_asks import Answerer as _Answerer
from toolmesh.runtimes.mcp.server_asks import answerer as _answerer
from toolmesh.runtimes.mcp.server_features import (
    completion_definitions,
    prompt_definitions,
    resource_definitions,
)
from toolmesh.runtimes.mcp.server_process import (
    ExitedMidCall,
    Listing,
    RpcError,
    ServerProcess,
    list_server,
)

#: The pod's exit status when its server exited during a call.
SERVER_EXITED = 70


class McpToolError(FunctionError):
    """The MCP server answered the call with an error result; the message is its text, as the
    caller reads it (a Python exception's class name in front would be the bridge's, not the
    server's: a remote server's errors read the same)."""


def _command() -> list[str]:
    raw = os.environ.get(COMMAND_ENV)
    if not raw:
        raise RuntimeError(f"{COMMAND_ENV} is not set: this module is served by an `mcp_command` runtime")
    command = json.loads(raw)
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise RuntimeError(f"{COMMAND_ENV} must be a JSON array of strings")
    return command


def _result(answer: Any) -> Any:
    """A CallToolResult's JSON as what a toolmesh function returns."""
    why = _tool_error(answer)
    if why is not None:
        raise McpToolError(why)
    return _tool_value(answer)


def _parameters(schema: Any) -> dict[str, Any]:
    """A tool's input schema as the pod validates it (JSON Schema 2020-12, MCP's dialect). Many
    servers still declare draft-07 (zod-to-json-schema's default); what tool schemas use of it
    reads the same in 2020-12, so its `$schema` is dropped rather than the tool refused. One with
    no `type` (some hand-written ones) describes the arguments, which are an object all the same."""
    if not isinstance(schema, dict):
        return {"type": "object"}
    found = dict(schema)
    if found.get("$schema", DIALECT) != DIALECT:
        del found["$schema"]
    found.setdefault("type", "object")
    return found


def _unhostable(tool: dict[str, Any], definition: FunctionDefinition) -> str | None:
    """Why the pod cannot serve `tool`, or None when it can."""
    execution = tool.get("execution")
    if isinstance(execution, dict) and execution.get("taskSupport") == "required":
        return "it must run as a task (taskSupport 'required'), and the bridge calls tools directly"
    try:
        definition.host()
    except DefinitionError as exc:
        return str(exc)
    return None


class _Follower:
    """Lists the server again when it says its lists changed, and serves what it lists: one
    listing at a time, and one more when it said so again meanwhile."""

    def __init__(self) -> None:
        self._listing: asyncio.Task[None] | None = None
        self._stale = False

    def heard(self, method: str) -> None:
        self._stale = True
        if self._listing is None or self._listing.done():
            self._listing = asyncio.get_running_loop().create_task(self._list_again())

    async def _list_again(self) -> None:
        while self._stale:
            self._stale = False
            try:
                listing = await _server.listing()
                hosted = [definition.host() for definition in _definitions(listing).values()]
            except Exception as exc:  # a server that cannot say, or says what cannot be served
                _sys.stderr.write(
                    f"toolmesh: the MCP server's lists changed but could not be read, the pod serves "
                    f"what it listed before: {exc}\n"
                )
                return
            served = _registries.serving()
            if served is not None:
                served.replace(hosted)


#: Whether the server is offered roots (the runtime's `roots = true`).
_ROOTS = os.environ.get(ROOTS_ENV) == "1"
_follower = _Follower()
_server = ServerProcess(_command(), _follower.heard, _ROOTS)


async def _ask(
    method: str,
    params: dict[str, Any],
    heard: Callable[[dict[str, Any]], None] | None = None,
    answer: _Answerer | None = None,
) -> Any:
    """`method`'s result from the pod's server; when the server exits first, the pod exits."""
    try:
        return await _server.request(method, params, None, heard, answer)
    except RpcError as exc:
        raise McpToolError(f"the MCP server refused {method}: {exc}") from None
    except ExitedMidCall as exc:
        _sys.stderr.write(f"toolmesh: {exc}; the pod exits with it\n")
        _sys.stderr.flush()
        os._exit(SERVER_EXITED)


def _forwarder(tool: str) -> Callable[..., Coroutine[Any, Any, Any]]:
    # The context's parameter name is one no tool argument has (they are the rest, by keyword).
    async def call(_toolmesh_context: _Context, **arguments: Any) -> Any:
        params = {"name": tool, "arguments": arguments}
        context = _toolmesh_context
        answer = _answerer(lambda kind, asked: context.ask_all_sync((kind, None, asked))[0], context.can_ask)
        return _result(await _ask("tools/call", params, _listener(context), answer))

    return call


#: MCP's (syslog's) log levels as Python's.
_LEVELS = {"debug": 10, "info": 20, "notice": 20, "warning": 30, "error": 40, "critical": 50}


def _listener(ctx: _Context) -> Callable[[dict[str, Any]], None]:
    """The server's progress and log messages about a call, as the call's own (its caller hears
    them if it asked to, as for a Python function's)."""

    def heard(message: dict[str, Any]) -> None:
        params = message["params"]
        if message.get("method") == "notifications/progress":
            total, text = params.get("total"), params.get("message")
            ctx.report_progress(
                float(params.get("progress") or 0),
                float(total) if isinstance(total, int | float) else None,
                text if isinstance(text, str) else None,
            )
        else:
            data = params.get("data")
            text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
            ctx.logger.log(_LEVELS.get(str(params.get("level")), 50 if params.get("level") else 20), text)

    return heard


def _definitions(listing: Listing) -> dict[str, FunctionDefinition]:
    """A function per tool, resource, template, prompt (and completion) `listing` holds."""
    namespace = os.environ.get(NAMESPACE_ENV, "")
    taken: set[str] = set()
    found = {}
    for unlisted in listing.unlisted:
        _sys.stderr.write(
            f"toolmesh: warning: the MCP server's {unlisted}; what it lists is not served, its tools are\n"
        )
    for tool in listing.tools:
        raw = str(tool.get("name", ""))
        name = function_name(raw, name_limit(namespace), taken)
        hints = tool.get("annotations")
        hints = hints if isinstance(hints, dict) else {}
        schema, output = tool.get("inputSchema"), tool.get("outputSchema")
        definition = FunctionDefinition(
            name=name,
            handler=_forwarder(raw),
            description=str(tool.get("description") or tool.get("title") or raw),
            parameters=_parameters(schema),
            namespace=namespace,
            output_schema=dict(output) if isinstance(output, dict) and output else None,
            annotations=Annotations(
                read_only=bool(hints.get("readOnlyHint")),
                destructive=bool(hints.get("destructiveHint")),
                idempotent=bool(hints.get("idempotentHint")),
                open_world=bool(hints.get("openWorldHint")),
                title=str(hints.get("title") or tool.get("title") or ""),
            ),
            meta=_passed_meta(tool.get("_meta")),
        )
        # One tool the pod cannot serve is left out, not the server's other tools with it.
        why = _unhostable(tool, definition)
        if why is None:
            found[name] = definition
        else:
            _sys.stderr.write(f"toolmesh: warning: the MCP server's tool {raw!r} is not served: {why}\n")
    found.update(resource_definitions(listing.resources, listing.templates, namespace, taken, _ask))
    prompts: dict[str, str] = {}
    found.update(prompt_definitions(listing.prompts, namespace, taken, _ask, prompts))
    if listing.completes:
        found.update(
            completion_definitions(listing.prompts, prompts, listing.templates, namespace, taken, _ask)
        )
    return found


# Module globals are what discovery reads; the names used after import are private (`_`), and a
# function name never starts with one, so no tool can shadow them.
globals().update(_definitions(asyncio.run(list_server(_command(), _ROOTS))))
__all__ = [name for name, value in globals().items() if isinstance(value, FunctionDefinition)]
