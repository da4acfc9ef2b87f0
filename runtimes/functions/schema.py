"""JSON schemas and argument validation from Python signatures.

A function's parameters become one pydantic model. The model gives the input
JSON schema (what callers and LLMs see) and validates incoming arguments in
strict JSON mode, so the schema and the validator can never disagree.
Strictness goes all the way down: nested models, dataclasses and TypedDicts
coerce nothing and refuse keys they do not declare (unless a class opts into
extra keys with ``extra="allow"``), and the published schema says
``additionalProperties: false`` wherever the validator refuses them.
Descriptions come from ``Field(description=...)`` or, failing that, from the
docstring (Google, NumPy and reST styles).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import docstring_parser
import pydantic
import pydantic_core
from pydantic import ConfigDict, Field
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema, ErrorDetails

from toolmesh.errors import DefinitionError, Violation
from toolmesh.runtimes.functions.violations import UNEXPECTED, data_path, from_pydantic, invalid_arguments

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

    # pydantic draws `additionalProperties` from each class's own config; `_closed_objects`
    # marks in `extra_behavior` what the validator refuses, and the schema says the same.
    def model_fields_schema(self, schema: Any) -> JsonSchemaValue:
        return _closed(self, super().model_fields_schema(schema), schema)

    def dataclass_args_schema(self, schema: Any) -> JsonSchemaValue:
        return _closed(self, super().dataclass_args_schema(schema), schema)


def _closed(generator: GenerateJsonSchema, json_schema: JsonSchemaValue, schema: Any) -> JsonSchemaValue:
    if schema.get("extra_behavior") == "forbid":
        generator.resolve_ref_schema(json_schema)["additionalProperties"] = False
    return json_schema


# -- strict all the way down ------------------------------------------------------------------
#
# A pydantic class applies its own config to its fields, so the top level's strict mode and
# extra="forbid" stop at the first nested model (whose default coerces "2" to 2 and drops unknown
# keys silently). The validator passes strict=True and extra="forbid" at validation time
# instead, which reaches every depth; classes that declare extra="allow" themselves keep extra
# keys (ArgumentValidator._allowed), and the schema says `additionalProperties: false` wherever
# the validator refuses them.

#: Core schemas of objects with fields, whose `extra_behavior` says what happens to other keys.
_OBJECTS = ("model-fields", "typed-dict", "dataclass-args")
#: Core schemas of classes (their `cls` holds the user's config).
_CLASSES = ("model", "dataclass", "typed-dict")


def declares_extra(cls: Any) -> bool:
    """Whether a model, dataclass or TypedDict itself says ``extra="allow"``."""
    config = getattr(cls, "model_config", None) or getattr(cls, "__pydantic_config__", None) or {}
    return config.get("extra") == "allow"


def _closed_objects(node: Any, allow: bool = False) -> Any:
    """A copy of a core schema whose objects forbid extra keys unless their class allows them.
    Only dicts and lists are copied: the classes and functions in it are the user's, shared."""
    if isinstance(node, list):
        return [_closed_objects(item, allow) for item in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if kind in _CLASSES:
        allow = declares_extra(node.get("cls"))
    copied = {key: _closed_objects(value, allow) for key, value in node.items()}
    if kind in _OBJECTS:
        copied["extra_behavior"] = "allow" if allow else "forbid"
    return copied


def _allows_extra_anywhere(node: Any) -> bool:
    if isinstance(node, list):
        return any(_allows_extra_anywhere(item) for item in node)
    if not isinstance(node, dict):
        return False
    if node.get("type") in _CLASSES and declares_extra(node.get("cls")):
        return True
    return any(_allows_extra_anywhere(value) for value in node.values())


def _holds(value: Any, part: str | int) -> bool:
    if isinstance(value, list | tuple):
        return isinstance(part, int) and 0 <= part < len(value)
    return isinstance(value, dict) and part in value


def _input_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    core: CoreSchema = _closed_objects(model.__pydantic_core_schema__)
    return _ToolSchemaGenerator(by_alias=True).generate(core, mode="validation")


def _owner(value: Any, loc: Sequence[str | int]) -> Any:
    """The object that holds the key at `loc` in a validated value (union tags in `loc` skipped)."""
    for part in loc[:-1]:
        if isinstance(value, pydantic.BaseModel):
            fields = type(value).model_fields
            name = next((n for n, f in fields.items() if part in (n, f.alias, f.validation_alias)), None)
            if name is not None:
                value = getattr(value, name)
        elif dataclasses.is_dataclass(value) and isinstance(part, str) and hasattr(value, part):
            value = getattr(value, part)
        elif _holds(value, part):
            value = value[part]
    return value


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
        self._accepts_extra = declares_extra(model)
        self._some_allow_extra = _allows_extra_anywhere(model.__pydantic_core_schema__)

    def validate(self, data: bytes) -> dict[str, Any]:
        data = data or b"{}"
        try:
            # Given here, strict and extra reach nested classes (their own config says otherwise).
            parsed = self._model.model_validate_json(data, strict=True, extra="forbid")
        except pydantic.ValidationError as exc:
            parsed = self._allowed(exc, data)
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

    def _allowed(self, refused: pydantic.ValidationError, data: bytes) -> pydantic.BaseModel:
        """The arguments, if all `refused` objected to was extra keys of classes that allow them.

        Which class holds an extra key shows in a validated value: the arguments without
        any of the extra keys are validated to find out, then the refusals stand for every
        other class. If that fails as well (wrong types too), its errors are the answer, and
        the unknown keys it set aside show up once those are fixed.
        """
        errors = refused.errors(include_url=False)
        extra = [e for e in errors if e["type"] in UNEXPECTED]
        if not self._some_allow_extra or not extra:
            raise invalid_arguments(_violations(errors, data)) from None
        arguments = json.loads(data)
        try:
            probe = self._model.model_validate_json(json.dumps(_without(arguments, extra)), strict=True)
            held = [e for e in errors if e in extra and declares_extra(_owner(probe, e["loc"]))]
            if len(held) < len(errors):
                raise invalid_arguments(_violations([e for e in errors if e not in held], data))
            return self._model.model_validate_json(data, strict=True)
        except pydantic.ValidationError as exc:
            raise invalid_arguments(_violations(exc.errors(include_url=False), data)) from None


def _without(arguments: Any, extra: Sequence[ErrorDetails]) -> Any:
    """A copy of the arguments with the keys these errors name taken out."""
    arguments = copy.deepcopy(arguments)
    for error in extra:
        path = data_path(error["loc"], arguments, last_may_be_absent=False)
        if not path:
            continue
        *parents, key = path
        holder = arguments
        for part in parents:
            holder = holder[part]
        if isinstance(holder, dict):
            holder.pop(key, None)
    return arguments


def _violations(errors: Sequence[ErrorDetails], data: bytes) -> list[Violation]:
    try:
        arguments = json.loads(data)
    except (ValueError, RecursionError):
        arguments = None  # the errors say so
    return [from_pydantic(error, arguments) for error in errors]


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
        schema = _input_schema(schema_model)
        defaults = _defaults(parameters, pass_defaults)
        validator = ArgumentValidator(check_model, names, null_means_default, defaults)
    except (
        pydantic.PydanticSchemaGenerationError,
        pydantic.PydanticUserError,
        pydantic_core.SchemaError,
        TypeError,
    ) as exc:
        raise DefinitionError(f"{model_name}: cannot build a schema for its parameters: {exc}") from exc
    schema.pop("title", None)
    schema.setdefault("properties", {})
    for param in parameters:
        if param.default is NO_DEFAULT:
            schema["properties"][param.name].pop("default", None)
    return schema, validator


def _defaults(parameters: Sequence[ParameterInfo], pass_defaults: bool) -> dict[str, Any]:
    if not pass_defaults:
        return {}
    return {p.name: p.default for p in parameters if p.default not in (MISSING, NO_DEFAULT)}


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
