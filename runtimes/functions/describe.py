"""Functions as readable text, for putting a toolset into a prompt."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from toolmesh.runtimes.functions.spec import FunctionSpec


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
