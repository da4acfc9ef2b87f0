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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic

from toolmesh.errors import DefinitionError
from toolmesh.runtimes.functions.hosted import HostedFunction, Kind, _is_context, make_spec
from toolmesh.runtimes.functions.schema import (
    MISSING,
    NO_DEFAULT,
    ParameterInfo,
    build_arguments,
    signature_parameters,
)
from toolmesh.runtimes.functions.spec import Annotations, qualify

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
    parameters: Sequence[Parameter] = ()
    namespace: str = ""
    timeout: float | None = None
    annotations: Annotations = field(default_factory=Annotations)
    output_schema: dict[str, Any] | None = None
    version: str = ""
    #: Prompts this function answers, for the router: each is indexed as one more view of it.
    examples: Sequence[str] = ()
    #: "optional" or "required": MCP clients may (must) run it as a task (`@toolmesh.function`).
    task_support: str = ""

    def host(self, namespace: str = "") -> HostedFunction:
        ns = self.namespace or namespace
        owner = qualify(ns, self.name)
        names = [p.name for p in self.parameters]
        if len(set(names)) != len(names):
            raise DefinitionError(f"{owner}: parameter names repeat: {names}")
        _, context_param, _, _ = signature_parameters(self.handler, {}, _is_context)
        kind = Kind.of(self.handler)
        schema, validator = build_arguments(
            owner, [p.info(owner) for p in self.parameters], pass_defaults=True
        )
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
        )
        return HostedFunction(spec, self.handler, kind, validator, context_param)


__all__ = ["FunctionDefinition", "JsonType", "Parameter"]
