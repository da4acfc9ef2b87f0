"""The router as a server holds it: built from `[router]` config, loaded without blocking start-up.

The router is optional: the gateway always starts. With a cached model the
router loads during start-up (a fraction of a second); without one the model
is built in a background thread and the routing endpoints answer 503
``unavailable`` (with Retry-After) until it is ready. If it cannot be built at
all, they keep answering 503 with the reason, and everything else still works.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from toolmesh.config import RouterConfig
from toolmesh.directories import DataDirError, ensure_writable
from toolmesh.errors import Unavailable
from toolmesh.router.embedding.cache import EmbeddingCache
from toolmesh.router.embedding.embedder import Embedder, OnnxEmbedder
from toolmesh.router.embedding.model import cached_model, ensure_model
from toolmesh.router.execution import PromptExecutor
from toolmesh.router.extraction.llm import LlmExtractor
from toolmesh.router.learning import ExampleStore, LearnedExamples, Routings
from toolmesh.router.routing import Router
from toolmesh.router.search.index import FunctionIndex
from toolmesh.router.search.text import Document
from toolmesh.router.sessions import Sessions, SessionStore

log = logging.getLogger("toolmesh.router")

T = TypeVar("T")

EMBEDDINGS_FILE = "embeddings.sqlite3"
SESSIONS_FILE = "sessions.sqlite3"
#: Examples learned from use (router/learning.py).
LEARNED_FILE = "learned.sqlite3"
#: What Retry-After says while the model is being built.
BUILD_RETRY_AFTER = 5.0
#: How to give the router another data directory, said when its own cannot be written.
DATA_DIR_HINT = "give another with `toolmesh up --data-dir DIR`, [project] data_dir or [router] data_dir"


class State(StrEnum):
    DISABLED = "disabled"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


def open_embedder(config: RouterConfig, progress: Callable[[str], None] | None = None) -> OnnxEmbedder:
    """The configured model (yours, or the default one, built into the cache if it is not there)."""
    if config.model is not None and config.tokenizer is not None:
        for path in (config.model, config.tokenizer):
            if not path.is_file():
                raise FileNotFoundError(f"[router] {path}: no such file")
        return OnnxEmbedder(
            config.model, config.tokenizer, max_tokens=config.max_tokens, threads=config.threads
        )
    built = ensure_model(config.cache_dir, progress=progress)
    path = built.path(config.quantized)
    return OnnxEmbedder(path, built.tokenizer, max_tokens=config.max_tokens, threads=config.threads)


def model_is_ready(config: RouterConfig) -> bool:
    """Whether opening the model needs no build (so it can happen during start-up)."""
    if config.model is not None:
        return True
    try:
        return cached_model(config.cache_dir) is not None
    except Exception:  # a missing package: let the loader report it
        return True


class RouterService:
    """Holds the router and its state for a gateway; `executor()` raises Unavailable until ready."""

    def __init__(
        self,
        config: RouterConfig,
        *,
        embedder: Embedder | None = None,
        llm_api_key: str | None = None,
        sessions: Callable[[RouterConfig], Sessions] | None = None,
        examples: Callable[[], ExampleStore] | None = None,
        routings: Callable[[], Routings] | None = None,
    ) -> None:
        self.config = config
        self.state = State.LOADING if config.enabled else State.DISABLED
        self.reason = (
            "" if config.enabled else "the router is disabled in the config ([router] enabled = false)"
        )
        self._embedder = embedder
        self._executor: PromptExecutor | None = None
        self._closables: list[EmbeddingCache | Sessions | ExampleStore] = []
        #: Build the session store and the learned examples (None: SQLite under data_dir) and the
        #: routings' memory (None: this process); the gateway's may be shared (gateway/state/).
        self._sessions = sessions
        self._examples = examples
        self._routings = routings
        self._lock = threading.Lock()
        self._pending: list[Document] | None = None
        # Routing and extraction run here, not on the event loop and not in asyncio's default
        # executor: a few threads at most, so requests beyond them wait in its queue instead of
        # adding threads that each take turns at the GIL with the loop (see [router] workers).
        self.workers = ThreadPoolExecutor(config.workers, thread_name_prefix="router")
        llm = config.llm
        self._llm: LlmExtractor | None = None
        if llm is not None:
            self._llm = LlmExtractor(llm.base_url, llm.model, llm_api_key, llm.timeout)

    # -- loading ------------------------------------------------------------------------------

    def _data_dirs(self) -> tuple[Path, Path]:
        """Where the router keeps its data (sessions, learned examples) and its embedding cache,
        each checked writable: a DataDirError names the one that is not."""
        data = self.config.data_dir
        if data is None:
            raise DataDirError("[router] data_dir is not set (the gateway sets it from the project's)")
        ensure_writable(data, "the router's sessions and learned examples", DATA_DIR_HINT)
        embeddings = self.config.embeddings_dir or data
        if embeddings != data:
            ensure_writable(embeddings, "the router's function embeddings", "set [router] embeddings_dir")
        return data, embeddings

    def load(self, docs: Iterable[Document]) -> None:
        """Open the model, the caches and the index of `docs`; records failure instead of raising."""
        try:
            data, embeddings = self._data_dirs()
        except DataDirError as exc:
            self.state = State.FAILED
            self.reason = f"the router cannot keep its data: {exc}"
            log.error("router unavailable: %s", exc)
            return
        try:
            embedder = self._embedder or open_embedder(
                self.config, progress=lambda s: log.info("router: %s", s)
            )
            cache = EmbeddingCache(embeddings / EMBEDDINGS_FILE)
            sessions: Sessions
            if self._sessions is not None:
                sessions = self._sessions(self.config)
            else:
                sessions = SessionStore(
                    data / SESSIONS_FILE,
                    ttl=self.config.session_ttl,
                    max_sessions=self.config.max_sessions,
                    max_turns=self.config.session_turns,
                )
            learned = self._examples() if self._examples is not None else LearnedExamples(data / LEARNED_FILE)
            self._closables += [cache, sessions, learned]
            routings = self._routings() if self._routings is not None else None
            index = FunctionIndex(embedder, cache)
            router = Router(index, self.config.threshold, sessions, learned, routings)
            report = router.sync(docs)
            with self._lock:
                if self._pending is not None:  # the catalog changed while we were loading
                    router.sync(self._pending)
                    self._pending = None
                self._executor = PromptExecutor(router, self._llm, workers=self.workers)
                self.state = State.READY
            log.info("router ready", extra={"functions": len(router.index), "embedded": report.embedded})
        except Exception as exc:
            self.state = State.FAILED
            self.reason = f"the router could not load its model: {exc}"
            log.warning("router unavailable: %s", exc)

    def start(self, docs: Iterable[Document]) -> threading.Thread | None:
        """Load now when the model is cached; otherwise build it in a background thread (returned)."""
        if self.state is State.DISABLED:
            return None
        docs = list(docs)
        if self._embedder is not None or model_is_ready(self.config):
            self.load(docs)
            return None
        self.reason = "the router's model is being built; try again shortly"
        thread = threading.Thread(target=self.load, args=(docs,), name="router-build", daemon=True)
        thread.start()
        return thread

    # -- use ----------------------------------------------------------------------------------

    def executor(self) -> PromptExecutor:
        executor = self._executor
        if executor is None:
            retry = BUILD_RETRY_AFTER if self.state is State.LOADING else None
            raise Unavailable(self.reason, retry_after=retry)
        return executor

    def router(self) -> Router:
        return self.executor().router

    async def in_worker(self, work: Callable[[], T]) -> T:
        """`work()` on one of the router's threads."""
        return await asyncio.get_running_loop().run_in_executor(self.workers, work)

    def sync(self, docs: Iterable[Document]) -> None:
        """Follow a catalog change (before the router is ready, it is applied once loading ends)."""
        with self._lock:
            if self._executor is None:
                self._pending = list(docs)
                return
        self._executor.router.sync(docs)

    def relearn(self, function: str) -> None:
        """Another replica (or `toolmesh router examples remove`) changed `function`'s learned
        examples in the shared store: read them again, on a router thread. Before the router is
        ready there is nothing to do: loading reads them all."""
        executor = self._executor
        if executor is None:
            return
        try:
            done = self.workers.submit(executor.router.relearn, function)
        except RuntimeError:  # closing: the workers are shut down
            return
        done.add_done_callback(_log_relearn_failure)

    async def aclose(self) -> None:
        if self._llm is not None:
            await self._llm.aclose()
        self.workers.shutdown(wait=False, cancel_futures=True)
        for closable in self._closables:
            closable.close()


def _log_relearn_failure(done: Future[None]) -> None:
    if not done.cancelled() and (exc := done.exception()) is not None:
        log.warning("router: learned examples not refreshed: %s", exc)
