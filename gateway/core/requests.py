"""What a front door asks the core for, as typed values: each transport parses its wire form
into these (raising InvalidRequest naming the bad field), and the core never sees a transport.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from toolmesh.config.config_defaults import DEFAULT_MAX_PROMPT_CHARS
from toolmesh.errors import InvalidRequest
from toolmesh.gateway.core.tool_formats import ToolFormat
from toolmesh.router.sessions import MAX_SESSION_ID
from toolmesh.runtimes.functions.call_events import Listener

#: Most candidates a routing request may ask for.
MAX_K = 100
#: Longest request id a caller may choose (a UUID is 36).
MAX_REQUEST_ID = 128
#: Longest `Idempotency-Key` (Stripe's limit).
MAX_IDEMPOTENCY_KEY = 255


@dataclass(frozen=True, slots=True)
class CallOptions:
    """Per-call details a caller may set."""

    request_id: str = ""
    session_id: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    #: Seconds the caller will wait; None for the gateway's default.
    timeout: float | None = None
    #: The caller's name for this one call: a repeat answers its outcome instead of running it
    #: again (gateway/idempotency/); "" for none.
    idempotency_key: str = ""

    @classmethod
    def parse(
        cls,
        request_id: str = "",
        session_id: str = "",
        metadata: Mapping[str, str] | None = None,
        timeout: float | None = None,
        *,
        names: tuple[str, str] = ("request_id", "session_id"),
        idempotency_key: str = "",
        key_name: str = "idempotency-key",
    ) -> CallOptions:
        """Options from a client, checked; `names` are what its wire calls the two ids, and
        `key_name` what it calls the idempotency key."""
        return cls(
            _token(request_id, names[0], MAX_REQUEST_ID),
            _token(session_id, names[1], MAX_SESSION_ID),
            dict(metadata or {}),
            timeout,
            _idempotency_key(idempotency_key, key_name),
        )

    def item(self, index: int) -> CallOptions:
        """The options of a batch's call `index`: each call is its own under the batch's key."""
        if not self.idempotency_key:
            return self
        return dataclasses.replace(self, idempotency_key=f"{self.idempotency_key}#{index}")

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> CallOptions:
        """The options HTTP callers (the API, MCP, the chat proxy) send as headers."""
        return cls.parse(
            headers.get("x-request-id", ""),
            headers.get("x-session-id", ""),
            names=("X-Request-Id", "X-Session-Id"),
            idempotency_key=headers.get("idempotency-key", ""),
            key_name="Idempotency-Key",
        )


def _idempotency_key(value: str, name: str) -> str:
    """A key is stored and compared as sent, so an empty or space-only one (a client's bug) is
    refused rather than taken for "no key"; a header that is absent arrives here as ""."""
    _token(value, name, MAX_IDEMPOTENCY_KEY)
    if value and (not value.strip() or value != value.strip()):
        raise InvalidRequest(f"{name} must not be blank or start or end with spaces", param=name)
    return value


def _token(value: str, name: str, limit: int) -> str:
    """An id a client chose: it reaches logs, gRPC metadata and the session store, so it must be
    short printable ASCII (gRPC metadata takes nothing else)."""
    if len(value) > limit or not (value.isascii() and value.isprintable()):
        raise InvalidRequest(f"{name} must be at most {limit} printable ASCII characters", param=name)
    return value


@dataclass(frozen=True, slots=True)
class InvokeRequest:
    """Call one function with its arguments (a JSON object, as bytes)."""

    name: str
    arguments: bytes = b"{}"
    options: CallOptions = field(default_factory=CallOptions)
    #: The function's log records and progress reports the caller wants while it runs, and
    #: where they go (see runtimes/functions/call_events.py); None for none.
    events: Listener | None = None
    #: Call a resource, prompt or completion function (MCP only), not a tool.
    feature: bool = False


def parse_k(value: object) -> int | None:
    """A candidate count from a body or query string (None: the router's default). gRPC's 0 means
    "unset" and its servicer sends None for it; anywhere else 0 is refused like -1."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise InvalidRequest(f"k must be an integer, got {value!r}", param="k") from None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_K:
        raise InvalidRequest(f"k must be an integer from 1 to {MAX_K}, got {value!r}", param="k")
    return value


def check_text(value: str, param: str) -> str:
    """`value`, if it can be written as UTF-8. JSON's "\\ud800" escape decodes to a lone surrogate,
    which the tokenizer, the session store and every JSON encoder then refuse; refused here,
    it is the caller's 400 naming the field instead of a 500 somewhere inside."""
    if not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError as exc:
            raise InvalidRequest(
                f"{param} holds a lone surrogate (U+{ord(value[exc.start]):04X}) at character {exc.start},"
                " which is not text: send UTF-8",
                param=param,
            ) from None
    return value


@dataclass(frozen=True, slots=True)
class RouteRequest:
    """Rank the caller's functions for a free-text prompt."""

    prompt: str
    #: Candidates wanted; None for the router's configured default.
    k: int | None = None
    session_id: str | None = None

    @classmethod
    def parse(
        cls,
        prompt: object,
        k: object = None,
        session_id: object = None,
        *,
        max_chars: int = DEFAULT_MAX_PROMPT_CHARS,
    ) -> RouteRequest:
        """The request from a front door's fields; `max_chars` is `[router] max_prompt_chars`."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidRequest("prompt must be a non-empty string", param="prompt")
        # Checked before anything reads the prompt: every step after this is linear in it.
        if len(prompt) > max_chars:
            raise InvalidRequest(
                f"prompt has {len(prompt)} characters; the limit is {max_chars}", param="prompt"
            )
        check_text(prompt, "prompt")
        if session_id in (None, ""):
            session_id = None
        elif not isinstance(session_id, str) or len(session_id) > MAX_SESSION_ID:
            raise InvalidRequest(
                f"session_id must be a string of at most {MAX_SESSION_ID} characters", param="session_id"
            )
        else:
            check_text(session_id, "session_id")
        return cls(prompt, parse_k(k), session_id)


@dataclass(frozen=True, slots=True)
class ExecuteRequest:
    """Route a prompt, extract the arguments and (unless `dry_run`) call the function."""

    route: RouteRequest
    dry_run: bool = False
    options: CallOptions = field(default_factory=CallOptions)
    #: Where the caller reached the gateway, for the code snippet that repeats the call.
    base_url: str = "http://127.0.0.1:8080"


#: A confirmation token as the gateway writes them (URL-safe base64); anything else is refused unread.
_CONFIRMATION = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class ConfirmRequest:
    """Run the free-text call a confirmation token stands for (from an `ExecuteRequest`'s answer)."""

    token: str
    options: CallOptions = field(default_factory=CallOptions)

    @classmethod
    def parse(cls, token: object, options: CallOptions | None = None) -> ConfirmRequest:
        if not isinstance(token, str) or not _CONFIRMATION.match(token):
            raise InvalidRequest(
                "confirm must be the confirmation token of an earlier execute answer", param="confirm"
            )
        return cls(token, options or CallOptions())


@dataclass(frozen=True, slots=True)
class ToolsRequest:
    """The caller's functions as LLM tool definitions; with `query`, only the best `query.k`."""

    format: ToolFormat = ToolFormat.OPENAI
    strict: bool = False
    query: RouteRequest | None = None
