"""Router fixtures: the default model's embedders, opened once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolmesh.router.embedding.embedder import OnnxEmbedder
from toolmesh.router.embedding.model import BuiltModel, ensure_model


@pytest.fixture(scope="session")
def built_model(router_cache: Path) -> BuiltModel:
    return ensure_model(router_cache)  # already built by `router_cache`: this only finds it


@pytest.fixture(scope="session")
def int8_embedder(built_model: BuiltModel) -> OnnxEmbedder:
    return OnnxEmbedder(built_model.int8, built_model.tokenizer)


@pytest.fixture(scope="session")
def fp32_embedder(built_model: BuiltModel) -> OnnxEmbedder:
    return OnnxEmbedder(built_model.fp32, built_model.tokenizer)
