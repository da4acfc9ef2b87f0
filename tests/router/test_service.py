"""RouterService: how a server holds the router (states, catalog changes, the Embedder seam)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import toolmesh
from toolmesh.config import RouterConfig
from toolmesh.errors import StateUnavailable
from toolmesh.router.embedding.embedder import Embedder, OnnxEmbedder, Vectors, normalise
from toolmesh.router.search.text import Document
from toolmesh.router.service import RouterService, State
from toolmesh.router.sessions import Sessions, SessionStore

DOCS = [
    Document("get_weather", "get_weather", "Current weather for a city."),
    Document("send_email", "send_email", "Send an email."),
]


class LetterCounts:
    """A tiny real Embedder: letter frequencies. Shows what plugs into the seam."""

    model_id = "letters-v1"
    dimension = 26

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = np.zeros((len(texts), 26), np.float32)
        for i, text in enumerate(texts):
            for char in text.lower():
                if "a" <= char <= "z":
                    rows[i, ord(char) - 97] += 1
        return normalise(rows + 1e-6)


async def test_any_embedder_plugs_in_and_the_catalog_can_change(tmp_path: Path) -> None:
    embedder = LetterCounts()
    assert isinstance(embedder, Embedder)
    service = RouterService(RouterConfig(data_dir=tmp_path), embedder=embedder)
    assert service.start(DOCS) is None and service.state is State.READY
    assert service.router().route("weather", 2).candidates[0].key == "get_weather"
    service.sync([*DOCS, Document("get_time", "get_time", "The time now.")])
    assert "get_time" in service.router().index and len(service.router().index) == 3
    await service.aclose()


async def test_the_default_model_loads_from_the_cache_during_start(
    router_cache: Path, tmp_path: Path
) -> None:
    service = RouterService(RouterConfig(cache_dir=router_cache, data_dir=tmp_path))
    assert service.start(DOCS) is None, "a cached model loads in place, no background build"
    assert service.state is State.READY
    assert isinstance(service.router().index.embedder, OnnxEmbedder)
    assert service.router().route("is it sunny in Rome?", 1).match == "get_weather"
    assert (tmp_path / "embeddings.sqlite3").is_file() and (tmp_path / "sessions.sqlite3").is_file()
    await service.aclose()


async def test_a_disabled_or_broken_router_explains_itself(tmp_path: Path) -> None:
    disabled = RouterService(RouterConfig(enabled=False))
    assert disabled.start(DOCS) is None and disabled.state is State.DISABLED
    with pytest.raises(toolmesh.Unavailable, match="disabled"):
        disabled.executor()
    broken = RouterService(
        RouterConfig(model=tmp_path / "no.onnx", tokenizer=tmp_path / "tokenizer.json", data_dir=tmp_path)
    )
    broken.start(DOCS)
    assert broken.state is State.FAILED
    with pytest.raises(toolmesh.Unavailable, match=r"no\.onnx") as caught:
        broken.router()
    assert caught.value.retry_after is None, "retrying will not help"


def test_the_router_section_of_the_config(tmp_path: Path) -> None:
    from toolmesh.config import ConfigError, parse_config

    config = parse_config(
        {
            "router": {
                "cache_dir": "~/models",
                "threshold": 0.4,
                "llm": {"base_url": "http://x/v1", "model": "m"},
            }
        }
    ).router
    assert config.cache_dir == Path.home() / "models" and config.threshold == 0.4 and config.quantized
    assert config.llm is not None and config.llm.timeout == 20.0 and config.k == 5
    with pytest.raises(ConfigError, match="give both `model`"):
        parse_config({"router": {"model": "mine.onnx"}})
    with pytest.raises(ConfigError, match=r"router\.k"):
        parse_config({"router": {"k": 0}})


def test_the_public_surface_of_toolmesh_router() -> None:
    import toolmesh.router

    for name in toolmesh.router.__all__:
        assert getattr(toolmesh.router, name).__module__.startswith("toolmesh.router."), name
    assert {"Embedder", "FunctionIndex", "Router", "RouterService", "extract_arguments"} <= set(
        toolmesh.router.__all__
    )


class UnwritableSessions(SessionStore):
    """Reads like the SQLite store; every write fails like a shared store that went away."""

    def record(self, *args: object, **kwargs: object) -> None:
        raise StateUnavailable("the session store cannot be reached")


async def test_a_call_that_ran_is_answered_even_when_its_turn_cannot_be_recorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def sessions(config: RouterConfig) -> Sessions:
        return UnwritableSessions(tmp_path / "s.sqlite3", ttl=60, max_sessions=10, max_turns=5)

    service = RouterService(
        RouterConfig(data_dir=tmp_path, threshold=0.0), embedder=LetterCounts(), sessions=sessions
    )
    service.start(DOCS)
    calls: list[str] = []

    async def call(function: str, arguments: object) -> dict[str, bool]:
        calls.append(function)
        return {"ok": True}

    execution = await service.executor().execute("weather", call, session_id="trip")
    assert calls == ["get_weather"] and execution.result == {"ok": True}
    assert "session 'trip' did not record a turn" in caplog.text
    await service.aclose()
