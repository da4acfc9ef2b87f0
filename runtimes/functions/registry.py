"""The functions one runtime serves, by qualified name."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from toolmesh.errors import DefinitionError, FunctionNotFound
from toolmesh.runtimes.functions.discovery import discover, import_module
from toolmesh.runtimes.functions.hosted import HostedFunction
from toolmesh.runtimes.functions.spec import FunctionSpec, NamespaceSpec


class Registry:
    """Hosted functions by qualified name, plus the namespaces they came with."""

    def __init__(self, functions: Iterable[HostedFunction], namespaces: Iterable[NamespaceSpec] = ()):
        self._functions: dict[str, HostedFunction] = {}
        for hosted in functions:
            name = hosted.spec.qualified_name
            if name in self._functions:
                raise DefinitionError(f"two functions are named {name!r}; give one another name or namespace")
            self._functions[name] = hosted
        self.namespaces: list[NamespaceSpec] = list({ns.name: ns for ns in namespaces}.values())
        #: How many times its functions changed since it was built (`replace`); 0 while they are
        #: the ones its modules offered at import.
        self.revision = 0

    @classmethod
    def from_modules(cls, module_names: Sequence[str]) -> Registry:
        """Import each module and host what it offers."""
        functions: list[HostedFunction] = []
        namespaces: list[NamespaceSpec] = []
        for name in module_names:
            found, spaces = discover(import_module(name))
            if not found:
                raise DefinitionError(f"module {name!r} offers no functions")
            functions.extend(found)
            namespaces.extend(spaces)
        return cls(functions, namespaces)

    def __len__(self) -> int:
        return len(self._functions)

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def get(self, name: str) -> HostedFunction:
        """The function called `name`; FunctionNotFound (with close names) otherwise."""
        try:
            return self._functions[name]
        except KeyError:
            raise not_found(name, self._functions) from None

    def specs(self, namespace: str = "") -> list[FunctionSpec]:
        return [h.spec for h in self._functions.values() if not namespace or h.spec.namespace == namespace]

    def replace(self, functions: Iterable[HostedFunction]) -> bool:
        """Serve `functions` instead of the ones it has (a source whose functions change while it
        runs: a stdio MCP server's `list_changed`); calls already running keep theirs. Whether
        that changed anything (then `revision` counts one more)."""
        fresh = {hosted.spec.qualified_name: hosted for hosted in functions}
        if [h.spec for h in fresh.values()] == self.specs():
            return False
        self._functions = fresh
        self.revision += 1
        return True


#: The registry this process serves, once a pod serves one (`serve`).
_serving: Registry | None = None


def serve(registry: Registry) -> None:
    """Make `registry` the one this process serves (a pod does, before its first call)."""
    global _serving
    _serving = registry


def serving() -> Registry | None:
    """The registry this process serves: where a module whose functions change while the pod
    runs (runtimes/mcp/mcp_bridge.py) puts them. None outside a pod (a template listing)."""
    return _serving


def not_found(name: str, known: Iterable[str]) -> FunctionNotFound:
    """A FunctionNotFound that suggests the closest known names."""
    suggestions = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
    return FunctionNotFound(
        f"no function named {name!r}{hint}", param="function", details={"suggestions": suggestions}
    )
