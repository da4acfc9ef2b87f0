"""Tool-search mode: a small entry point to a large catalog, for MCP clients that opt in.

Federation makes catalogs of hundreds of tools, and a client that lists them all spends its
model's context on them. A client that connects to `/mcp?tools=search` (or
`/mcp/{namespace}?tools=search`) is offered two meta-tools instead of the catalog:

- `search_tools` (`query`, optional `limit` 1-50): the caller's tools that fit the query, best
  first, each with its name, description and input schema. The router ranks them (as
  `GET /v1/tools?query=` does); with the router off or not yet loaded, a case-insensitive keyword
  match on names and descriptions does.
- `call_tool` (`name`, `arguments`): runs the named tool exactly as a `tools/call` of it would
  (same scopes, errors, structured content, Idempotency-Key). It is an explicit call by the
  client, not free text, so the free-text policy does not apply. A name the caller cannot call
  is an error result (the model reads it and searches again), not a protocol error.

`call_tool` of a name the caller may call is unwrapped by `CallToolUnwrap`, an SDK middleware
in front of the others, into the `tools/call` of that tool: from there on (the requestState
boundary, tasks, the handler) it is that call. What cannot be unwrapped reaches the handler as
`call_tool`, which answers the error result.

A `tools/call` of a real tool name still works in this mode, for clients that learned a name; a
real tool named like a meta-tool is reached through `call_tool` there.
The catalog a caller searches is the one it would list: its scopes, and the path's namespace.

`tools/list` also takes SEP-1821's draft `query` parameter (modelcontextprotocol issue #1821,
still a draft: `ListToolsRequestParams.query`) in either mode: the answer is the caller's real
tools ranked for it, at most a page of them, without a cursor.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from starlette.types import Scope

from toolmesh.errors import (
    FunctionNotFound,
    InvalidArguments,
    InvalidRequest,
    ToolmeshError,
    Unavailable,
    Violation,
)
from toolmesh.gateway.core import free_text
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import RouteRequest
from toolmesh.gateway.mcp.caller import caller, in_namespace, refusal
from toolmesh.gateway.mcp.convert import tool
from toolmesh.runtimes.functions.results import ErrorInfo, Result
from toolmesh.runtimes.functions.spec import FunctionSpec, tool_name

#: The query parameter a client opts in with, and its one value.
MODE_PARAM = "tools"
SEARCH_MODE = "search"
#: Where the endpoint notes, in the ASGI scope's state, that the request is in search mode, and
#: where `CallToolUnwrap` notes that the call it hands on is no longer a meta-tool's.
SEARCHING = "toolmesh_tool_search"
UNWRAPPED = "toolmesh_call_tool_unwrapped"
SEARCH_TOOLS = "search_tools"
CALL_TOOL = "call_tool"
META_TOOLS = frozenset({SEARCH_TOOLS, CALL_TOOL})
DEFAULT_LIMIT = 10
MAX_LIMIT = 50
#: Words of a query, a name or a description ("get_weather" is "get" and "weather").
_WORD = re.compile(r"[^\W_]+")


def search_mode(scope: Scope) -> bool:
    """Whether the request's URL opts in (`?tools=search`); InvalidRequest for another value."""
    query = scope.get("query_string", b"").decode("latin-1")
    values = parse_qs(query, keep_blank_values=True).get(MODE_PARAM)
    if values is None:
        return False
    if values != [SEARCH_MODE]:
        raise InvalidRequest(
            f"the query parameter {MODE_PARAM!r} takes one value, {SEARCH_MODE!r} (tool-search mode); "
            f"leave it out to list every tool",
            param=MODE_PARAM,
        )
    return True


def searching(scope: Scope) -> bool:
    return bool(scope.get("state", {}).get(SEARCHING))


def meta_call(ctx: ServerRequestContext[Any, Any], name: str) -> bool:
    """Whether a tools/call of `name` is a call of one of search mode's meta-tools."""
    if ctx.request is None or name not in META_TOOLS:
        return False
    scope = ctx.request.scope
    return searching(scope) and not scope["state"].get(UNWRAPPED)


class CallToolUnwrap:
    """SDK middleware: `call_tool` of a tool the caller may call becomes the tools/call of it."""

    def __init__(self, mesh: Mesh) -> None:
        self._mesh = mesh

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params
        if (
            ctx.method != "tools/call"
            or not isinstance(params, Mapping)
            or params.get("name") != CALL_TOOL
            or not meta_call(ctx, CALL_TOOL)
        ):
            return await call_next(ctx)
        target = call_arguments(params.get("arguments"))
        if isinstance(target, types.CallToolResult):
            return await call_next(ctx)
        name, arguments = target
        principal, namespace = caller(ctx)
        try:
            spec = self._mesh.function(name, principal)
        except ToolmeshError:
            return await call_next(ctx)
        if namespace and spec.namespace != namespace:
            return await call_next(ctx)
        assert ctx.request is not None  # meta_call
        ctx.request.scope["state"][UNWRAPPED] = True
        return await call_next(
            dataclasses.replace(ctx, params={**params, "name": name, "arguments": arguments})
        )


def _ranking(mesh: Mesh) -> str:
    return "router" if mesh.router.config.enabled else "keyword"


def meta_tools(mesh: Mesh) -> list[types.Tool]:
    """The two tools a client in search mode lists."""
    how = (
        "ranked by relevance to the query by the gateway's router"
        if _ranking(mesh) == "router"
        else "found by a case-insensitive keyword match on their names and descriptions "
        "(the gateway's router is off), best first"
    )
    found = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "description": {"type": "string"},
            "inputSchema": {"type": "object"},
        },
        "required": ["name", "inputSchema"],
    }
    search = types.Tool(
        name=SEARCH_TOOLS,
        description=(
            "Search the tools you can call and get the best matches with their input schemas, "
            f"{how}. Then run one with `{CALL_TOOL}`."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do, in a few words."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": DEFAULT_LIMIT,
                    "description": "Most tools to return.",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {"tools": {"type": "array", "items": found}, "ranking": {"type": "string"}},
            "required": ["tools"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    call = types.Tool(
        name=CALL_TOOL,
        description=(
            f"Run a tool found with `{SEARCH_TOOLS}`: give its name and arguments that match its "
            "input schema. The result is the tool's own."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": f"A tool name from `{SEARCH_TOOLS}`."},
                "arguments": {"type": "object", "description": "The tool's arguments."},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    )
    return [search, call]


def _violation(path: str, expected: str, value: object) -> Violation:
    got = "nothing" if value is None else f"{type(value).__name__} {json.dumps(value, default=str)[:80]}"
    return Violation(path, expected, got, f"{path}: expected {expected}, got {got}")


def _failed(error: ToolmeshError) -> types.CallToolResult:
    # As convert.call_result renders a failed call: the error's text, with each violation.
    text = Result.failure(ErrorInfo.from_exception(error)).text
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _invalid(tool: str, violations: list[Violation]) -> types.CallToolResult:
    return _failed(InvalidArguments(f"invalid arguments for {tool}", violations))


def search_arguments(arguments: Mapping[str, Any] | None) -> tuple[str, int] | types.CallToolResult:
    """`search_tools`' query and limit, or the error result naming what is wrong with them."""
    arguments = arguments or {}
    query, limit = arguments.get("query"), arguments.get("limit", DEFAULT_LIMIT)
    violations = [
        _violation(key, "no such argument", arguments[key]) for key in arguments.keys() - {"query", "limit"}
    ]
    if not isinstance(query, str) or not query.strip():
        violations.append(_violation("query", "a non-empty string", query))
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        violations.append(_violation("limit", f"an integer from 1 to {MAX_LIMIT}", limit))
    if violations:
        return _invalid(SEARCH_TOOLS, violations)
    assert isinstance(query, str)
    return query, limit


def call_arguments(arguments: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]] | types.CallToolResult:
    """`call_tool`'s tool name and its arguments, or the error result naming what is wrong."""
    arguments = arguments or {}
    name, inner = arguments.get("name"), arguments.get("arguments", {})
    violations = [
        _violation(key, "no such argument", arguments[key])
        for key in arguments.keys() - {"name", "arguments"}
    ]
    if not isinstance(name, str) or not name:
        violations.append(_violation("name", "a tool name (string)", name))
    if inner is not None and not isinstance(inner, dict):
        violations.append(_violation("arguments", "an object", inner))
    if violations:
        return _invalid(CALL_TOOL, violations)
    assert isinstance(name, str)
    return name, dict(inner or {})


def not_found(error: FunctionNotFound) -> types.CallToolResult:
    """`call_tool` of a name the caller cannot call: an error result the model can read."""
    return _failed(error)


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> str:
    # " word word ...": `" " + w in _words(t)` is whether a word of `t` starts with `w`. Cached:
    # a catalog's names and descriptions are few and searched again and again.
    return " " + " ".join(_WORD.findall(text.lower()))


def _keyword_rank(query: str, specs: list[FunctionSpec], limit: int) -> list[FunctionSpec]:
    """Specs whose name or description holds the query's words (a word matches the start of one
    of theirs: "email" finds "emails"), most words first, a word in the name counting more."""
    asked = set(_WORD.findall(query.lower()))
    # Short words ("a", "to", "it") would match nearly everything, unless they are all there is.
    words = [" " + w for w in asked if len(w) > 2] or [" " + w for w in asked]
    scored: list[tuple[float, str, FunctionSpec]] = []
    for spec in specs:
        name = tool_name(spec.qualified_name)
        named, described = _words(f"{name} {spec.qualified_name}"), _words(spec.description)
        score = sum(1.5 if w in named else 1.0 if w in described else 0.0 for w in words)
        if score > 0:
            scored.append((-score, name, spec))
    scored.sort(key=lambda row: (row[0], row[1]))
    return [spec for _, _, spec in scored[:limit]]


async def search(
    mesh: Mesh, principal: Principal, namespace: str, query: str, limit: int
) -> tuple[list[FunctionSpec], str]:
    """The caller's tools (in `namespace` when given) that fit `query`, best first, and how they
    were ranked ("router" or "keyword"). One unit of the caller's rate limit, like a routing."""
    await principal.spend()
    specs = in_namespace(mesh.functions(principal), namespace)
    offered = {spec.qualified_name: spec for spec in specs}
    if not offered:
        return [], _ranking(mesh)
    # A query is cut to what the router reads, lone surrogates replaced (as openai/tool_selection.py does).
    cut = query[: mesh.router.config.max_prompt_chars].encode(errors="replace").decode()
    try:
        ranked = await free_text.rank(mesh.router, offered.__contains__, RouteRequest(cut, limit))
    except Unavailable:  # off, or still loading: words still find tools
        return _keyword_rank(query, specs, limit), "keyword"
    return [offered[c.key] for c in ranked.candidates if c.key in offered][:limit], "router"


async def answer_search(
    mesh: Mesh, principal: Principal, namespace: str, arguments: Mapping[str, Any] | None
) -> types.CallToolResult:
    """The result of a `search_tools` call; a refusal (rate limit) is the JSON-RPC error."""
    wanted = search_arguments(arguments)
    if isinstance(wanted, types.CallToolResult):
        return wanted
    try:
        specs, ranking = await search(mesh, principal, namespace, *wanted)
    except ToolmeshError as exc:
        raise refusal(exc) from None
    return found(specs, ranking)


def found(specs: list[FunctionSpec], ranking: str) -> types.CallToolResult:
    """`search_tools`' result: each tool's name, description and input schema."""
    tools = []
    for spec in specs:
        definition = tool(spec)
        entry: dict[str, Any] = {"name": definition.name, "inputSchema": definition.input_schema}
        if definition.description:
            entry["description"] = definition.description
        tools.append(entry)
    structured = {"tools": tools, "ranking": ranking}
    text = json.dumps(structured, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def list_query(params: Mapping[str, Any] | None) -> str | None:
    """The draft `query` of a tools/list (SEP-1821), None without one; InvalidRequest when it
    is not a non-empty string."""
    if params is None or "query" not in params:
        return None
    query = params["query"]
    if not isinstance(query, str) or not query.strip():
        raise InvalidRequest("tools/list: query must be a non-empty string", param="query")
    return query
