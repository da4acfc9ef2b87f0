"""What was wrong with a call's arguments, and where.

Both validators (pydantic's, for schemas drawn from Python signatures, and
jsonschema's, for hand-written JSON Schema documents) report through here, so
a caller sees one shape: a `Violation` per problem whose path points into the
arguments the way one would write it in JavaScript or jq: ``lines[1].qty``,
``tags[0]``, ``labels["a b"]``. The top level's keys are the argument names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolmesh.errors import InvalidArguments, Violation

#: Keys that read well after a dot; any other is quoted in brackets.
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
#: How many violations the error's message spells out (`violations` holds them all).
_SUMMARISED = 3

_EXPECTED = {
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "float_parsing": "number",
    "string_type": "string",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "list_type": "array",
    "tuple_type": "array",
    "set_type": "array",
    "frozen_set_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "dataclass_type": "object",
    "dataclass_exact_type": "object",
    "none_required": "null",
}
_MISSING = frozenset({"missing", "missing_argument", "missing_keyword_only_argument"})
UNEXPECTED = frozenset({"extra_forbidden", "unexpected_keyword_argument"})


def invalid_arguments(violations: Sequence[Violation]) -> InvalidArguments:
    """The error for these violations, its message summarising the first few."""
    summary = "; ".join(v.message for v in violations[:_SUMMARISED])
    more = f" (and {len(violations) - _SUMMARISED} more)" if len(violations) > _SUMMARISED else ""
    return InvalidArguments(f"invalid arguments: {summary}{more}", violations)


def not_an_object(value: Any) -> Violation:
    got = json_type(value)
    return Violation("", "a JSON object", got, f"arguments must be a JSON object, got {got}")


def malformed(detail: str) -> Violation:
    return Violation("", "a JSON object", "malformed JSON", f"arguments are not valid JSON: {detail}")


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(raw: Any) -> Violation | None:
    """The first lone surrogate in the JSON text `raw`, named with its argument's path, if that
    is what made it malformed. JSON's "\\ud800" escape is valid JSON but names no character:
    pydantic's parser refuses it as an "unexpected end of hex escape", which tells a caller
    nothing; Python's own parser reads it, so the argument holding it can be found."""
    if isinstance(raw, bytes | bytearray):
        raw = bytes(raw).decode(errors="replace")
    try:
        document = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    return _surrogate_in(document, [])


def _surrogate_in(value: Any, path: list[str | int]) -> Violation | None:
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is None:
            return None
        code = f"U+{ord(found.group()):04X}"
        where = json_path(path) or "arguments"
        message = f"{where}: holds a lone surrogate ({code}) at character {found.start()}, which is not text"
        return Violation(
            json_path(path), "text (UTF-8)", f"a lone surrogate {code}", message + ": send UTF-8"
        )
    items: list[tuple[str | int, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if _SURROGATE.search(key):
                where = json_path(path) or "the top level"
                message = f"a key at {where} holds a lone surrogate, which is not text: send UTF-8"
                return Violation(json_path(path), "a key in UTF-8", "a lone surrogate", message)
            items.append((key, item))
    elif isinstance(value, list):
        items = list(enumerate(value))
    for part, item in items:
        found_violation = _surrogate_in(item, [*path, part])
        if found_violation is not None:
            return found_violation
    return None


def json_path(parts: Iterable[str | int]) -> str:
    """``["lines", 1, "qty"]`` as ``lines[1].qty``."""
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            path += f".{part}" if path else part
        else:
            path += f"[{json.dumps(part)}]"
    return path


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def describe(value: Any) -> str:
    """A value as a violation's `got`: its JSON type, and the value itself when short."""
    kind = json_type(value)
    if kind in ("null", "object", "array"):
        return kind
    shown = json.dumps(value) if kind in ("boolean", "integer", "number", "string") else repr(value)
    return f"{kind} {_short(shown)}"


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _missing(path: Sequence[str | int], got: str = "nothing") -> Violation:
    what = "argument" if len(path) == 1 else "key"
    where = json_path(path)
    return Violation(where, f"a value (required {what})", got, f"{where}: missing required {what}")


def _unexpected(path: Sequence[str | int], value: Any) -> Violation:
    what = "argument" if len(path) == 1 else "key"
    where = json_path(path)
    return Violation(where, f"no such {what}", describe(value), f"{where}: unexpected {what}")


def _mismatch(path: Sequence[str | int], expected: str, value: Any) -> Violation:
    where = json_path(path)
    got = describe(value)
    return Violation(where, expected, got, f"{where or 'arguments'}: expected {expected}, got {got}")


# -- pydantic ---------------------------------------------------------------------------------


def from_pydantic(error: Mapping[str, Any], arguments: Any) -> Violation:
    """A pydantic error as a violation; `arguments` (the parsed input) tells data from union tags."""
    kind = error["type"]
    if kind == "json_invalid":
        return lone_surrogate(error.get("input")) or malformed(error.get("ctx", {}).get("error", ""))
    path = data_path(error["loc"], arguments, last_may_be_absent=kind in _MISSING)
    if kind == "model_type" and not path:
        return not_an_object(error["input"])
    if kind in _MISSING:
        return _missing(path)
    if kind in UNEXPECTED:
        return _unexpected(path, error["input"])
    expected = _EXPECTED.get(kind)
    if expected is None:
        expected = str(error["msg"]).removeprefix("Input should be ").removeprefix("Value error, ")
    return _mismatch(path, expected, error["input"])


def data_path(loc: Sequence[str | int], value: Any, *, last_may_be_absent: bool) -> list[str | int]:
    """The parts of pydantic's `loc` that are keys and indexes of the input.

    A union adds the failing member's name to `loc` ("Line", "int"); those are not in the
    data, so walking the input alongside tells them apart from keys.
    """
    parts: list[str | int] = []
    for position, part in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(part, int) and isinstance(value, list) and 0 <= part < len(value):
            parts.append(part)
            value = value[part]
        elif isinstance(value, dict) and (part in value or (last and last_may_be_absent)):
            parts.append(part)
            value = value.get(part)
    return parts


# -- jsonschema -------------------------------------------------------------------------------


def from_json_schema(error: Any) -> list[Violation]:
    """A `jsonschema.ValidationError` as violations (one per missing or unexpected key)."""
    path = list(error.absolute_path)
    keyword, expected, instance = error.validator, error.validator_value, error.instance
    if keyword == "required" and isinstance(instance, dict):
        return [_missing([*path, name]) for name in expected if name not in instance]
    if keyword == "additionalProperties" and isinstance(instance, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        declared = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        extra = [
            key
            for key in instance
            if key not in declared and not any(re.search(pattern, key) for pattern in patterns)
        ]
        if extra:
            return [_unexpected([*path, key], instance[key]) for key in extra]
    if keyword == "type":
        kinds = [expected] if isinstance(expected, str) else list(expected)
        return [_mismatch(path, " or ".join(kinds), instance)]
    if keyword == "enum":
        return [_mismatch(path, " or ".join(_short(json.dumps(v)) for v in expected), instance)]
    if keyword == "const":
        return [_mismatch(path, _short(json.dumps(expected)), instance)]
    if keyword in ("anyOf", "oneOf") and error.context:
        reasons = list(dict.fromkeys(_short(sub.message, 60) for sub in error.context))
        joined = " or ".join(reasons[:4])
        return [_mismatch(path, f"{'one' if keyword == 'oneOf' else 'any'} of: {joined}", instance)]
    where = json_path(path)
    summary = (
        f"{keyword} {_short(json.dumps(expected, default=str))}" if keyword else "nothing (false schema)"
    )
    message = f"{where or 'arguments'}: {_short(error.message, 120)}"
    return [Violation(where, summary, describe(instance), message)]
