"""Finding the functions a module offers.

From each module: the names in `__all__` if it has one, otherwise every public
name defined in the module itself (imports are skipped). Of those, functions
become tools, `Toolset` subclasses become namespaces, and `FunctionDefinition`
objects are hosted as written.
"""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType
from typing import Any

from toolmesh.errors import DefinitionError
from toolmesh.runtimes.functions.decorators import Toolset, options_of
from toolmesh.runtimes.functions.definition import FunctionDefinition
from toolmesh.runtimes.functions.hosted import HostedFunction, host_callable
from toolmesh.runtimes.functions.spec import NamespaceSpec


def import_module(name: str) -> ModuleType:
    """Import a user module, turning any failure into a DefinitionError that says which."""
    if name.endswith(".py") or "/" in name:
        dotted = name.removesuffix(".py").strip("./").replace("/", ".")
        raise DefinitionError(
            f"module {name!r} is a file name: give the module's import name, {dotted!r}"
            " (run from the directory that holds it)"
        )
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise DefinitionError(f"module {name!r} not found (is it on PYTHONPATH?)") from exc
        raise DefinitionError(f"module {name!r} failed to import: {exc}") from exc
    except Exception as exc:
        raise DefinitionError(f"module {name!r} failed to import: {type(exc).__name__}: {exc}") from exc


def host_function(fn: Any, namespace: str = "") -> HostedFunction:
    """Host one function, applying the options `@function` recorded on it."""
    options = options_of(fn)
    if options is None:
        return host_callable(fn, namespace=namespace)
    return host_callable(
        fn,
        name=options.name,
        namespace=options.namespace if options.namespace is not None else namespace,
        description=options.description,
        timeout=options.timeout,
        annotations=options.annotations,
        version=options.version,
        feature=options.feature,
        examples=options.examples,
        task_support=options.task_support,
    )


def host_toolset(cls: type[Toolset]) -> list[HostedFunction]:
    """Instantiate a toolset class and host its public methods in its namespace."""
    try:
        instance = cls()
    except TypeError as exc:
        raise DefinitionError(
            f"toolset {cls.__qualname__} must be constructible without arguments: {exc}"
        ) from exc
    return [host_function(getattr(instance, name), cls.toolmesh_namespace) for name in cls.method_names()]


def _is_tool_function(obj: object) -> bool:
    return inspect.isfunction(obj) or options_of(obj) is not None


def discover(module: ModuleType) -> tuple[list[HostedFunction], list[NamespaceSpec]]:
    """The functions and namespaces a module offers."""
    exported = getattr(module, "__all__", None)
    if exported is not None:
        candidates = [(name, getattr(module, name)) for name in exported]
    else:
        # Definitions are instances, whose __module__ is their class's: take them all.
        candidates = [
            (name, value)
            for name, value in vars(module).items()
            if not name.startswith("_")
            and (
                isinstance(value, FunctionDefinition) or getattr(value, "__module__", None) == module.__name__
            )
        ]
    functions: list[HostedFunction] = []
    namespaces: list[NamespaceSpec] = []
    for _, value in candidates:
        if isinstance(value, FunctionDefinition):
            functions.append(value.host())
        elif inspect.isclass(value):
            if issubclass(value, Toolset) and value is not Toolset:
                functions.extend(host_toolset(value))
                namespaces.append(NamespaceSpec(value.toolmesh_namespace, value.toolmesh_description))
        elif _is_tool_function(value):
            functions.append(host_function(value))
    return functions, namespaces
