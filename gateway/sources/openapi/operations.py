"""An OpenAPI document's operations as functions: names, one input schema, where arguments go.

A function's arguments are the operation's path, query and header parameters and its JSON body:
an object body's properties sit beside the parameters (when no name clashes), any other body is
the `body` argument. `Operation` remembers which is which, for openapi_runtime.py to build the request.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmesh.gateway.sources.openapi.schemas import DocumentError, SchemaConverter, resolve, with_definitions
from toolmesh.runtimes.functions.spec import Annotations, FunctionSpec, function_name, name_limit

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
#: Where a parameter goes; cookies are not sent.
LOCATIONS = ("path", "query", "header")
#: The argument holding a body that is not an object (or whose properties clash with parameters).
BODY = "body"


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation, as much as calling it needs."""

    spec: FunctionSpec
    method: str
    path: str
    #: Argument name -> (location, the parameter's name on the wire).
    parameters: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    #: The body's own properties when they are arguments (merged); empty when it is `body`.
    body_properties: frozenset[str] = frozenset()
    #: Whether the body must be sent (an empty object when no merged property is given).
    body_required: bool = False


def select(operation: Mapping[str, Any], include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether an operation passes `include` and `exclude` (globs over its operationId and tags)."""
    keys = [str(operation.get("operationId", "")), *(str(t) for t in operation.get("tags") or ())]

    def matches(patterns: Sequence[str]) -> bool:
        return any(fnmatch.fnmatchcase(key, p) for p in patterns for key in keys if key)

    return (not include or matches(include)) and not matches(exclude)


def read_operations(
    document: Mapping[str, Any], namespace: str, include: Sequence[str] = (), exclude: Sequence[str] = ()
) -> list[Operation]:
    converter = SchemaConverter(document)
    limit = name_limit(namespace)
    taken: set[str] = set()
    found = []
    for path, item in (document.get("paths") or {}).items():
        item = resolve(document, item)
        for method in METHODS:
            operation = item.get(method)
            if not isinstance(operation, Mapping) or not select(operation, include, exclude):
                continue
            try:
                found.append(
                    _operation(document, converter, namespace, path, method, item, operation, limit, taken)
                )
            except DocumentError as exc:
                raise DocumentError(f"{method.upper()} {path}: {exc}") from None
    return found


def _operation(
    document: Mapping[str, Any],
    converter: SchemaConverter,
    namespace: str,
    path: str,
    method: str,
    item: Mapping[str, Any],
    operation: Mapping[str, Any],
    limit: int,
    taken: set[str],
) -> Operation:
    raw = str(operation.get("operationId") or f"{method}_{path}")
    name = function_name(raw, limit, taken, prefix="op")
    used: set[str] = set()
    properties: dict[str, Any] = {}
    required: list[str] = []
    where: dict[str, tuple[str, str]] = {}
    for parameter in _parameters(document, item, operation):
        location = parameter.get("in")
        if location not in LOCATIONS:
            continue
        wire = str(parameter["name"])
        argument = wire if wire not in properties else f"{location}_{wire}"
        schema = converter.convert(_parameter_schema(parameter), used)
        if parameter.get("description") and "description" not in schema:
            schema = {**schema, "description": parameter["description"]}
        properties[argument] = schema
        where[argument] = (location, wire)
        if parameter.get("required") or location == "path":
            required.append(argument)
    merged: frozenset[str] = frozenset()
    body_required = False
    body = _json_body(document, operation)
    if body is not None:
        body_schema, body_required = body
        target = resolve(document, body_schema)
        own = target.get("properties") if isinstance(target, Mapping) else None
        if isinstance(own, Mapping) and own and not set(own) & set(properties) and "allOf" not in target:
            for key, value in own.items():
                properties[key] = converter.convert(value, used)
            required.extend(str(r) for r in target.get("required") or () if body_required)
            merged = frozenset(own)
        else:
            properties[BODY] = converter.convert(body_schema, used)
            if body_required:
                required.append(BODY)
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    spec = FunctionSpec(
        name=name,
        namespace=namespace,
        description=_description(operation, method, path),
        input_schema=with_definitions(input_schema, converter.definitions(used)),
        output_schema=_output_schema(document, converter, operation),
        annotations=Annotations(
            read_only=method in ("get", "head", "options"),
            idempotent=method in ("get", "head", "options", "put", "delete"),
            destructive=method == "delete",
            open_world=True,
            title=str(operation.get("summary") or ""),
        ),
    )
    return Operation(spec, method, path, where, merged, body_required)


def _parameters(
    document: Mapping[str, Any], item: Mapping[str, Any], operation: Mapping[str, Any]
) -> Iterable[Mapping[str, Any]]:
    # The operation's own parameters override the path item's of the same name and location.
    chosen: dict[tuple[str, str], Mapping[str, Any]] = {}
    for parameter in [*(item.get("parameters") or ()), *(operation.get("parameters") or ())]:
        parameter = resolve(document, parameter)
        if not isinstance(parameter, Mapping) or "name" not in parameter:
            raise DocumentError("a parameter without a name")
        chosen[(str(parameter.get("in")), str(parameter["name"]))] = parameter
    return chosen.values()


def _parameter_schema(parameter: Mapping[str, Any]) -> Any:
    if "schema" in parameter:
        return parameter["schema"]
    for media in (parameter.get("content") or {}).values():
        return media.get("schema", {})
    return {"type": "string"}


def _json_media(content: Any) -> Mapping[str, Any] | None:
    if not isinstance(content, Mapping):
        return None
    for media_type, media in content.items():
        kind = str(media_type).split(";")[0].strip().lower()
        if kind == "application/json" or kind.endswith("+json") or kind == "*/*":
            return media if isinstance(media, Mapping) else {}
    return None


def _json_body(document: Mapping[str, Any], operation: Mapping[str, Any]) -> tuple[Any, bool] | None:
    body = resolve(document, operation.get("requestBody"))
    if not isinstance(body, Mapping):
        return None
    media = _json_media(body.get("content"))
    if media is None:
        return None
    return media.get("schema", {}), bool(body.get("required"))


def _output_schema(
    document: Mapping[str, Any], converter: SchemaConverter, operation: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The JSON schema of the first 2xx answer, if it is an object (structured output must be)."""
    for status, response in sorted((operation.get("responses") or {}).items(), key=lambda kv: str(kv[0])):
        if not str(status).startswith("2"):
            continue
        media = _json_media(resolve(document, response).get("content"))
        if media is None or "schema" not in media:
            return None
        if not _is_object(document, media["schema"]):
            return None
        # MCP wants "type": "object" at the top, even beside a $ref or an allOf.
        return {"type": "object", **converter.document_schema(media["schema"])}
    return None


def _is_object(document: Mapping[str, Any], schema: Any, depth: int = 0) -> bool:
    target = resolve(document, schema)
    if not isinstance(target, Mapping) or depth > 8 or target.get("nullable") is True:
        return False
    if target.get("type") == "object" or ("type" not in target and "properties" in target):
        return True
    parts = target.get("allOf")
    return isinstance(parts, list) and bool(parts) and all(_is_object(document, p, depth + 1) for p in parts)


def _description(operation: Mapping[str, Any], method: str, path: str) -> str:
    summary = str(operation.get("summary") or "").strip()
    text = str(operation.get("description") or "").strip()
    described = "\n\n".join(dict.fromkeys(part for part in (summary, text) if part))
    return described or f"{method.upper()} {path}"
