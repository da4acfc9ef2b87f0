"""Every function in the mesh, by name, with the runtime that hosts it.

The catalog can be replaced while the gateway runs (`replace`, `reload`); whoever
keeps something derived from it (the MCP endpoint's list_changed notifications,
a router's index) registers a listener with `subscribe`.

Functions that serve an MCP resource, prompt or completion (`spec.feature`) share the name
space but are not tools: `specs`, `names` and `resolve` see tools only, `features` and
`resolve(..., feature=True)` the others.

A name in the namespace of a runtime that is still loading (the pool's `loading`: a source that
starts in the background) is refused as `Unavailable`, retryable, not as unknown: the caller named
a runtime the gateway has, whose functions are not known yet.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from toolmesh.config import ConfigError
from toolmesh.errors import Unavailable
from toolmesh.gateway.core.backend import Loading, RuntimePool
from toolmesh.runtimes.functions.registry import not_found
from toolmesh.runtimes.functions.spec import (
    NAMESPACE_SEPARATOR,
    RESOURCE,
    FunctionSpec,
    NamespaceSpec,
    from_tool_name,
)

log = logging.getLogger("toolmesh.gateway")


@dataclass(frozen=True, slots=True)
class Namespace:
    name: str
    description: str
    functions: tuple[str, ...]


class Catalog:
    """Functions by qualified name. Lookups accept the tool-name form too ("ns__name")."""

    def __init__(self, specs: Iterable[FunctionSpec], namespaces: Iterable[NamespaceSpec] = ()) -> None:
        self._listeners: dict[object, Callable[[], None]] = {}
        #: The runtimes still loading (`RuntimePool.loading`), asked when a name is not found.
        self.loading: Callable[[], Mapping[str, Loading]] = dict
        specs_by_name, self.namespaces = self._build(specs, namespaces)
        self._set(specs_by_name)

    def _set(self, specs: dict[str, FunctionSpec]) -> None:
        # Tools and features apart, computed once per change: lookups on the call path stay one get.
        _warn_of_shared_uris(specs.values())
        self._specs = specs
        self._tools = {name: spec for name, spec in specs.items() if spec.feature is None}
        self._features = {name: spec for name, spec in specs.items() if spec.feature is not None}

    @staticmethod
    def _build(
        specs: Iterable[FunctionSpec], namespaces: Iterable[NamespaceSpec]
    ) -> tuple[dict[str, FunctionSpec], list[Namespace]]:
        by_name: dict[str, FunctionSpec] = {}
        for spec in specs:
            name = spec.qualified_name
            if name in by_name:
                first = by_name[name].runtime
                raise ConfigError(f"function {name!r} is offered by runtimes {first!r} and {spec.runtime!r}")
            by_name[name] = spec
        descriptions = {ns.name: ns.description for ns in namespaces}
        grouped: dict[str, list[str]] = {}
        for spec in by_name.values():
            if spec.namespace and spec.feature is None:
                grouped.setdefault(spec.namespace, []).append(spec.qualified_name)
        listed = [Namespace(name, descriptions.get(name, ""), tuple(fns)) for name, fns in grouped.items()]
        return by_name, listed

    @staticmethod
    async def _fetch(pool: RuntimePool) -> tuple[list[FunctionSpec], list[NamespaceSpec]]:
        specs: list[FunctionSpec] = []
        namespaces: list[NamespaceSpec] = []
        for runtime in pool.runtimes():
            found, spaces = await pool.list_functions(runtime)
            specs.extend(dataclasses.replace(spec, runtime=runtime) for spec in found)
            namespaces.extend(spaces)
        return specs, namespaces

    @classmethod
    async def load(cls, pool: RuntimePool) -> Catalog:
        """Ask every runtime in the pool what it hosts (and follow which are still loading)."""
        catalog = cls(*await cls._fetch(pool))
        catalog.loading = pool.loading
        return catalog

    async def reload(self, pool: RuntimePool) -> bool:
        """Ask the runtimes again and `replace` the contents; True if anything changed."""
        return self.replace(*await self._fetch(pool))

    def replace(self, specs: Iterable[FunctionSpec], namespaces: Iterable[NamespaceSpec] = ()) -> bool:
        """Swap in new contents (a ConfigError leaves the old ones); listeners hear of a change.

        Returns whether the functions or namespaces differ from before.
        """
        new_specs, new_namespaces = self._build(specs, namespaces)
        if new_specs == self._specs and new_namespaces == self.namespaces:
            return False
        self._set(new_specs)
        self.namespaces = new_namespaces
        for listener in list(self._listeners.values()):
            try:
                listener()
            except Exception:  # one broken listener must not keep the change from the others
                log.exception("catalog listener failed")
        return True

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener` (synchronously, on the event loop) after each change; returns an unsubscribe."""
        token = object()
        self._listeners[token] = listener

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def specs(self) -> Sequence[FunctionSpec]:
        """The tools."""
        return list(self._tools.values())

    def features(self) -> Sequence[FunctionSpec]:
        """The functions that serve MCP resources, prompts and completions."""
        return list(self._features.values())

    def names(self) -> frozenset[str]:
        return frozenset(self._tools)

    def resolve(
        self, name: str, visible: Callable[[str], bool] | None = None, *, feature: bool = False
    ) -> FunctionSpec:
        """The tool (with `feature`: the feature) called `name` (qualified or tool-name form);
        FunctionNotFound otherwise. With `visible`, names it rejects are treated as absent, in the
        answer and the suggestions."""
        specs = self._features if feature else self._tools
        spec = specs.get(name)
        if spec is None and NAMESPACE_SEPARATOR not in name:
            spec = specs.get(from_tool_name(name))
        if spec is None or (visible is not None and not visible(spec.qualified_name)):
            self._refuse_loading(name, visible)
            known = specs if visible is None else [n for n in specs if visible(n)]
            raise not_found(name, known)
        return spec

    def _refuse_loading(self, name: str, visible: Callable[[str], bool] | None) -> None:
        """Unavailable when `name` (one the caller may see) is in the namespace of a runtime still
        loading."""
        qualified = name if NAMESPACE_SEPARATOR in name else from_tool_name(name)
        namespace, separator, _ = qualified.partition(NAMESPACE_SEPARATOR)
        loading = self.loading().get(namespace) if separator else None
        if loading is not None and (visible is None or visible(qualified)):
            raise Unavailable(loading.message, retry_after=loading.retry_after)


def _warn_of_shared_uris(specs: Iterable[FunctionSpec]) -> None:
    """Log each resource URI that functions of more than one namespace serve. Federated servers
    name their resources themselves (two instances of one server serve the same URIs), and a URI
    is all an MCP client reads by: `/mcp` reads the first by name, `/mcp/{namespace}` its own."""
    serving: dict[str, list[str]] = {}
    for spec in specs:
        if spec.feature is not None and spec.feature.kind == RESOURCE:
            serving.setdefault(spec.feature.uri, []).append(spec.qualified_name)
    for uri, names in serving.items():
        if len(names) > 1:
            names.sort()
            log.warning(
                f"resource {uri!r} is served by {', '.join(names)}: /mcp reads it from {names[0]}; "
                "/mcp/{namespace} reads each namespace's own",
                extra={"uri": uri},
            )
