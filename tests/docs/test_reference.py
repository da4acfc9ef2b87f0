"""The generated reference pages hold every config key and every error class, described."""

from __future__ import annotations

import importlib.util
import sys
import typing
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def test_every_config_field_is_in_the_configuration_reference_with_a_description(
    reference: ModuleType,
) -> None:
    from toolmesh.config import MeshConfig

    text = reference.config_reference()
    keys = {(key.table, key.name): key for key in reference.config_keys()}
    models = reference.config_models()
    # The walk reaches the models through type hints: every section of MeshConfig is among them.
    hints = typing.get_type_hints(MeshConfig)
    assert {f"[{n}]" for n in ("gateway", "mcp", "chat", "router", "state", "jobs", "oauth")} <= set(models)
    assert {"[[runtimes]]", "[[keys]]", "[[triggers]]", "[router.llm]"} <= set(models)
    assert len(hints) > 10
    for table, model in models.items():
        if table:
            assert f"## `{table}`" in text
        for name in model.model_fields:
            if (table, name) in keys:
                key = keys[(table, name)]
                assert f"| `{name}` |" in text
                assert key.description, f"{table} {name} has no description in the code"
            else:  # a nested table, listed under its own heading
                assert any(t.endswith(f"{name}]") or t.endswith(f"{name}]]") for t in models) or (
                    model is MeshConfig and name == "directory"
                ), f"{table} {name} is missing from the reference"


def test_every_error_class_is_in_the_errors_reference(reference: ModuleType) -> None:
    from toolmesh import errors

    text = reference.errors_reference()
    classes = [
        value
        for value in vars(errors).values()
        if isinstance(value, type)
        and issubclass(value, errors.ToolmeshError)
        and value is not errors.ToolmeshError
    ]
    assert len(classes) == len(errors.ERROR_CLASSES)
    for cls in classes:
        row = next(line for line in text.splitlines() if line.startswith(f"| `{cls.__name__}` |"))
        assert f"`{cls.code}`" in row and str(cls.http_status) in row and cls.grpc_status.name in row
        assert row.rstrip(" |").split("|")[-1].strip(), f"{cls.__name__} has no docstring"


def test_the_api_reference_lists_the_public_surface(reference: ModuleType) -> None:
    import toolmesh
    import toolmesh.client

    text = reference.api_reference()
    for name in toolmesh.__all__:
        assert f"| `toolmesh.{name}` |" in text
    for name in toolmesh.client.__all__:
        assert f"| `toolmesh.client.{name}` |" in text


def test_the_pages_place_the_generated_references(reference: ModuleType) -> None:
    docs = ROOT / "docs"
    assert reference.CONFIG_MARKER in (docs / "reference" / "configuration.md").read_text()
    assert reference.ERRORS_MARKER in (docs / "errors.md").read_text()
    assert reference.API_MARKER in (docs / "python-api.md").read_text()
