"""A remote server's resources, resource templates and prompts as feature functions (a
FunctionSpec with a `Feature`, which the MCP endpoint serves as resources and prompts), what each
asks of the server (`McpTarget`), and the server's answers as Results.

A resource's function reads its URI (a template's, with its variables as arguments); a prompt's
gets the prompt with its arguments, and answers the messages as its structured result; a
completion's (one per argument of each prompt and template, for a server that completes) asks the
server's `completion/complete` and answers its suggestions, as a stdio server's pods do
(runtimes/mcp/server_features.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from toolmesh.runtimes.functions.features import TEMPLATE_VARIABLE
from toolmesh.runtimes.functions.results import Json, Result
from toolmesh.runtimes.functions.spec import (
    COMPLETION,
    PROMPT,
    RESOURCE,
    Annotations,
    Feature,
    FunctionSpec,
    function_name,
)
from toolmesh.runtimes.mcp.server_features import (
    completion_request,
    completion_schema,
    completion_targets,
    completion_values,
    prompt_names,
    prompt_schema,
    read_contents,
    title_of,
)

TOOLS_CALL = "tools/call"
RESOURCES_READ = "resources/read"
PROMPTS_GET = "prompts/get"
COMPLETE = "completion/complete"


@dataclass(frozen=True, slots=True)
class McpTarget:
    """What a function asks of the server: the method, and the tool's or prompt's name or the
    resource's URI (template)."""

    method: str
    name: str
    #: With COMPLETE: the server's `ref` (a prompt's or template's) and the argument completed.
    ref: tuple[tuple[str, str], ...] = ()
    argument: str = ""


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
    own_names: set[str] = set()
    for item in prompts:
        raw = item.get("name")
        if not isinstance(raw, str) or not raw:
            continue
        schema = prompt_schema(item)
        name, shown = prompt_names(raw, limit, taken, own_names, prefix="op")
        feature = Feature(PROMPT, title=title_of(item), name=shown)
        spec = FunctionSpec(
            name, str(item.get("description") or raw), schema, namespace=namespace, feature=feature
        )
        found[name] = (McpTarget(PROMPTS_GET, raw), spec)
    return found


def completion_specs(
    prompts: Sequence[Mapping[str, Any]],
    prompt_names: Mapping[str, str],
    templates: Sequence[Mapping[str, Any]],
    namespace: str,
    limit: int,
    taken: set[str],
) -> dict[str, tuple[McpTarget, FunctionSpec]]:
    """A completion function for each argument of each prompt and resource template.
    `prompt_names` are the prompts' function names by their own names."""
    found: dict[str, tuple[McpTarget, FunctionSpec]] = {}
    for target, ref, argument in completion_targets(prompts, prompt_names, templates, namespace):
        name = function_name(f"complete_{target}_{argument}", limit, taken)
        spec = FunctionSpec(
            name,
            f"Suggest values for {argument!r} of {target}.",
            completion_schema(),
            namespace=namespace,
            annotations=Annotations(read_only=True),
            feature=Feature(COMPLETION, target=target, argument=argument),
        )
        found[name] = (McpTarget(COMPLETE, target, tuple(ref.items()), argument), spec)
    return found


def request_of(target: McpTarget, arguments: dict[str, Any]) -> dict[str, Any]:
    """The params of the request that serves a call to `target` with `arguments`."""
    if target.method == COMPLETE:
        value = arguments.get("value")
        return completion_request(
            dict(target.ref),
            target.argument,
            value if isinstance(value, str) else "",
            arguments.get("context"),
        )
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


def completion_result(answer: Any) -> Result:
    """A `completion/complete` result: its suggestions, the structured result the MCP endpoint serves."""
    data = json.dumps(completion_values(answer), separators=(",", ":")).encode()
    return Result(content=[Json(data)], structured_json=data)
