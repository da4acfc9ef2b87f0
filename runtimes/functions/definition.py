"""The explicit builder, for people who prefer to write a function's schema by hand::

    convert = toolmesh.FunctionDefinition(
        name="convert_temperature",
        description="Convert a temperature between Celsius and Fahrenheit.",
        parameters=[
            toolmesh.Parameter("value", "number", "The temperature to convert"),
            toolmesh.Parameter("to", "string", "Target unit", enum=["c", "f"], default="c"),
        ],
        handler=_convert,
    )

A module-level FunctionDefinition is discovered like a function. Arguments are
validated against exactly the schema the parameters describe, and the handler
receives every declared default the caller left out.

`parameters` may also be a JSON Schema 2020-12 document, written by hand or
taken from elsewhere: it is checked when the module loads, published exactly as
given, and arguments are validated against it (with `jsonschema`)::

    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": False,
    }
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic

from toolmesh.errors import DefinitionError
from toolmesh.runtimes.functions.hosted import ArgumentCheck, HostedFunction, Kind, _is_context, make_spec
from toolmesh.runtimes.functions.schema import (
    MISSING,
    NO_DEFAULT,
    ArgumentValidator,
    ParameterInfo,
    build_arguments,
    signature_parameters,
)
from toolmesh.runtimes.functions.spec import Annotations, Feature, qualify
from toolmesh.runtimes.functions.violations import (
    from_json_schema,
    invalid_arguments,
    malformed,
    not_an_object,
)

JsonType = Literal["string", "number", "integer", "boolean", "array", "object"]
_SCALARS: dict[str, Any] = {"string": str, "number": float, "integer": int, "boolean": bool}


@dataclass(frozen=True)
class Parameter:
    """One argument of a hand-written function definition.

    `required` defaults to True unless a `default` is given. `items` is the item
    type of an array (a type name or a Parameter); `properties` are the fields
    of an object.
    """

    name: str
    type: JsonType = "string"
    description: str = ""
    required: bool | None = None
    default: Any = MISSING
    enum: Sequence[Any] | None = None
    items: Parameter | JsonType | None = None
    properties: Sequence[Parameter] = ()

    @property
    def is_required(self) -> bool:
        return self.default is MISSING if self.required is None else self.required

    def python_type(self, owner: str) -> Any:
        """The Python type whose validation and JSON schema match this parameter."""
        if self.enum is not None:
            if not self.enum:
                raise DefinitionError(f"{owner}: parameter {self.name!r} has an empty enum")
            return Literal[tuple(self.enum)]
        if self.type in _SCALARS:
            return _SCALARS[self.type]
        if self.type == "array":
            item = (
                self.items if isinstance(self.items, Parameter) else Parameter("item", self.items or "string")
            )
            return list[item.python_type(owner)]  # type: ignore[misc]
        if self.type == "object":
            if not self.properties:
                return dict[str, Any]
            fields: dict[str, Any] = {p.name: p.field(owner) for p in self.properties}
            config = pydantic.ConfigDict(extra="forbid", strict=True)
            return pydantic.create_model(self.name.title().replace("_", ""), __config__=config, **fields)
        raise DefinitionError(f"{owner}: parameter {self.name!r} has unknown type {self.type!r}")

    def annotated(self, owner: str) -> Any:
        base = self.python_type(owner)
        return base | None if self.default is None else base

    @property
    def _default(self) -> Any:
        if self.is_required:
            return MISSING
        return NO_DEFAULT if self.default is MISSING else self.default

    def info(self, owner: str) -> ParameterInfo:
        return ParameterInfo(self.name, self.annotated(owner), self._default, self.description)

    def field(self, owner: str) -> tuple[Any, Any]:
        # Nested properties are plain pydantic fields: absent optional ones become None.
        default = {MISSING: ..., NO_DEFAULT: None}.get(self._default, self._default)
        annotation = self.annotated(owner) if default is not None else self.annotated(owner) | None
        return annotation, pydantic.Field(default, description=self.description or None)


@dataclass(frozen=True)
class FunctionDefinition:
    """A function whose schema is written by hand. `handler` receives the
    arguments as keyword arguments (plus a Context parameter if it declares one)."""

    name: str
    handler: Callable[..., Any]
    description: str = ""
    #: Parameters, or a JSON Schema 2020-12 document (a dict) describing the arguments object.
    parameters: Sequence[Parameter] | Mapping[str, Any] = ()
    namespace: str = ""
    timeout: float | None = None
    annotations: Annotations = field(default_factory=Annotations)
    output_schema: dict[str, Any] | None = None
    version: str = ""
    #: Prompts this function answers, for the router: each is indexed as one more view of it.
    examples: Sequence[str] = ()
    #: "optional" or "required": MCP clients may (must) run it as a task (`@toolmesh.function`).
    task_support: str = ""
    #: Set when it serves an MCP resource, prompt or completion rather than a tool (the bridge of
    #: a stdio MCP server, runtimes/mcp/); its handler returns what the feature's method answers.
    feature: Feature | None = None
    #: The tool's MCP `_meta`, for a stdio MCP server's tool (runtimes/mcp/).
    meta: dict[str, Any] | None = None

    def host(self, namespace: str = "") -> HostedFunction:
        ns = self.namespace or namespace
        owner = qualify(ns, self.name)
        _, context_param, _, _ = signature_parameters(self.handler, {}, _is_context)
        kind = Kind.of(self.handler)
        schema: dict[str, Any]
        validator: ArgumentCheck
        if isinstance(self.parameters, Mapping):
            validator = JsonSchemaArguments(owner, self.parameters)
            schema = validator.schema
        else:
            schema, validator = _from_parameters(owner, self.parameters)
        spec = make_spec(
            name=self.name,
            namespace=ns,
            description=self.description,
            input_schema=schema,
            output=self.output_schema,
            annotations=self.annotations,
            timeout=self.timeout,
            version=self.version,
            streaming=kind.streaming,
            examples=self.examples,
            task_support=self.task_support,
            feature=self.feature,
            meta=self.meta,
        )
        return HostedFunction(spec, self.handler, kind, validator, context_param)


def _from_parameters(owner: str, parameters: Sequence[Any]) -> tuple[dict[str, Any], ArgumentValidator]:
    if isinstance(parameters, str | bytes) or not all(isinstance(p, Parameter) for p in parameters):
        raise DefinitionError(
            f"{owner}: parameters must be a list of toolmesh.Parameter or a JSON Schema document (a dict)"
        )
    names = [p.name for p in parameters]
    if len(set(names)) != len(names):
        raise DefinitionError(f"{owner}: parameter names repeat: {names}")
    return build_arguments(owner, [p.info(owner) for p in parameters], pass_defaults=True)


#: The dialect of hand-written schemas: MCP's, and the one a schema without `$schema` is read in.
DIALECT = "https://json-schema.org/draft/2020-12/schema"


#: What a flat check accepts for each scalar type: a subset of what JSON Schema does (1.0 is an
#: integer there; it falls through to the full check).
_FLAT_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: type(value) is str,
    "integer": lambda value: type(value) is int,
    "number": lambda value: type(value) is int or type(value) is float,
    "boolean": lambda value: type(value) is bool,
}
#: Keywords that constrain no value (annotations, formats included, as 2020-12 has them).
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}
    | {"format"}
)
_FLAT_TOP = _ANNOTATIONS | {"$schema", "type", "properties", "required", "additionalProperties"}


class _FlatCheck:
    """The shape most tools' schemas have (named properties of scalar types, some required, others
    allowed or not), checked without jsonschema's machinery, which costs a stdio MCP server's call
    about as much as the rest of the pod's work on it. `passes` is True only for arguments the full
    check accepts; anything else goes to the full check, which names the violations."""

    def __init__(self, types: dict[str, Callable[[Any], bool]], required: tuple[str, ...], closed: bool):
        self._types = types
        self._required = required
        self._closed = closed

    @classmethod
    def of(cls, schema: Mapping[str, Any]) -> _FlatCheck | None:
        """The check for a flat schema, or None for any other."""
        properties, required = schema.get("properties", {}), schema.get("required", [])
        extra = schema.get("additionalProperties", True)
        if not set(schema) <= _FLAT_TOP or not isinstance(properties, dict) or not isinstance(extra, bool):
            return None
        if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
            return None
        types = {}
        for name, sub in properties.items():
            if not isinstance(sub, dict) or not set(sub) <= _ANNOTATIONS | {"type"}:
                return None
            kind = sub.get("type")
            # A list of types (["string", "null"]) or anything odd is the full check's to judge.
            check = _FLAT_TYPES.get(kind) if isinstance(kind, str) else None
            if check is None:
                return None
            types[name] = check
        return cls(types, tuple(required), closed=not extra)

    def passes(self, arguments: dict[str, Any]) -> bool:
        for name in self._required:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            check = self._types.get(name)
            if check is None:
                if self._closed:
                    return False
            elif not check(value):
                return False
        return True


class JsonSchemaArguments:
    """Validates arguments against a hand-written JSON Schema 2020-12 document.

    Formats are annotations, as 2020-12 has them by default. As for functions, an
    explicit ``null`` for an optional top-level argument whose schema does not allow
    null means "not given", and absent arguments get their schema's ``default``.
    Flat schemas are checked by `_FlatCheck` first; what it does not pass, jsonschema judges.
    """

    def __init__(self, owner: str, schema: Mapping[str, Any]):
        # Imported here: a pod that hosts no hand-written schema never loads jsonschema.
        import jsonschema

        try:
            self.schema: dict[str, Any] = json.loads(json.dumps(schema, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise DefinitionError(f"{owner}: parameters is not a JSON document: {exc}") from None
        dialect = self.schema.get("$schema", DIALECT)
        if not isinstance(dialect, str) or dialect.rstrip("#") != DIALECT:
            raise DefinitionError(
                f"{owner}: parameters must be JSON Schema 2020-12 ({DIALECT}), not {dialect}"
            )
        try:
            jsonschema.Draft202012Validator.check_schema(self.schema)
        except jsonschema.SchemaError as exc:
            where = "/".join(str(part) for part in exc.absolute_path) or "the top level"
            raise DefinitionError(
                f"{owner}: parameters is not a valid JSON Schema 2020-12 document: {exc.message} (at {where})"
            ) from None
        if self.schema.get("type") != "object":
            raise DefinitionError(f'{owner}: parameters must describe an object ("type": "object")')
        self._validator = jsonschema.Draft202012Validator(self.schema)
        self._flat = _FlatCheck.of(self.schema)
        required = set(self.schema.get("required", ()))
        properties: dict[str, Any] = self.schema.get("properties", {})
        self._null_means_default = frozenset(
            name
            for name, sub in properties.items()
            if name not in required and any(True for _ in self._validator.descend(None, sub))
        )
        self._defaults = tuple(
            (name, sub["default"])
            for name, sub in properties.items()
            if isinstance(sub, dict) and "default" in sub
        )

    def validate(self, data: bytes) -> dict[str, Any]:
        try:
            arguments = json.loads(data or b"{}")
        except (ValueError, RecursionError) as exc:
            raise invalid_arguments([malformed(str(exc))]) from None
        if not isinstance(arguments, dict):
            raise invalid_arguments([not_an_object(arguments)])
        for name in self._null_means_default:
            if name in arguments and arguments[name] is None:
                del arguments[name]
        if self._flat is None or not self._flat.passes(arguments):
            errors = self._validator.iter_errors(arguments)
            violations = [v for error in errors for v in from_json_schema(error)]
            if violations:
                raise invalid_arguments(violations)
        for name, default in self._defaults:
            arguments.setdefault(name, copy.deepcopy(default))
        return arguments


__all__ = ["FunctionDefinition", "JsonSchemaArguments", "JsonType", "Parameter"]
