"""What a hosted function looks like from outside: its spec, free of any transport."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

#: Function and namespace names: words of letters and digits joined by single
#: '_' or '-'. Excluding '.' and '__' keeps both qualified forms reversible.
NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*$")
#: Joins namespace and name in the qualified name ("weather.get_forecast").
NAMESPACE_SEPARATOR = "."
#: Joins them in tool names for LLM APIs, which allow only [a-zA-Z0-9_-]
#: ("weather__get_forecast").
TOOL_NAME_SEPARATOR = "__"
#: OpenAI's limit on tool names, which the tool-name form must respect.
MAX_TOOL_NAME = 64


def check_name(name: str, what: str = "function name") -> str:
    """Return `name` if it is a valid function or namespace name, else raise ValueError."""
    if not NAME_PATTERN.match(name):
        raise ValueError(
            f"invalid {what} {name!r}: use letters and digits, with words joined by a single "
            "'_' or '-' (no leading, trailing or doubled separators)"
        )
    return name


def qualify(namespace: str, name: str) -> str:
    """The qualified name of `name` in `namespace` ("ns.name", or "name" with no namespace)."""
    return f"{namespace}{NAMESPACE_SEPARATOR}{name}" if namespace else name


def tool_name(qualified_name: str) -> str:
    """The name an LLM API sees: "ns.name" becomes "ns__name"."""
    return qualified_name.replace(NAMESPACE_SEPARATOR, TOOL_NAME_SEPARATOR, 1)


def from_tool_name(name: str) -> str:
    """Invert `tool_name`. Names never contain '__' or '.', so this is exact."""
    return name.replace(TOOL_NAME_SEPARATOR, NAMESPACE_SEPARATOR, 1)


@dataclass(frozen=True, slots=True)
class Annotations:
    """Hints about a function's side effects, as MCP defines them."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False
    title: str = ""
    #: Whether `/v1/execute` (free text) may run it: one of FREE_TEXT_POLICIES.
    free_text: str = "auto"


#: How a function may run from free text (`POST /v1/execute`, gRPC `Execute`, the console), where
#: the router, not a client, chose it (gateway/core/free_text.py):
#:   auto     read_only functions run; any other asks for a confirmation first (the default)
#:   run      runs without a confirmation, whatever its annotations say
#:   confirm  always asks for a confirmation, even when read_only
#:   never    never runs from free text: call it directly
FREE_TEXT_AUTO, FREE_TEXT_RUN, FREE_TEXT_CONFIRM, FREE_TEXT_NEVER = "auto", "run", "confirm", "never"
FREE_TEXT_POLICIES = (FREE_TEXT_AUTO, FREE_TEXT_RUN, FREE_TEXT_CONFIRM, FREE_TEXT_NEVER)
FreeTextPolicy = Literal["auto", "run", "confirm", "never"]


#: A function's `task_support` (`@toolmesh.function(task_support=...)`): whether an MCP client
#: may run it as a task, an asynchronous job it polls (gateway/mcp/tasks.py), or must.
TASKS_OPTIONAL = "optional"
TASKS_REQUIRED = "required"
TASK_SUPPORT = ("", TASKS_OPTIONAL, TASKS_REQUIRED)


#: What a function can be besides a tool (`Feature.kind`): MCP's other server features.
RESOURCE = "resource"
PROMPT = "prompt"
COMPLETION = "completion"
FEATURE_KINDS = (RESOURCE, PROMPT, COMPLETION)


@dataclass(frozen=True, slots=True)
class Feature:
    """A function that serves an MCP resource, prompt or completion instead of being a tool.

    - resource: `uri` is the resource's URI, or a URI template whose ``{name}`` parts are the
      function's parameters; `mime_type` is what its reads are (empty: text or JSON as returned).
    - prompt: the function returns the prompt's messages; its parameters are the arguments.
    - completion: suggests values for `argument` of `target`, a prompt's qualified name or a
      resource template's URI.

    Features are not tools: tool lists leave them out, and only their MCP method calls them.
    """

    kind: str
    uri: str = ""
    mime_type: str = ""
    target: str = ""
    argument: str = ""
    title: str = ""
    #: A prompt's name on MCP when its function's had to differ (an MCP server's prompt named like
    #: one of its tools: MCP keeps the two lists apart, a namespace's functions share one name
    #: space); empty for the function's name.
    name: str = ""


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """Name, description and schemas of one function.

    `input_schema` and `output_schema` are JSON Schema documents (dicts);
    `output_schema` is None when the function declares no structured output.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    namespace: str = ""
    output_schema: dict[str, Any] | None = None
    annotations: Annotations = field(default_factory=Annotations)
    timeout: float | None = None
    version: str = ""
    streaming: bool = False
    runtime: str = ""
    #: Set for a resource, prompt or completion; None for a tool.
    feature: Feature | None = None
    #: Prompts the function answers, for the router (see `@toolmesh.function(examples=...)`).
    examples: tuple[str, ...] = ()
    #: Whether MCP clients may run it as a task: TASKS_OPTIONAL, TASKS_REQUIRED, or "" (never).
    task_support: str = ""
    #: The tool's MCP `_meta` as the MCP server behind it lists it (a JSON object), or None.
    meta: dict[str, Any] | None = None

    @property
    def qualified_name(self) -> str:
        return qualify(self.namespace, self.name)


@dataclass(frozen=True, slots=True)
class NamespaceSpec:
    """A namespace and what it is for (a toolset class's docstring, for instance)."""

    name: str
    description: str = ""


def spec_to_dict(spec: FunctionSpec) -> dict[str, Any]:
    """toolmesh's own JSON form of a spec (what `GET /v1/functions` returns)."""
    annotations = spec.annotations
    return {
        "name": spec.qualified_name,
        "namespace": spec.namespace,
        "description": spec.description,
        "parameters": spec.input_schema,
        "output_schema": spec.output_schema,
        "annotations": {
            "read_only": annotations.read_only,
            "destructive": annotations.destructive,
            "idempotent": annotations.idempotent,
            "open_world": annotations.open_world,
            "title": annotations.title,
            "free_text": annotations.free_text,
        },
        "timeout": spec.timeout,
        "streaming": spec.streaming,
        "version": spec.version,
        "examples": list(spec.examples),
        **({"task_support": spec.task_support} if spec.task_support else {}),
        **({"feature": _feature_dict(spec.feature)} if spec.feature is not None else {}),
        **({"meta": spec.meta} if spec.meta else {}),
    }


def _feature_dict(feature: Feature) -> dict[str, str]:
    return {
        "kind": feature.kind,
        "uri": feature.uri,
        "mime_type": feature.mime_type,
        "target": feature.target,
        "argument": feature.argument,
        "title": feature.title,
        **({"name": feature.name} if feature.name else {}),
    }


def spec_from_dict(item: Mapping[str, Any]) -> FunctionSpec:
    """The inverse of `spec_to_dict`."""
    # `name` is the qualified name; names never contain ".", so the split is exact.
    namespace, _, name = str(item["name"]).rpartition(".")
    hints = item.get("annotations") or {}
    timeout = item.get("timeout")
    feature = item.get("feature")
    return FunctionSpec(
        name=name,
        namespace=namespace,
        description=item.get("description") or "",
        input_schema=dict(item.get("parameters") or {}),
        output_schema=item.get("output_schema"),
        annotations=Annotations(
            read_only=bool(hints.get("read_only")),
            destructive=bool(hints.get("destructive")),
            idempotent=bool(hints.get("idempotent")),
            open_world=bool(hints.get("open_world")),
            title=hints.get("title") or "",
            free_text=hints.get("free_text") or FREE_TEXT_AUTO,
        ),
        timeout=None if timeout is None else float(timeout),
        version=item.get("version") or "",
        streaming=bool(item.get("streaming")),
        feature=None if not feature else Feature(**{k: str(v) for k, v in feature.items()}),
        examples=tuple(str(e) for e in item.get("examples") or ()),
        task_support=str(item.get("task_support") or ""),
        meta=dict(item["meta"]) if isinstance(item.get("meta"), dict) else None,
    )


# -- functions as readable text, for putting a toolset into a prompt ---------------------------


def type_label(schema: Mapping[str, Any]) -> str:
    """A short human label for a JSON schema: "integer", "array of string", "'c' | 'f'"."""
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(type_label(option) for option in schema[key])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " | ".join(kind)
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"array of {type_label(schema['items'])}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {type_label(schema['additionalProperties'])}"
    return str(kind)


def render_function(spec: FunctionSpec) -> str:
    properties: dict[str, Any] = spec.input_schema.get("properties", {})
    required = set(spec.input_schema.get("required", ()))
    signature = ", ".join(
        f"{name}: {type_label(prop)}" + ("" if name in required else "?") for name, prop in properties.items()
    )
    returns = f" -> {type_label(spec.output_schema)}" if spec.output_schema else ""
    lines = [f"{spec.qualified_name}({signature}){returns}"]
    if spec.description:
        lines.extend(f"    {line}".rstrip() for line in spec.description.splitlines())
    for name, prop in properties.items():
        note = "required" if name in required else "optional"
        if "default" in prop:
            note += f", default {json.dumps(prop['default'])}"
        text = f"    - {name} ({type_label(prop)}, {note})"
        if prop.get("description"):
            text += f": {prop['description']}"
        lines.append(text)
    return "\n".join(lines)


def render_functions(specs: Iterable[FunctionSpec]) -> str:
    """One block per function: qualified name and signature, description, argument docs."""
    return "\n\n".join(render_function(spec) for spec in specs)


#: Characters of the hash that keeps a shortened or clashing name unique.
_HASH = 8


def name_limit(namespace: str) -> int:
    """The longest function name under `namespace` (so that its tool name fits 64 characters)."""
    return MAX_TOOL_NAME - len(namespace) - len(TOOL_NAME_SEPARATOR)


def function_name(raw: str, limit: int, taken: set[str], prefix: str = "tool") -> str:
    """`raw` made a valid function name of at most `limit` characters, not in `taken`: a name that
    does not start with a letter gets `prefix`, one too long or taken a hash of `raw`. Accented
    letters lose their accents ("météo" is "meteo"); other characters outside ASCII are separators."""
    unaccented = "".join(c for c in unicodedata.normalize("NFKD", raw) if not unicodedata.combining(c))
    name = re.sub(r"[^A-Za-z0-9]+", "_", unaccented, flags=re.ASCII).strip("_") or prefix
    if not name[0].isalpha():
        name = f"{prefix}_{name}"
    if len(name) > limit or name in taken:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:_HASH]
        name = f"{name[: limit - _HASH - 1].rstrip('_')}_{digest}"
    unique, counter = name, 2
    while unique in taken:  # a hash that clashes too: count
        unique = f"{name[: limit - len(str(counter)) - 1].rstrip('_')}_{counter}"
        counter += 1
    taken.add(unique)
    return unique
