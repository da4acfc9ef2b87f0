"""The embedding router: picks functions for free-text prompts, fills their arguments, keeps sessions.

    from toolmesh.router import Document, FunctionIndex, OnnxEmbedder, Router, ensure_model

    model = ensure_model(cache_dir)                  # builds all-MiniLM-L6-v2 into ONNX once
    index = FunctionIndex(OnnxEmbedder(model.int8, model.tokenizer))
    index.sync([Document("get_weather", "get_weather", "Current weather for a city.")])
    Router(index, threshold=0.3).route("is it raining in Oslo?").match   # "get_weather"

Transport-free: the gateway's HTTP routes and gRPC servicer adapt it (gateway/routing.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolmesh.router.embedder import Embedder, OnnxEmbedder
    from toolmesh.router.execution import Execution, Executor, Invoker
    from toolmesh.router.extract import Extraction, extract_arguments
    from toolmesh.router.index import Candidate, FunctionIndex
    from toolmesh.router.model import BuiltModel, ModelUnavailable, ensure_model
    from toolmesh.router.routing import Router, RouteResult
    from toolmesh.router.service import RouterService
    from toolmesh.router.sessions import SessionStore, Turn
    from toolmesh.router.text import Document

#: Where each public name lives. They load on first use: `toolmesh router ...` is registered in
#: every `toolmesh` command line, pods included, which must not pay for numpy and onnxruntime.
_HOMES = {
    "Embedder": "embedder",
    "OnnxEmbedder": "embedder",
    "Execution": "execution",
    "Executor": "execution",
    "Invoker": "execution",
    "Extraction": "extract",
    "extract_arguments": "extract",
    "Candidate": "index",
    "FunctionIndex": "index",
    "BuiltModel": "model",
    "ModelUnavailable": "model",
    "ensure_model": "model",
    "Router": "routing",
    "RouteResult": "routing",
    "RouterService": "service",
    "SessionStore": "sessions",
    "Turn": "sessions",
    "Document": "text",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'toolmesh.router' has no attribute {name!r}")
    return getattr(importlib.import_module(f"toolmesh.router.{home}"), name)


__all__ = [
    "BuiltModel",
    "Candidate",
    "Document",
    "Embedder",
    "Execution",
    "Executor",
    "Extraction",
    "FunctionIndex",
    "Invoker",
    "ModelUnavailable",
    "OnnxEmbedder",
    "RouteResult",
    "Router",
    "RouterService",
    "SessionStore",
    "Turn",
    "ensure_model",
    "extract_arguments",
]
