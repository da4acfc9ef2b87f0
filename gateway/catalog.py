"""Every function in the mesh, by name, with the runtime that hosts it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from toolmesh.config import ConfigError
from toolmesh.gateway.pool import RuntimePool
from toolmesh.runtimes.registry import not_found
from toolmesh.runtimes.spec import NAMESPACE_SEPARATOR, FunctionSpec, NamespaceSpec, from_tool_name


@dataclass(frozen=True, slots=True)
class Namespace:
    name: str
    description: str
    functions: tuple[str, ...]


class Catalog:
    """Functions by qualified name. Lookups accept the tool-name form too ("ns__name")."""

    def __init__(self, specs: Iterable[FunctionSpec], namespaces: Iterable[NamespaceSpec] = ()) -> None:
        self._specs: dict[str, FunctionSpec] = {}
        for spec in specs:
            name = spec.qualified_name
            if name in self._specs:
                first = self._specs[name].runtime
                raise ConfigError(f"function {name!r} is offered by runtimes {first!r} and {spec.runtime!r}")
            self._specs[name] = spec
        descriptions = {ns.name: ns.description for ns in namespaces}
        grouped: dict[str, list[str]] = {}
        for spec in self._specs.values():
            if spec.namespace:
                grouped.setdefault(spec.namespace, []).append(spec.qualified_name)
        self.namespaces = [
            Namespace(name, descriptions.get(name, ""), tuple(fns)) for name, fns in grouped.items()
        ]

    @classmethod
    async def load(cls, pool: RuntimePool) -> Catalog:
        """Ask every runtime in the pool what it hosts."""
        specs: list[FunctionSpec] = []
        namespaces: list[NamespaceSpec] = []
        for runtime in pool.runtimes():
            found, spaces = await pool.list_functions(runtime)
            specs.extend(dataclasses.replace(spec, runtime=runtime) for spec in found)
            namespaces.extend(spaces)
        return cls(specs, namespaces)

    def __len__(self) -> int:
        return len(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def specs(self) -> Sequence[FunctionSpec]:
        return list(self._specs.values())

    def names(self) -> frozenset[str]:
        return frozenset(self._specs)

    def resolve(self, name: str) -> FunctionSpec:
        """The function called `name` (qualified or tool-name form); FunctionNotFound otherwise."""
        spec = self._specs.get(name)
        if spec is None and NAMESPACE_SEPARATOR not in name:
            spec = self._specs.get(from_tool_name(name))
        if spec is None:
            raise not_found(name, self._specs)
        return spec
