"""A remote server's resources, resource templates and prompts as feature functions (a
FunctionSpec with a `Feature`, which the MCP endpoint serves as resources and prompts), what each
asks of the server (`McpTarget`), and the server's answers as Results.

A resource's function reads its URI (a template's, with its variables as arguments); a prompt's
gets the prompt with its arguments, and answers the messages as its structured result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from toolmesh.runtimes.functions.features import TEMPLATE_VARIABLE
from toolmesh.runtimes.functions.results import Json, Result
from toolmesh.runtimes.functions.spec import PROMPT, RESOURCE, Feature, FunctionSpec, function_name
from toolmesh.runtimes.mcp.server_features import prompt_schema, read_contents, title_of

TOOLS_CALL = "tools/call"
RESOURCES_READ = "resources/read"
PROMPTS_GET = "prompts/get"


@dataclass(frozen=True, slots=True)
class McpTarget:
    """What a function asks of the server: the method, and the tool's or prompt's name or the
    resource's URI (template)."""

    method: str
    name: str


def resource_specs(
    resources: Sequence[Mapping[str, Any]],
    templates: Sequence[Mapping[str, Any]],
    namespace: str,
    limit: int,
    taken: set[str],
) -> dict[str, tuple[McpTarget, FunctionSpec]]:
    found: dict[str, tuple[McpTarget, FunctionSpec]] = {}
    for item, key in [*((r, "uri") for r in resources), *((t, "uriTemplate") for t in templates)]:
        uri = item.get(key)
        if not isinstance(uri, str) or not uri:
            continue
        variables = TEMPLATE_VARIABLE.findall(uri)
        name = function_name(str(item.get("name") or uri), limit, taken)
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {v: {"type": "string"} for v in variables},
            "required": variables,
        }
        feature = Feature(RESOURCE, uri=uri, mime_type=str(item.get("mimeType") or ""), title=title_of(item))
        description = str(item.get("description") or item.get("title") or uri)
        spec = FunctionSpec(name, description, schema, namespace=namespace, feature=feature)
        found[name] = (McpTarget(RESOURCES_READ, uri), spec)
    return found


def prompt_specs(
    prompts: Sequence[Mapping[str, Any]], namespace: str, limit: int, taken: set[str]
) -> dict[str, tuple[McpTarget, FunctionSpec]]:
    found: dict[str, tuple[McpTarget, FunctionSpec]] = {}
    for item in prompts:
        raw = item.get("name")
        if not isinstance(raw, str) or not raw:
            continue
        schema = prompt_schema(item)
        name = function_name(raw, limit, taken, prefix="op")
        feature = Feature(PROMPT, title=title_of(item))
        spec = FunctionSpec(
            name, str(item.get("description") or raw), schema, namespace=namespace, feature=feature
        )
        found[name] = (McpTarget(PROMPTS_GET, raw), spec)
    return found


def request_of(target: McpTarget, arguments: dict[str, Any]) -> dict[str, Any]:
    """The params of the request that serves a call to `target` with `arguments`."""
    if target.method == RESOURCES_READ:
        uri = TEMPLATE_VARIABLE.sub(lambda m: quote(str(arguments.get(m.group(1), "")), safe=""), target.name)
        return {"uri": uri}
    if target.method == PROMPTS_GET:
        return {
            "name": target.name,
            "arguments": {k: v if isinstance(v, str) else json.dumps(v) for k, v in arguments.items()},
        }
    return {"name": target.name, "arguments": arguments}


def read_result(answer: Any) -> Result:
    """A `resources/read` result: each of its contents an item (text, or bytes of its type)."""
    return Result(content=list(read_contents(answer)))


def prompt_result(answer: Any) -> Result:
    """A `prompts/get` result: its messages, the structured result the MCP endpoint serves."""
    messages = answer.get("messages") if isinstance(answer, dict) else None
    data = json.dumps(messages if isinstance(messages, list) else [], separators=(",", ":")).encode()
    return Result(content=[Json(data)], structured_json=data)
