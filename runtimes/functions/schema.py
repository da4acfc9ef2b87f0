"""JSON schemas and argument validation from Python signatures.

A function's parameters become one pydantic model. The model gives the input
JSON schema (what callers and LLMs see) and validates incoming arguments in
strict JSON mode, so the schema and the validator can never disagree.
Descriptions come from ``Field(description=...)`` or, failing that, from the
docstring (Google, NumPy and reST styles).
"""

from __future__ import annotations

import copy
import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import docstring_parser
import pydantic
from pydantic import ConfigDict, Field
from pydantic.json_schema import GenerateJsonSchema

from toolmesh.errors import DefinitionError, InvalidArguments, Violation
from toolmesh.runtimes.functions.surrogates import lone_surrogate

#: The default of a required parameter.
MISSING: Any = inspect.Parameter.empty
#: The default of an optional parameter that has none: when the caller leaves
#: it out, it is simply not passed (the handler's own default applies).
NO_DEFAULT: Any = type("NoDefault", (), {"__repr__": lambda self: "NO_DEFAULT"})()


@dataclass(frozen=True, slots=True)
class ParameterInfo:
    """One argument of a function: its name, type, default and description."""

    name: str
    annotation: Any = Any
    default: Any = MISSING
    description: str = ""

    @property
    def required(self) -> bool:
        return self.default is MISSING


@dataclass(frozen=True, slots=True)
class Docstring:
    description: str
    params: dict[str, str]


def parse_docstring(obj: object) -> Docstring:
    """The description and per-argument docs of a docstring in any common style."""
    text = inspect.getdoc(obj) or ""
    if not text:
        return Docstring("", {})
    doc = docstring_parser.parse(text)
    parts = [p for p in (doc.short_description, doc.long_description) if p]
    params = {p.arg_name: p.description or "" for p in doc.params}
    return Docstring("\n\n".join(parts).strip(), params)


class _ToolSchemaGenerator(GenerateJsonSchema):
    """Leaves out the per-field titles pydantic adds: they repeat the names and cost tokens."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _admits_none(annotation: Any) -> bool:
    if annotation is Any or annotation is None or annotation is type(None):
        return True
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _admits_none(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_admits_none(arg) for arg in typing.get_args(annotation))
    return False


def _with_description(annotation: Any, description: str) -> Any:
    """Attach a description as Field metadata; a description already in Annotated wins."""
    if not description:
        return annotation
    if typing.get_origin(annotation) is Annotated:
        base, *metadata = typing.get_args(annotation)
        return Annotated[(base, Field(description=description), *metadata)]
    return Annotated[annotation, Field(description=description)]


class ArgumentValidator:
    """Validates an arguments object (JSON bytes) into keyword arguments for the call.

    Only arguments the caller sent are passed on, so Python applies the function's
    own defaults. An explicit ``null`` for an argument that has a default and does
    not accept None counts as absent: that is how OpenAI strict mode sends
    "not given".
    """

    def __init__(
        self,
        model: type[pydantic.BaseModel],
        fields: Mapping[str, str],
        null_means_default: set[str],
        defaults: Mapping[str, Any] | None = None,
    ):
        self._model = model
        self._fields = tuple(fields.items())  # (attribute, argument name)
        self._null_means_default = frozenset(null_means_default)
        self._defaults = tuple((defaults or {}).items())
        self._accepts_extra = model.model_config.get("extra") == "allow"

    def validate(self, data: bytes) -> dict[str, Any]:
        try:
            parsed = self._model.model_validate_json(data or b"{}")
        except pydantic.ValidationError as exc:
            violations = [_violation(error) for error in exc.errors(include_url=False)]
            summary = "; ".join(v.message for v in violations[:3])
            more = f" (and {len(violations) - 3} more)" if len(violations) > 3 else ""
            raise InvalidArguments(f"invalid arguments: {summary}{more}", violations) from None
        given = parsed.model_fields_set
        arguments = {}
        for attribute, name in self._fields:
            if attribute in given:
                value = getattr(parsed, attribute)
                if value is None and name in self._null_means_default:
                    continue
                arguments[name] = value
        for name, default in self._defaults:
            if name not in arguments:
                arguments[name] = copy.deepcopy(default)
        if self._accepts_extra and parsed.model_extra:
            arguments.update(parsed.model_extra)
        return arguments


def build_arguments(
    model_name: str,
    parameters: Sequence[ParameterInfo],
    *,
    accepts_extra: bool = False,
    pass_defaults: bool = False,
) -> tuple[dict[str, Any], ArgumentValidator]:
    """The input JSON schema and the validator for a list of parameters.

    With `pass_defaults` the validator fills in absent arguments' defaults itself
    (for hand-written definitions, whose handlers may not declare them); otherwise
    the function's own signature supplies them.
    """
    config = ConfigDict(
        extra="allow" if accepts_extra else "forbid",
        strict=True,
        protected_namespaces=(),
        validate_by_alias=True,
        validate_by_name=False,
        arbitrary_types_allowed=False,
    )
    schema_fields: dict[str, Any] = {}
    check_fields: dict[str, Any] = {}
    names: dict[str, str] = {}
    null_means_default: set[str] = set()
    # Attributes are p0, p1, ... with the real names as aliases, so arguments
    # called "json", "schema" or "model_config" cannot clash with BaseModel.
    for index, param in enumerate(parameters):
        attribute = f"p{index}"
        names[attribute] = param.name
        annotation = _with_description(param.annotation, param.description)
        if param.required:
            schema_fields[attribute] = check_fields[attribute] = (annotation, Field(alias=param.name))
            continue
        default = None if param.default is NO_DEFAULT else param.default
        schema_fields[attribute] = (annotation, Field(default=default, alias=param.name))
        if _admits_none(param.annotation) and param.default is not NO_DEFAULT:
            check_fields[attribute] = schema_fields[attribute]
        else:
            null_means_default.add(param.name)
            check_fields[attribute] = (annotation | None, Field(default=None, alias=param.name))
    try:
        schema_model = pydantic.create_model(model_name, __config__=config, **schema_fields)
        check_model = pydantic.create_model(model_name, __config__=config, **check_fields)
        schema = schema_model.model_json_schema(by_alias=True, schema_generator=_ToolSchemaGenerator)
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as exc:
        raise DefinitionError(f"{model_name}: cannot build a schema for its parameters: {exc}") from exc
    schema.pop("title", None)
    schema.setdefault("properties", {})
    for param in parameters:
        if param.default is NO_DEFAULT:
            schema["properties"][param.name].pop("default", None)
    defaults = (
        {p.name: p.default for p in parameters if p.default not in (MISSING, NO_DEFAULT)}
        if pass_defaults
        else {}
    )
    return schema, ArgumentValidator(check_model, names, null_means_default, defaults)


_NO_OUTPUT_SCHEMA = (str, bytes, bytearray, type(None), None, Any, MISSING, object)


def output_schema(annotation: Any) -> dict[str, Any] | None:
    """The JSON schema of a return annotation, or None when it has no useful one."""
    if annotation in _NO_OUTPUT_SCHEMA:
        return None
    from toolmesh.runtimes.functions.results import CONTENT_TYPES, Result

    def is_content(hint: Any) -> bool:
        # Content items (alone, in a list or a union) are content, never structured output.
        if isinstance(hint, type) and issubclass(hint, (*CONTENT_TYPES, Result)):
            return True
        return any(is_content(arg) for arg in typing.get_args(hint))

    if is_content(annotation):
        return None
    try:
        schema = pydantic.TypeAdapter(annotation).json_schema(
            mode="serialization", schema_generator=_ToolSchemaGenerator
        )
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError):
        return None
    return schema


def signature_parameters(
    fn: Callable[..., Any], doc_params: Mapping[str, str], is_context: Callable[[Any], bool]
) -> tuple[list[ParameterInfo], str | None, bool, Any]:
    """Parameters of `fn` (minus a context parameter), the context parameter's name,
    whether it takes **kwargs, and its return annotation."""
    qualname = getattr(fn, "__qualname__", repr(fn))
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # unresolvable forward references, typos in annotations
        raise DefinitionError(f"{qualname}: cannot resolve its type hints: {exc}") from exc
    parameters: list[ParameterInfo] = []
    context_param: str | None = None
    accepts_extra = False
    for param in inspect.signature(fn).parameters.values():
        annotation = hints.get(param.name, Any)
        if is_context(annotation):
            context_param = param.name
            continue
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            accepts_extra = True
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            raise DefinitionError(
                f"{qualname}: parameter {param.name!r} cannot be passed by name; "
                "tools take named arguments only"
            )
        parameters.append(
            ParameterInfo(param.name, annotation, param.default, doc_params.get(param.name, ""))
        )
    return parameters, context_param, accepts_extra, hints.get("return", MISSING)


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAI strict-mode subset of a schema: every property required, the
    optional ones nullable, ``additionalProperties: false``, no defaults."""
    return typing.cast(dict[str, Any], _strict(json.loads(json.dumps(schema))))


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    node.pop("default", None)
    for key in ("items", "anyOf", "allOf", "oneOf", "prefixItems", "not"):
        if key in node:
            node[key] = _strict(node[key])
    if "$defs" in node:
        node["$defs"] = {name: _strict(sub) for name, sub in node["$defs"].items()}
    if isinstance(node.get("additionalProperties"), dict):
        node["additionalProperties"] = _strict(node["additionalProperties"])
    properties = node.get("properties")
    if isinstance(properties, dict):
        required = set(node.get("required", ()))
        node["properties"] = {
            name: _strict(sub) if name in required else _nullable(_strict(sub))
            for name, sub in properties.items()
        }
        node["required"] = list(properties)
        node["additionalProperties"] = False
    return node


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    null = {"type": "null"}
    if "anyOf" in node:
        if null not in node["anyOf"]:
            node["anyOf"].append(null)
        return node
    kind = node.get("type")
    if isinstance(kind, str) and "enum" not in node:
        node["type"] = [kind, "null"] if kind != "null" else kind
        return node
    description = node.pop("description", None)
    wrapped: dict[str, Any] = {"anyOf": [node, null]}
    if description:
        wrapped["description"] = description
    return wrapped


# -- violations -------------------------------------------------------------------------------

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
    "missing": "a value (required argument)",
    "extra_forbidden": "no such argument",
}


def _json_type(value: Any) -> str:
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


def _describe(value: Any) -> str:
    kind = _json_type(value)
    if kind in ("null", "object", "array"):
        return kind
    shown = json.dumps(value) if kind in ("boolean", "integer", "number", "string") else repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{kind} {shown}"


def _violation(error: Mapping[str, Any]) -> Violation:
    kind = error["type"]
    path = ".".join(str(part) for part in error["loc"])
    where = path or "arguments"
    if kind == "json_invalid":
        surrogate = lone_surrogate(error.get("input"))
        if surrogate is not None:
            return surrogate
        detail = error.get("ctx", {}).get("error", "")
        return Violation("", "a JSON object", "malformed JSON", f"arguments are not valid JSON: {detail}")
    if kind == "model_type" and not path:
        got = _json_type(error["input"])
        return Violation("", "a JSON object", got, f"arguments must be a JSON object, got {got}")
    if kind == "missing":
        return Violation(path, _EXPECTED[kind], "nothing", f"{where}: missing required argument")
    if kind == "extra_forbidden":
        return Violation(path, _EXPECTED[kind], _describe(error["input"]), f"{where}: unexpected argument")
    expected = _EXPECTED.get(kind)
    if expected is None:
        message = str(error["msg"])
        expected = message.removeprefix("Input should be ").removeprefix("Value error, ")
    got = _describe(error["input"])
    return Violation(path, expected, got, f"{where}: expected {expected}, got {got}")
