"""An OpenAPI document's operations as functions: names, one input schema, where arguments go.

A function's arguments are the operation's path, query, header and cookie parameters and its body
(JSON when the operation offers it, else a form, text or raw bytes in base64): an object body's
properties sit beside the parameters (when no name clashes), any other body is the `body` argument.
`Operation` remembers which is which, for request.py to build the request.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmesh.gateway.sources.openapi.parameters import WireParameter
from toolmesh.gateway.sources.openapi.schemas import (
    ANSWER,
    DocumentError,
    SchemaConverter,
    resolve,
    with_definitions,
)
from toolmesh.gateway.sources.openapi.servers import first_server
from toolmesh.runtimes.functions.spec import Annotations, FunctionSpec, function_name, name_limit

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
#: Where a parameter goes.
LOCATIONS = ("path", "query", "header", "cookie")
#: Header parameters the spec says to ignore: the request's own media types and credentials.
IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
TEXT = "text/plain"
OCTETS = "application/octet-stream"
#: A property name every function-calling API takes (Anthropic's pattern; OpenAI's is wider).
_PROPERTY_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: The argument holding a body that is not an object (or whose properties clash with parameters).
BODY = "body"


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation, as much as calling it needs."""

    spec: FunctionSpec
    method: str
    path: str
    #: Argument name -> the parameter it is (where it goes, how it is written).
    parameters: Mapping[str, WireParameter] = field(default_factory=dict)
    #: The body's own properties when they are arguments (merged); empty when it is `body`.
    body_properties: frozenset[str] = frozenset()
    #: Whether the body must be sent (an empty object when no merged property is given).
    body_required: bool = False
    #: The body's media type: JSON (or a +json type), FORM, MULTIPART, text (is_text) or any other
    #: (raw bytes, the `body` argument in base64).
    body_media: str = JSON
    #: A form's binary fields (arguments in base64) -> the media type of their parts.
    binary: Mapping[str, str] = field(default_factory=dict)
    #: The operation's own server (its or its path's `servers`), absolute; None: the runtime's.
    server: str | None = None


def select(operation: Mapping[str, Any], include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether an operation passes `include` and `exclude` (globs over its operationId and tags)."""
    keys = [str(operation.get("operationId", "")), *(str(t) for t in operation.get("tags") or ())]

    def matches(patterns: Sequence[str]) -> bool:
        return any(fnmatch.fnmatchcase(key, p) for p in patterns for key in keys if key)

    return (not include or matches(include)) and not matches(exclude)


def read_operations(
    document: Mapping[str, Any],
    namespace: str,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    fixed_headers: Collection[str] = (),
    fixed_query: Collection[str] = (),
) -> list[Operation]:
    """The operations `include` and `exclude` select; a header parameter named in `fixed_headers`
    (the runtime's own `headers`), or a query parameter in `fixed_query` (its `query`), is no
    argument: the runtime sends its value."""
    converters = SchemaConverter(document), SchemaConverter(document, ANSWER)
    ignored = {("header", h) for h in IGNORED_HEADERS | {h.lower() for h in fixed_headers}}
    ignored |= {("query", q) for q in fixed_query}
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
                    _operation(
                        document, converters, namespace, path, method, item, operation, limit, taken, ignored
                    )
                )
            except DocumentError as exc:
                raise DocumentError(f"{method.upper()} {path}: {exc}") from None
    return found


def _operation(
    document: Mapping[str, Any],
    converters: tuple[SchemaConverter, SchemaConverter],
    namespace: str,
    path: str,
    method: str,
    item: Mapping[str, Any],
    operation: Mapping[str, Any],
    limit: int,
    taken: set[str],
    ignored: Collection[tuple[str, str]],
) -> Operation:
    converter, answers = converters
    raw = str(operation.get("operationId") or f"{method}_{path}")
    name = function_name(raw, limit, taken, prefix="op")
    used: set[str] = set()
    properties: dict[str, Any] = {}
    required: list[str] = []
    where: dict[str, WireParameter] = {}
    for parameter in _parameters(document, path, item, operation):
        location = parameter.get("in")
        wire = str(parameter["name"])
        if location not in LOCATIONS or (location, wire.lower() if location == "header" else wire) in ignored:
            continue
        argument = _argument(wire, str(location), properties)
        schema = converter.convert(_parameter_schema(parameter), used)
        if parameter.get("description") and "description" not in schema:
            schema = {**schema, "description": parameter["description"]}
        properties[argument] = schema
        where[argument] = WireParameter.of(parameter)
        if parameter.get("required") or location == "path":
            required.append(argument)
    merged, body_required, media_type, binary = _add_body(
        document, converter, operation, properties, required, used
    )
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    spec = FunctionSpec(
        name=name,
        namespace=namespace,
        description=_description(operation, method, path),
        input_schema=with_definitions(input_schema, converter.definitions(used)),
        output_schema=_output_schema(document, answers, operation),
        annotations=Annotations(
            read_only=method in ("get", "head", "options"),
            idempotent=method in ("get", "head", "options", "put", "delete"),
            destructive=method == "delete",
            open_world=True,
            title=str(operation.get("summary") or ""),
        ),
    )
    server = first_server(operation.get("servers")) or first_server(item.get("servers"))
    return Operation(spec, method, path, where, merged, body_required, media_type, binary, server)


def _argument(wire: str, location: str, taken: Collection[str]) -> str:
    """A parameter's argument name: its name with what function-calling APIs refuse in a property
    name (anything but letters, digits, `_`, `.` and `-`) made `_` (`page[size]`: `page_size`),
    and its location before it when another parameter has it (`id` in the path and the query)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", wire).strip("_") or location
    if name in taken:
        name = f"{location}_{name}"
    stem, n = name, 1
    while name in taken:
        n += 1
        name = f"{stem}_{n}"
    return name


def _add_body(
    document: Mapping[str, Any],
    converter: SchemaConverter,
    operation: Mapping[str, Any],
    properties: dict[str, Any],
    required: list[str],
    used: set[str],
) -> tuple[frozenset[str], bool, str, dict[str, str]]:
    """Adds the body's arguments; gives the merged properties, whether the body is required, its
    media type and its binary form fields."""
    body = _body(document, operation)
    if body is None:
        return frozenset(), False, JSON, {}
    media_type, media, body_required = body
    raw_bytes = not is_json(media_type) and not is_text(media_type) and media_type not in (FORM, MULTIPART)
    body_schema = media.get("schema", {"type": "string"} if is_text(media_type) else {})
    target = resolve(document, body_schema)
    own = target.get("properties") if isinstance(target, Mapping) else None
    # Read-only properties are the service's to set: no arguments.
    own = {k: v for k, v in own.items() if not converter.left_out(v)} if isinstance(own, Mapping) else {}
    # An object body's properties are arguments, unless a name clashes with a parameter's or is
    # one function-calling APIs refuse ("@type", "first name").
    mergeable = (
        own
        and not set(own) & set(properties)
        and "allOf" not in target
        and all(_PROPERTY_NAME.fullmatch(str(name)) for name in own)
    )
    if raw_bytes:
        body_schema = {"type": "string", "contentEncoding": "base64", "contentMediaType": media_type}
    elif mergeable and not is_text(media_type):
        binary: dict[str, str] = {}
        for key, value in own.items():
            part = _binary_part(document, value, media.get("encoding"), key)
            if part is not None and not is_json(media_type):
                binary[key] = part
                properties[key] = _base64_schema(document, value)
            else:
                properties[key] = converter.convert(value, used)
        required.extend(str(r) for r in target.get("required") or () if body_required and r in own)
        return frozenset(own), body_required, media_type, binary
    properties[BODY] = converter.convert(body_schema, used)
    if body_required:
        required.append(BODY)
    return frozenset(), body_required, media_type, {}


def _parameters(
    document: Mapping[str, Any], path: str, item: Mapping[str, Any], operation: Mapping[str, Any]
) -> Iterable[Mapping[str, Any]]:
    # The operation's own parameters override the path item's of the same name and location.
    chosen: dict[tuple[str, str], Mapping[str, Any]] = {}
    for parameter in [*(item.get("parameters") or ()), *(operation.get("parameters") or ())]:
        parameter = resolve(document, parameter)
        if not isinstance(parameter, Mapping) or "name" not in parameter:
            raise DocumentError("a parameter without a name")
        chosen[(str(parameter.get("in")), str(parameter["name"]))] = parameter
    # A path's `{name}` the document forgot to declare is still the caller's to fill in.
    for name in re.findall(r"\{([^{}]+)\}", path):
        chosen.setdefault(("path", name), {"name": name, "in": "path", "schema": {"type": "string"}})
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


def _body(
    document: Mapping[str, Any], operation: Mapping[str, Any]
) -> tuple[str, Mapping[str, Any], bool] | None:
    """The request body to send: its media type, media object and whether it is required.
    JSON when offered, else a multipart form, a urlencoded form, plain text, other text (XML),
    raw bytes of any other type, in that order; None without a body."""
    body = resolve(document, operation.get("requestBody"))
    if not isinstance(body, Mapping) or not isinstance(body.get("content"), Mapping) or not body["content"]:
        return None
    content = body["content"]
    required = bool(body.get("required"))
    json_media = _json_media(content)
    if json_media is not None:
        kind = next(k for k in map(_kind, content) if is_json(k) or k == "*/*")
        return (JSON if kind == "*/*" else kind), json_media, required
    offered = {_kind(m): media if isinstance(media, Mapping) else {} for m, media in content.items()}
    kind = next(
        (k for k in (MULTIPART, FORM, TEXT) if k in offered),
        next((k for k in offered if is_text(k)), next(iter(offered))),
    )
    # A range ("image/*") says what the service takes, not what to call it.
    return (OCTETS if "*" in kind else kind), offered[kind], required


def is_json(kind: str) -> bool:
    return kind == JSON or kind.endswith("+json")


def is_text(kind: str) -> bool:
    """Whether a body of this media type is text (the `body` argument as a string)."""
    return kind.startswith("text/") or kind == "application/xml" or kind.endswith("+xml")


def _kind(media_type: Any) -> str:
    return str(media_type).split(";")[0].strip().lower()


def _binary_part(document: Mapping[str, Any], schema: Any, encoding: Any, name: str) -> str | None:
    """The media type of a form field's part when the field is binary (`format: binary`, or 3.1's
    `contentMediaType` without `contentEncoding`), else None."""
    target = resolve(document, schema)
    if isinstance(target, Mapping) and target.get("type") == "array":
        target = resolve(document, target.get("items"))
    if not isinstance(target, Mapping):
        return None
    raw = target.get("format") == "binary" or (
        "contentMediaType" in target and "contentEncoding" not in target
    )
    if not raw:
        return None
    declared = encoding.get(name) if isinstance(encoding, Mapping) else None
    if isinstance(declared, Mapping) and isinstance(declared.get("contentType"), str):
        return str(declared["contentType"]).split(",")[0].strip()
    return str(target.get("contentMediaType") or "application/octet-stream")


def _base64_schema(document: Mapping[str, Any], schema: Any) -> dict[str, Any]:
    """A binary field's argument: base64 text (an array of them for an array of files)."""
    target = resolve(document, schema)
    text = {"type": "string", "contentEncoding": "base64"}
    description = str(target.get("description") or "").strip()
    out: dict[str, Any] = {"type": "array", "items": text} if target.get("type") == "array" else dict(text)
    out["description"] = f"{description} (base64)" if description else "The file's bytes in base64."
    return out


def _output_schema(
    document: Mapping[str, Any], converter: SchemaConverter, operation: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The JSON schema of the first 2xx answer (`default`'s when none is declared). MCP wraps one
    that is not an object in `{"result": ...}` (gateway/mcp/convert.py), as a Python function's."""
    responses = operation.get("responses")
    if not isinstance(responses, Mapping):
        return None
    success = sorted((str(s), r) for s, r in responses.items() if str(s).startswith("2"))
    chosen = success[0][1] if success else responses.get("default")
    if chosen is None:
        return None
    media = _json_media(resolve(document, chosen).get("content"))
    if media is None or "schema" not in media:
        return None
    if not _is_object(document, media["schema"]):
        return converter.document_schema(media["schema"])
    # MCP wants "type": "object" at the top, even beside a $ref or an allOf.
    return {"type": "object", **converter.document_schema(media["schema"])}


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
