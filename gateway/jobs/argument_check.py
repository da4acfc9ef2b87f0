"""What can be checked of a job's arguments at submit, from the function's JSON schema alone.

A synchronous call learns of bad arguments from its pod, which validates them in full. A job's
caller is gone by the time a pod runs it, so the obvious mistakes are refused at submit with
the same 422 `invalid_arguments`: a missing required argument, an unknown one, and a top-level
value of the wrong JSON type (strictly: "5" is no integer, true is no number). Anything deeper
(nested fields, constraints) is still checked by the pod, and then ends the job `failed`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolmesh.errors import InvalidArguments, InvalidRequest, Violation

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _kind(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _is(value, name):
            return name
    return type(value).__name__


def _is(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(name, (object,)))


def _types(schema: Mapping[str, Any]) -> set[str] | None:
    """The JSON types a schema admits, or None when it does not say plainly (refs, all-of...)."""
    if "type" in schema:
        given = schema["type"]
        return {given} if isinstance(given, str) else set(given)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list):
        found: set[str] = set()
        for branch in branches:
            kinds = _types(branch) if isinstance(branch, Mapping) else None
            if kinds is None:
                return None
            found |= kinds
        return found
    return None


def check_arguments(schema: Mapping[str, Any], arguments: bytes) -> None:
    """Raise InvalidArguments naming every top-level problem of `arguments` (a JSON object)."""
    try:
        values = json.loads(arguments)
    except (ValueError, RecursionError):
        raise InvalidRequest("arguments are not valid JSON", param="arguments") from None
    if not isinstance(values, dict):
        raise InvalidRequest("arguments must be a JSON object", param="arguments")
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    problems: list[Violation] = []
    for name in sorted(required - set(values)):
        problems.append(Violation(name, "a value", "nothing", f"{name}: missing required argument"))
    for name, value in values.items():
        prop = properties.get(name)
        if prop is None:
            if schema.get("additionalProperties") is False:
                problems.append(
                    Violation(name, "no such argument", _kind(value), f"{name}: unknown argument")
                )
            continue
        if value is None and name not in required:
            continue  # null for an optional argument means "use the default"
        kinds = _types(prop) if isinstance(prop, Mapping) else None
        if kinds is not None and not any(_is(value, kind) for kind in kinds):
            expected = " or ".join(sorted(kinds))
            got = f"{_kind(value)} {json.dumps(value)[:40]}"
            problems.append(Violation(name, expected, got, f"{name}: expected {expected}, got {got}"))
    if problems:
        summary = "; ".join(p.message for p in problems)
        raise InvalidArguments(f"invalid arguments: {summary}", problems)
