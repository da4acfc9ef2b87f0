"""A function ready to be served: its spec, how to call it, how to check its arguments."""

from __future__ import annotations

import enum
import inspect
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from toolmesh.errors import DefinitionError
from toolmesh.runtimes.functions.context import Context
from toolmesh.runtimes.functions.features import check_feature, feature_call
from toolmesh.runtimes.functions.schema import (
    build_arguments,
    output_schema,
    parse_docstring,
    signature_parameters,
)
from toolmesh.runtimes.functions.spec import (
    FREE_TEXT_POLICIES,
    MAX_TOOL_NAME,
    TASK_SUPPORT,
    TASKS_OPTIONAL,
    TASKS_REQUIRED,
    Annotations,
    Feature,
    FunctionSpec,
    check_name,
    qualify,
    tool_name,
)


class Kind(enum.Enum):
    """How a function runs: sync ones in worker threads, the rest on the event loop."""

    SYNC = "sync"
    ASYNC = "async"
    SYNC_GENERATOR = "sync_generator"
    ASYNC_GENERATOR = "async_generator"

    @property
    def streaming(self) -> bool:
        return self in (Kind.SYNC_GENERATOR, Kind.ASYNC_GENERATOR)

    @classmethod
    def of(cls, fn: Callable[..., Any]) -> Kind:
        target = inspect.unwrap(fn)
        if inspect.isasyncgenfunction(target):
            return cls.ASYNC_GENERATOR
        if inspect.isgeneratorfunction(target):
            return cls.SYNC_GENERATOR
        if inspect.iscoroutinefunction(target):
            return cls.ASYNC
        return cls.SYNC


class ArgumentCheck(Protocol):
    """Turns a call's arguments (a JSON object, as bytes) into keyword arguments, or raises
    InvalidArguments naming each violation. Schemas drawn from Python signatures are checked by
    `schema.ArgumentValidator`, hand-written JSON Schema documents by
    `definition.JsonSchemaArguments`."""

    def validate(self, data: bytes) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class HostedFunction:
    """A function as the runtime holds it."""

    spec: FunctionSpec
    call: Callable[..., Any]
    kind: Kind
    validator: ArgumentCheck
    #: Name of the parameter that receives the Context, if the function asks for one.
    context_param: str | None = None


def _is_context(annotation: Any) -> bool:
    if annotation is Context:
        return True
    return any(arg is Context for arg in typing.get_args(annotation))


def make_spec(
    *,
    name: str,
    namespace: str,
    description: str,
    input_schema: dict[str, Any],
    output: dict[str, Any] | None,
    annotations: Annotations,
    timeout: float | None,
    version: str,
    streaming: bool,
    feature: Feature | None = None,
    examples: Sequence[str] = (),
    task_support: str = "",
    meta: dict[str, Any] | None = None,
) -> FunctionSpec:
    """A FunctionSpec, after checking names and limits."""
    try:
        check_name(name)
        if namespace:
            check_name(namespace, "namespace")
    except ValueError as exc:
        raise DefinitionError(str(exc)) from None
    qualified = qualify(namespace, name)
    if len(tool_name(qualified)) > MAX_TOOL_NAME:
        raise DefinitionError(
            f"{qualified}: namespace and name together must fit in {MAX_TOOL_NAME} characters"
        )
    if timeout is not None and timeout <= 0:
        raise DefinitionError(f"{qualified}: timeout must be positive, got {timeout}")
    if isinstance(examples, str) or not all(isinstance(e, str) and e.strip() for e in examples):
        raise DefinitionError(f"{qualified}: examples must be a list of non-empty strings")
    if annotations.free_text not in FREE_TEXT_POLICIES:
        raise DefinitionError(
            f"{qualified}: free_text must be one of {', '.join(FREE_TEXT_POLICIES)},"
            f" got {annotations.free_text!r}"
        )
    if task_support not in TASK_SUPPORT:
        raise DefinitionError(
            f"{qualified}: task_support must be {TASKS_OPTIONAL!r} or {TASKS_REQUIRED!r},"
            f" got {task_support!r}"
        )
    return FunctionSpec(
        name=name,
        namespace=namespace,
        description=description,
        input_schema=input_schema,
        output_schema=output,
        annotations=annotations,
        timeout=timeout,
        version=version,
        streaming=streaming,
        feature=feature,
        examples=tuple(e.strip() for e in examples),
        task_support=task_support,
        meta=meta,
    )


def host_callable(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    namespace: str = "",
    description: str | None = None,
    timeout: float | None = None,
    annotations: Annotations | None = None,
    version: str = "",
    feature: Feature | None = None,
    examples: Sequence[str] = (),
    task_support: str = "",
) -> HostedFunction:
    """Host a plain Python callable, deriving its schemas from type hints and docstring."""
    doc = parse_docstring(fn)
    fn_name = name or str(getattr(fn, "__name__", ""))
    parameters, context_param, accepts_extra, returns = signature_parameters(fn, doc.params, _is_context)
    kind = Kind.of(fn)
    input_schema, validator = build_arguments(
        qualify(namespace, fn_name) if fn_name else repr(fn), parameters, accepts_extra=accepts_extra
    )
    spec = make_spec(
        name=fn_name,
        namespace=namespace,
        description=description if description is not None else doc.description,
        input_schema=input_schema,
        output=None if kind.streaming else output_schema(returns),
        annotations=annotations or Annotations(),
        timeout=timeout,
        version=version,
        streaming=kind.streaming,
        feature=feature,
        examples=examples,
        task_support=task_support,
    )
    if feature is not None:
        check_feature(spec, fn)
        fn = feature_call(feature, fn, kind.name.startswith("ASYNC"))
    return HostedFunction(spec, fn, kind, validator, context_param)
