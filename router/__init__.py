"""The embedding router: picks functions for free-text prompts, fills their arguments, keeps sessions.

    from toolmesh.router import Document, FunctionIndex, OnnxEmbedder, Router, ensure_model

    model = ensure_model(cache_dir)                  # builds all-MiniLM-L6-v2 into ONNX once
    index = FunctionIndex(OnnxEmbedder(model.int8, model.tokenizer))
    index.sync([Document("get_weather", "get_weather", "Current weather for a city.")])
    Router(index, threshold=0.3).route("is it raining in Oslo?").match   # "get_weather"

Transport-free: the gateway's core calls it (gateway/core/mesh.py), and its front doors adapt that.
Its layers, bottom up: embedding/ < search/ (the index) < safety/, extraction/ < this folder
(routing, learning, sessions, execution, service).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolmesh._lazy import lazy_attributes

if TYPE_CHECKING:
    from toolmesh.router.embedding.embedder import Embedder, OnnxEmbedder
    from toolmesh.router.embedding.model import BuiltModel, ModelUnavailable, ensure_model
    from toolmesh.router.execution import Execution, FunctionCaller, PromptExecutor
    from toolmesh.router.extraction.extract import Extraction, extract_arguments
    from toolmesh.router.routing import Router, RouteResult
    from toolmesh.router.search.index import Candidate, FunctionIndex
    from toolmesh.router.search.text import Document
    from toolmesh.router.service import RouterService
    from toolmesh.router.sessions import SessionStore, Turn

# Loaded on first use: `toolmesh router ...` is registered in every `toolmesh` command
# line, pods included, which must not pay for numpy and onnxruntime.
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "Embedder": "toolmesh.router.embedding.embedder",
        "OnnxEmbedder": "toolmesh.router.embedding.embedder",
        "Execution": "toolmesh.router.execution",
        "PromptExecutor": "toolmesh.router.execution",
        "FunctionCaller": "toolmesh.router.execution",
        "Extraction": "toolmesh.router.extraction.extract",
        "extract_arguments": "toolmesh.router.extraction.extract",
        "Candidate": "toolmesh.router.search.index",
        "FunctionIndex": "toolmesh.router.search.index",
        "BuiltModel": "toolmesh.router.embedding.model",
        "ModelUnavailable": "toolmesh.router.embedding.model",
        "ensure_model": "toolmesh.router.embedding.model",
        "Router": "toolmesh.router.routing",
        "RouteResult": "toolmesh.router.routing",
        "RouterService": "toolmesh.router.service",
        "SessionStore": "toolmesh.router.sessions",
        "Turn": "toolmesh.router.sessions",
        "Document": "toolmesh.router.search.text",
    },
    globals(),
)


__all__ = [
    "BuiltModel",
    "Candidate",
    "Document",
    "Embedder",
    "Execution",
    "Extraction",
    "FunctionCaller",
    "FunctionIndex",
    "ModelUnavailable",
    "OnnxEmbedder",
    "PromptExecutor",
    "RouteResult",
    "Router",
    "RouterService",
    "SessionStore",
    "Turn",
    "ensure_model",
    "extract_arguments",
]
