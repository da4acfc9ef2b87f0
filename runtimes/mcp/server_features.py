"""A stdio MCP server's resources, resource templates, prompts and completions as feature functions
of its pods (FunctionDefinitions with a `Feature`), which every door that serves resources and
prompts serves as it serves a Python runtime's `@toolmesh.resource`, `@toolmesh.prompt` and
`@toolmesh.completion`.

The mapping is an `mcp_url` runtime's (gateway/sources/remote_mcp/mcp_features.py): a resource's
function reads its URI (a template's, with its variables as string arguments), a prompt's gets the
prompt with its (string) arguments and answers its messages; a completion function per argument of
each prompt and template asks the server's `completion/complete`. The pods' side imports nothing
of the gateway's, so the gateway's mapping reuses what it can from here (`read_contents`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from toolmesh.runtimes.functions.definition import FunctionDefinition
from toolmesh.runtimes.functions.features import TEMPLATE_VARIABLE
from toolmesh.runtimes.functions.results import Binary, Text
from toolmesh.runtimes.functions.spec import (
    COMPLETION,
    PROMPT,
    RESOURCE,
    Annotations,
    Feature,
    function_name,
    name_limit,
    qualify,
)

#: Sends one request to the pod's server and returns its result.
Ask = Callable[[str, dict[str, Any]], Awaitable[Any]]


def resource_definitions(
    resources: Sequence[Mapping[str, Any]],
    templates: Sequence[Mapping[str, Any]],
    namespace: str,
    taken: set[str],
    ask: Ask,
) -> dict[str, FunctionDefinition]:
    found: dict[str, FunctionDefinition] = {}
    for item, key in [*((r, "uri") for r in resources), *((t, "uriTemplate") for t in templates)]:
        uri = item.get(key)
        if not isinstance(uri, str) or not uri:
            continue
        variables = TEMPLATE_VARIABLE.findall(uri)
        name = function_name(str(item.get("name") or uri), name_limit(namespace), taken)
        title = title_of(item)
        found[name] = FunctionDefinition(
            name=name,
            handler=_reader(uri, ask),
            description=str(item.get("description") or item.get("title") or uri),
            parameters={
                "type": "object",
                "properties": {v: {"type": "string"} for v in variables},
                "required": variables,
            },
            namespace=namespace,
            annotations=Annotations(read_only=True, idempotent=True, title=title),
            feature=Feature(RESOURCE, uri=uri, mime_type=str(item.get("mimeType") or ""), title=title),
        )
    return found


def prompt_definitions(
    prompts: Sequence[Mapping[str, Any]],
    namespace: str,
    taken: set[str],
    ask: Ask,
    named: dict[str, str] | None = None,
) -> dict[str, FunctionDefinition]:
    """`named`, when given, gets each prompt's function name by its own name."""
    found: dict[str, FunctionDefinition] = {}
    own_names: set[str] = set()
    for item in prompts:
        raw = item.get("name")
        if not isinstance(raw, str) or not raw:
            continue
        name, shown = prompt_names(raw, name_limit(namespace), taken, own_names)
        if named is not None:
            named[raw] = name
        title = title_of(item)
        found[name] = FunctionDefinition(
            name=name,
            handler=_getter(raw, ask),
            description=str(item.get("description") or raw),
            parameters=prompt_schema(item),
            namespace=namespace,
            annotations=Annotations(title=title),
            feature=Feature(PROMPT, title=title, name=shown),
        )
    return found


def prompt_names(
    raw: str, limit: int, taken: set[str], prompts: set[str], prefix: str = "tool"
) -> tuple[str, str]:
    """A prompt's function name, unique among all its server's functions (`taken`), and, when that
    had to differ, its name on MCP (`Feature.name`), unique among its server's prompts (`prompts`)
    only: MCP keeps tools and prompts in lists of their own, so a prompt may be named like a tool
    (mcp-server-fetch's `fetch`), while a namespace's functions, whatever they serve, share one
    name space (the catalog's, and the pods' registry, find them by it)."""
    own = function_name(raw, limit, prompts, prefix)
    if own not in taken:
        taken.add(own)
        return own, ""
    return function_name(raw, limit, taken, prefix), own


def completion_schema() -> dict[str, Any]:
    """A completion function's input: the typed prefix, and the arguments given so far."""
    return {
        "type": "object",
        "properties": {
            "value": {"type": "string"},
            "context": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["value"],
    }


def completion_targets(
    prompts: Sequence[Mapping[str, Any]],
    prompt_names: Mapping[str, str],
    templates: Sequence[Mapping[str, Any]],
    namespace: str,
) -> list[tuple[str, dict[str, str], str]]:
    """Each argument of each prompt and resource template as (the completion's `Feature.target`:
    the prompt function's qualified name or the template, the server's `ref`, the argument).
    `prompt_names` are the prompts' function names by their own names."""
    targets: list[tuple[str, dict[str, str], str]] = []
    for item in prompts:
        raw = item.get("name")
        if isinstance(raw, str) and raw in prompt_names:
            name = prompt_names[raw]
            for argument in item.get("arguments") or ():
                if isinstance(argument, dict) and isinstance(argument.get("name"), str):
                    ref = {"type": "ref/prompt", "name": raw}
                    targets.append((qualify(namespace, name), ref, argument["name"]))
    for item in templates:
        uri = item.get("uriTemplate")
        if isinstance(uri, str):
            for variable in TEMPLATE_VARIABLE.findall(uri):
                targets.append((uri, {"type": "ref/resource", "uri": uri}, variable))
    return targets


def completion_definitions(
    prompts: Sequence[Mapping[str, Any]],
    prompt_names: Mapping[str, str],
    templates: Sequence[Mapping[str, Any]],
    namespace: str,
    taken: set[str],
    ask: Ask,
) -> dict[str, FunctionDefinition]:
    """A completion function for each argument of each prompt and resource template, asking the
    server (`completion/complete`) for the suggestions: for a server whose capabilities say it
    completes. `prompt_names` are the prompts' function names by their own names."""
    found: dict[str, FunctionDefinition] = {}
    for target, ref, argument in completion_targets(prompts, prompt_names, templates, namespace):
        name = function_name(f"complete_{target}_{argument}", name_limit(namespace), taken)
        found[name] = FunctionDefinition(
            name=name,
            handler=_completer(ref, argument, ask),
            description=f"Suggest values for {argument!r} of {target}.",
            parameters=completion_schema(),
            namespace=namespace,
            annotations=Annotations(read_only=True),
            feature=Feature(COMPLETION, target=target, argument=argument),
        )
    return found


def completion_request(ref: Mapping[str, str], argument: str, value: str, context: Any) -> dict[str, Any]:
    """The params of `completion/complete` for `argument` of `ref`, typed so far as `value`, with
    the other arguments given so far (`context`, a mapping of strings, or nothing)."""
    params: dict[str, Any] = {"ref": dict(ref), "argument": {"name": argument, "value": value}}
    if isinstance(context, Mapping) and context:
        params["context"] = {"arguments": {str(k): str(v) for k, v in context.items()}}
    return params


def completion_values(answer: Any) -> list[str]:
    """The suggestions of a `completion/complete` result."""
    completion = answer.get("completion") if isinstance(answer, dict) else None
    values = completion.get("values") if isinstance(completion, dict) else None
    return [str(v) for v in values] if isinstance(values, list) else []


def _completer(ref: dict[str, str], argument: str, ask: Ask) -> Callable[..., Awaitable[list[str]]]:
    async def complete(value: str, context: dict[str, str] | None = None) -> list[str]:
        answer = await ask("completion/complete", completion_request(ref, argument, value, context))
        return completion_values(answer)

    return complete


def prompt_schema(item: Mapping[str, Any]) -> dict[str, Any]:
    """The input schema of a prompt's function: its arguments, each a string."""
    arguments = [a for a in item.get("arguments") or () if isinstance(a, dict) and a.get("name")]
    properties = {
        str(a["name"]): {
            "type": "string",
            **({"description": a["description"]} if a.get("description") else {}),
        }
        for a in arguments
    }
    required = [str(a["name"]) for a in arguments if a.get("required")]
    return {"type": "object", "properties": properties, "required": required}


def title_of(item: Mapping[str, Any]) -> str:
    """An item's display title, or nothing."""
    title = item.get("title")
    return title if isinstance(title, str) else ""


def _reader(uri: str, ask: Ask) -> Callable[..., Awaitable[list[Text | Binary]]]:
    async def read(**variables: str) -> list[Text | Binary]:
        expanded = TEMPLATE_VARIABLE.sub(lambda m: quote(str(variables.get(m.group(1), "")), safe=""), uri)
        return read_contents(await ask("resources/read", {"uri": expanded}))

    return read


def _getter(name: str, ask: Ask) -> Callable[..., Awaitable[list[Any]]]:
    async def get(**arguments: str) -> list[Any]:
        answer = await ask("prompts/get", {"name": name, "arguments": arguments})
        messages = answer.get("messages") if isinstance(answer, dict) else None
        return messages if isinstance(messages, list) else []

    return get


def read_contents(answer: Any) -> list[Text | Binary]:
    """A `resources/read` result: each of its contents an item (text, or bytes of its type)."""
    items: list[Text | Binary] = []
    contents = answer.get("contents") if isinstance(answer, dict) else None
    for item in contents if isinstance(contents, list) else ():
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("text"), str):
            items.append(Text(item["text"]))
        elif isinstance(item.get("blob"), str):
            try:
                data = base64.b64decode(item["blob"], validate=True)
            except (binascii.Error, ValueError):
                continue
            items.append(Binary(data, str(item.get("mimeType") or "application/octet-stream")))
    return items
