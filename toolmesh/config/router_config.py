"""`[router]`: the embedding router's model, threshold and sessions, and the LLM that helps extract."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolmesh import directories
from toolmesh.config import config_defaults as defaults


class LlmConfig(BaseModel):
    """An OpenAI-compatible chat endpoint that extracts arguments when the rules cannot."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The OpenAI-compatible endpoint, e.g. "http://127.0.0.1:11434/v1".
    base_url: str
    #: The model asked to extract arguments.
    model: str
    #: Environment variable holding the API key (read once at start-up); none for open endpoints.
    api_key_env: str | None = None
    #: Seconds one extraction request may take.
    timeout: float = Field(defaults.DEFAULT_LLM_TIMEOUT, gt=0)


class RouterConfig(BaseModel):
    """The embedding router: model, threshold, sessions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Off: /v1/route, /v1/execute and ?query= answer 503 and no model is loaded.
    enabled: bool = True
    #: Built models, keyed by the source weights' hash.
    cache_dir: Path = Field(default_factory=directories.default_cache_dir)
    #: Sessions and learned examples (and function embeddings, unless `embeddings_dir` is set).
    #: None: the project's data directory ([project] data_dir).
    data_dir: Path | None = None
    #: The cache of function embeddings, keyed by model and text, so safe to share between
    #: projects. None: `data_dir` when that is set, else the user's ~/.local/share/toolmesh.
    embeddings_dir: Path | None = None
    #: The int8 model (default) or the fp32 one.
    quantized: bool = True
    #: Your own ONNX sentence-embedding model and its tokenizer.json, instead of the built one.
    model: Path | None = None
    #: With `model`: its Hugging Face tokenizer.json.
    tokenizer: Path | None = None
    #: Tokens per text; longer texts are truncated.
    max_tokens: int = Field(defaults.DEFAULT_ROUTER_MAX_TOKENS, ge=8, le=8192)
    #: onnxruntime threads per prompt (1 on a one-core machine).
    threads: int = Field(defaults.DEFAULT_ROUTER_THREADS, ge=1, le=64)
    #: Fused score the best candidate needs to be the match; below it, no function fits.
    threshold: float = defaults.DEFAULT_ROUTER_THRESHOLD
    #: Longest prompt accepted, in characters (longer ones get 400 invalid_request).
    max_prompt_chars: int = Field(defaults.DEFAULT_MAX_PROMPT_CHARS, ge=1, le=defaults.MAX_PROMPT_CHARS_LIMIT)
    #: Threads routing and extracting prompts; more requests wait their turn.
    workers: int = Field(defaults.DEFAULT_ROUTER_WORKERS, ge=1, le=64)
    #: Candidates returned when the request does not say.
    k: int = Field(defaults.DEFAULT_ROUTER_K, ge=1, le=100)
    #: Seconds a session lives after its last use, and how many are kept at most.
    session_ttl: float = Field(defaults.DEFAULT_SESSION_TTL, gt=0)
    #: Most sessions kept; the least recently used go first.
    max_sessions: int = Field(defaults.DEFAULT_MAX_SESSIONS, ge=1)
    #: Turns remembered per session (older ones are dropped).
    session_turns: int = Field(defaults.DEFAULT_SESSION_TURNS, ge=1)
    #: Seconds a free-text call that needs a confirmation waits for it (then it is forgotten).
    confirmation_ttl: float = Field(defaults.DEFAULT_CONFIRMATION_TTL, gt=0, le=3600)
    llm: LlmConfig | None = None

    @field_validator("cache_dir", "data_dir", "embeddings_dir", "model", "tokenizer")
    @classmethod
    def _expand(cls, path: Path | None) -> Path | None:
        return None if path is None else path.expanduser()

    @model_validator(mode="after")
    def _check(self) -> RouterConfig:
        if (self.model is None) != (self.tokenizer is None):
            raise ValueError(
                "give both `model` (an .onnx file) and `tokenizer` (its tokenizer.json), or neither"
            )
        return self
