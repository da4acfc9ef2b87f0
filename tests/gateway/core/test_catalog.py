"""Replacing the catalog while the gateway runs, and who hears of it."""

from __future__ import annotations

import dataclasses

import pytest

from toolmesh.config import ConfigError
from toolmesh.errors import FunctionNotFound, Unavailable
from toolmesh.gateway.core.backend import Loading
from toolmesh.gateway.core.catalog import Catalog
from toolmesh.runtimes.functions.spec import RESOURCE, Feature, FunctionSpec, NamespaceSpec


def spec(name: str, namespace: str = "", runtime: str = "tools") -> FunctionSpec:
    return FunctionSpec(
        name=name, description="", input_schema={"type": "object"}, namespace=namespace, runtime=runtime
    )


def test_replace_notifies_listeners_only_of_real_changes() -> None:
    catalog = Catalog([spec("add"), spec("inc", "counter")], [NamespaceSpec("counter", "Counting.")])
    heard: list[str] = []

    def broken() -> None:
        raise RuntimeError("listener bug")

    catalog.subscribe(broken)
    unsubscribe = catalog.subscribe(lambda: heard.append("changed"))
    assert not catalog.replace([spec("add"), spec("inc", "counter")], [NamespaceSpec("counter", "Counting.")])
    assert heard == []
    assert catalog.replace([spec("add")])
    assert heard == ["changed"]  # the broken listener did not keep it from this one
    assert catalog.names() == {"add"} and catalog.namespaces == []
    unsubscribe()
    unsubscribe()  # idempotent
    assert catalog.replace([spec("sub")])
    assert heard == ["changed"]


def test_a_conflicting_replacement_keeps_the_old_contents() -> None:
    catalog = Catalog([spec("add")])
    with pytest.raises(ConfigError, match="offered by runtimes 'a' and 'b'"):
        catalog.replace([spec("add", runtime="a"), spec("add", runtime="b")])
    assert catalog.resolve("add").runtime == "tools"


def test_resources_prompts_and_completions_are_not_tools() -> None:
    readme = dataclasses.replace(spec("readme", "docs"), feature=Feature(RESOURCE, uri="docs://readme"))
    catalog = Catalog([spec("add"), spec("find", "docs"), readme])
    assert catalog.names() == {"add", "docs.find"} and len(catalog) == 2 and "docs.readme" not in catalog
    assert [s.qualified_name for s in catalog.features()] == ["docs.readme"]
    assert catalog.namespaces[0].functions == ("docs.find",)
    assert catalog.resolve("docs__readme", feature=True) == readme
    with pytest.raises(FunctionNotFound):
        catalog.resolve("docs.readme")
    with pytest.raises(FunctionNotFound):
        catalog.resolve("add", feature=True)
    with pytest.raises(ConfigError, match="offered by runtimes"):  # one name space for both
        Catalog([spec("readme", "docs", runtime="other"), readme])


def test_a_name_in_a_loading_runtimes_namespace_is_unavailable_not_unknown() -> None:
    catalog = Catalog([spec("add"), spec("inc", "counter")])
    catalog.loading = lambda: {"memory": Loading("runtime 'memory' is still starting", 1.0)}
    for name in ("memory.create_entities", "memory__create_entities"):
        with pytest.raises(Unavailable, match="still starting") as caught:
            catalog.resolve(name)
        assert caught.value.retry_after == 1.0 and caught.value.retryable
    # Outside its namespace, or out of the caller's sight, a name is unknown as ever.
    for name in ("other.create_entities", "create_entities", "counter.nothing"):
        with pytest.raises(FunctionNotFound):
            catalog.resolve(name)
    with pytest.raises(FunctionNotFound):
        catalog.resolve("memory.create_entities", lambda name: not name.startswith("memory."))


def test_a_resource_uri_two_namespaces_serve_is_logged_naming_both(caplog: pytest.LogCaptureFixture) -> None:
    # Two federated servers (two instances of one) serve the same URI: MCP clients read by URI alone.
    def config(namespace: str) -> FunctionSpec:
        found = spec("config", namespace, runtime=namespace)
        return dataclasses.replace(found, feature=Feature(RESOURCE, uri="data://config"))

    with caplog.at_level("WARNING", logger="toolmesh.gateway"):
        Catalog([config("east"), config("west"), spec("add")])
    said = [r.getMessage() for r in caplog.records if "data://config" in r.getMessage()]
    assert len(said) == 1 and "east.config, west.config" in said[0] and "reads it from east.config" in said[0]
    caplog.clear()
    with caplog.at_level("WARNING", logger="toolmesh.gateway"):
        Catalog([config("east"), spec("add")])
    assert not caplog.records
