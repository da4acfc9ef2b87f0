"""How users mark functions and classes of functions.

Decorating is optional: the public functions of a module are served as they
are. `@function` only adds options (a name, a namespace, a timeout, hints), and
`Toolset` turns a class's methods into one namespace.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar, overload

from toolmesh.errors import DefinitionError
from toolmesh.runtimes.functions.schema import parse_docstring
from toolmesh.runtimes.functions.spec import (
    FREE_TEXT_POLICIES,
    Annotations,
    Feature,
    FreeTextPolicy,
)

F = TypeVar("F", bound=Callable[..., Any])
OPTIONS_ATTRIBUTE = "__toolmesh__"


@dataclass(frozen=True, slots=True)
class FunctionOptions:
    """What `@function` recorded about a function."""

    name: str | None = None
    namespace: str | None = None
    description: str | None = None
    timeout: float | None = None
    annotations: Annotations = field(default_factory=Annotations)
    version: str = ""
    #: Set by `@resource`, `@prompt` and `@completion` (features.py); None for a tool.
    feature: Feature | None = None
    examples: tuple[str, ...] = ()
    task_support: str = ""


@overload
def function(fn: F, /) -> F: ...


@overload
def function(
    *,
    name: str | None = None,
    namespace: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    open_world: bool = False,
    title: str = "",
    version: str = "",
    examples: Sequence[str] = (),
    task_support: Literal["optional", "required"] | None = None,
    free_text: FreeTextPolicy = "auto",
) -> Callable[[F], F]: ...


def function(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    namespace: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    open_world: bool = False,
    title: str = "",
    version: str = "",
    examples: Sequence[str] = (),
    task_support: Literal["optional", "required"] | None = None,
    free_text: FreeTextPolicy = "auto",
) -> Any:
    """Mark a function as a tool and set its options; use bare or with arguments.

    The function itself is returned unchanged, so it can still be called directly.
    `timeout` is in seconds. `read_only`, `destructive`, `idempotent` and
    `open_world` are hints for clients (and let the gateway retry idempotent calls).
    `examples` are prompts the function answers ("is it raining in Oslo?"): the router
    indexes each as one more view of the function (on toolset methods too).
    `task_support` lets MCP clients run it as a task, an asynchronous job they poll: "optional"
    (a client that supports tasks gets one, another a direct call) or "required" (only clients
    that support tasks may call it); over HTTP and gRPC every function can be a job.
    `free_text` says whether free text (`/v1/execute`, where the router chose the function) may
    run it: "auto" runs read_only functions and asks for a confirmation before any other, "run"
    never asks, "confirm" always asks, "never" refuses (a client must call it directly).
    """
    if free_text not in FREE_TEXT_POLICIES:
        raise DefinitionError(f"free_text must be one of {', '.join(FREE_TEXT_POLICIES)}: {free_text!r}")
    if isinstance(examples, str):
        raise DefinitionError(f"examples must be a list of prompts, not one string: {examples!r}")
    options = FunctionOptions(
        name=name,
        namespace=namespace,
        description=description,
        timeout=timeout,
        annotations=Annotations(read_only, destructive, idempotent, open_world, title, free_text),
        version=version,
        examples=tuple(examples),
        task_support=task_support or "",
    )

    def mark(target: F) -> F:
        setattr(target, OPTIONS_ATTRIBUTE, options)
        return target

    return mark(fn) if fn is not None else mark


def options_of(obj: object) -> FunctionOptions | None:
    found = getattr(obj, OPTIONS_ATTRIBUTE, None)
    if isinstance(found, FunctionOptions):
        return found
    # A bound method keeps its options on the underlying function.
    found = getattr(getattr(obj, "__func__", None), OPTIONS_ATTRIBUTE, None)
    return found if isinstance(found, FunctionOptions) else None


def snake_case(name: str) -> str:
    """ "TextUtils" -> "text_utils"."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


class Toolset:
    """Subclass to serve a class's public methods as one namespace::

        class Arithmetic(toolmesh.Toolset, namespace="math"):
            \"\"\"Exact arithmetic on numbers.\"\"\"

            def add(self, a: float, b: float) -> float:
                \"\"\"Add two numbers.\"\"\"
                return a + b

    The namespace defaults to the class name in snake_case and its description
    to the class docstring. The runtime creates one instance (the class must be
    constructible without arguments) and serves its bound methods.
    """

    toolmesh_namespace: ClassVar[str] = ""
    toolmesh_description: ClassVar[str] = ""

    def __init_subclass__(
        cls, *, namespace: str | None = None, description: str | None = None, **kwargs: Any
    ):
        super().__init_subclass__(**kwargs)
        cls.toolmesh_namespace = namespace or snake_case(cls.__name__)
        cls.toolmesh_description = (
            description if description is not None else parse_docstring(cls).description
        )

    @classmethod
    def method_names(cls) -> list[str]:
        """Names of the methods served as functions, in definition order."""
        names: list[str] = []
        for klass in reversed(cls.__mro__):
            if klass is object or not issubclass(klass, Toolset) or klass is Toolset:
                continue
            for attr, value in vars(klass).items():
                if attr.startswith("_") or attr in names:
                    continue
                if isinstance(value, staticmethod | classmethod) or inspect.isfunction(value):
                    names.append(attr)
        return names

    @classmethod
    def render(cls) -> str:
        """The toolset as readable text for a prompt: one block per function."""
        from toolmesh.runtimes.functions.discovery import host_toolset
        from toolmesh.runtimes.functions.spec import render_functions

        hosted = host_toolset(cls)
        header = f"# {cls.toolmesh_namespace}"
        if cls.toolmesh_description:
            header += f"\n{cls.toolmesh_description}"
        return header + "\n\n" + render_functions([h.spec for h in hosted])
