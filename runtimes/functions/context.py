"""The invocation context a function can ask for by annotating a parameter with `Context`."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Generator, Mapping, MutableMapping, Sequence
from typing import Any, Protocol

from toolmesh.errors import InputRequired
from toolmesh.runtimes.functions import asking
from toolmesh.runtimes.functions.asking import Asker, Elicited, Root, Sampled
from toolmesh.runtimes.functions.call_events import EventChannel
from toolmesh.runtimes.functions.durable_state import DurableState, StateAnswer, StateOp
from toolmesh.runtimes.functions.results import Result

#: Metadata key that counts how deep a chain of nested ctx.invoke calls is.
DEPTH_KEY = "toolmesh-depth"


class Invoker(Protocol):
    """Whatever can run a function by name: the local executor in a pod, the mesh
    through the gateway. `ctx.invoke` goes through one of these."""

    async def invoke_nested(self, name: str, arguments: bytes, *, parent: Context) -> Result: ...

    async def resource_updated(self, uri: str) -> None: ...

    async def state(self, op: StateOp) -> StateAnswer: ...


class _CallLogger(logging.LoggerAdapter[logging.Logger]):
    """Adds the call's request id and function to every record, keeping the caller's own `extra`
    (the stock adapter replaces it), and sends the records the caller asked for to the caller."""

    def __init__(
        self, logger: logging.Logger, extra: Mapping[str, object], events: EventChannel | None
    ) -> None:
        super().__init__(logger, extra)
        self.events = events

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        # Checked against the caller's level, not the pod's: a caller may want debug records
        # from a pod that logs only warnings itself.
        events = self.events
        if events is not None and level >= events.log_level:
            events.log(level, msg, args, kwargs.get("extra"), kwargs.get("exc_info"))
        # One frame more than the stock adapter: the pod's record names the function's line.
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
        super().log(level, msg, *args, **kwargs)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(self.extra or {}), **(kwargs.get("extra") or {})}
        return msg, kwargs


class _Done:
    """What `report_progress` returns: nothing to wait for, yet `await` works on it, so the same
    call reads right in sync and async functions."""

    __slots__ = ()

    def __await__(self) -> Generator[None, None, None]:
        return
        yield


_DONE = _Done()


class Context:
    """What a running function knows about its call.

    Declare a parameter of this type (any name) and the runtime passes it in;
    it never appears in the function's schema::

        @toolmesh.function
        async def plan_trip(city: str, ctx: toolmesh.Context) -> str:
            ctx.logger.info("planning", extra={"city": city})
            forecast = await ctx.invoke("get_forecast", {"city": city, "days": 3})
            ctx.report_progress(1, total=2, message="got the forecast")
            ...

    When the caller asked for them (an MCP client's log level or progress token, an SSE
    caller's ``log_level``/``progress``), `ctx.logger`'s records at or above its level and
    `report_progress`'s reports reach it while the call runs; see `call_events.py` for the
    bounds. Otherwise they cost nothing.

    `state` keeps JSON values that outlive the pod (module globals do not: they are per pod
    and gone at scale-in), shared by every pod of the runtime; see `durable_state.py`::

        visits = await ctx.state.incr(f"visits:{page}")

    `elicit`, `sample` and `list_roots` ask the caller (an MCP client) and return its answer;
    the call is *replayed* with the answers, so the code before an ask must be safe to run
    again (see `asking.py`)::

        answer = await ctx.elicit("Which city?", {"city": str})
        if answer.accepted:
            reply = await ctx.sample(f"One line about {answer.content['city']}", max_tokens=60)
    """

    __slots__ = (
        "_asker",
        "_cancelled",
        "_events",
        "_invoker",
        "_loop",
        "_state",
        "deadline",
        "function",
        "logger",
        "metadata",
        "request_id",
        "session_id",
        "trace_context",
    )

    def __init__(
        self,
        *,
        function: str,
        request_id: str,
        session_id: str = "",
        metadata: Mapping[str, str] | None = None,
        deadline: float | None = None,
        invoker: Invoker | None = None,
        logger: logging.Logger | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        trace_context: tuple[tuple[str, str], ...] = (),
        events: EventChannel | None = None,
    ) -> None:
        self.function = function
        self.request_id = request_id
        self.session_id = session_id
        self.metadata: Mapping[str, str] = metadata or {}
        #: When the call must be done, on the `time.monotonic()` clock; None for no limit.
        self.deadline = deadline
        #: This call's W3C trace context, ``(("traceparent", ...), ("tracestate", ...))`` when
        #: tracing is on: ctx.invoke passes it on, and so can a function calling other services.
        self.trace_context = trace_context
        base = logger or logging.getLogger("toolmesh.functions")
        self.logger: logging.LoggerAdapter[logging.Logger] = _CallLogger(
            base, {"request_id": request_id, "function": function}, events
        )
        self._events = events
        self._invoker = invoker
        self._loop = loop
        self._cancelled = False
        self._asker = Asker(function, self.metadata)
        self._state: DurableState | None = None

    @property
    def state(self) -> DurableState:
        """The runtime's durable key-value state (JSON values, kept by the gateway): `get`,
        `set`, `incr`, `delete`, `update`, `keys`..., and their `_sync` twins."""
        if self._state is None:
            self._state = DurableState(self._invoker, self._loop)
        return self._state

    @property
    def depth(self) -> int:
        """How many ctx.invoke hops led to this call (0 for a call from outside)."""
        try:
            return int(self.metadata.get(DEPTH_KEY, "0"))
        except ValueError:
            return 0

    def time_remaining(self) -> float | None:
        """Seconds left before the deadline, or None when there is none."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    @property
    def cancelled(self) -> bool:
        """True once the call timed out or the caller went away. Long-running sync
        functions should check it and stop: Python cannot interrupt a thread."""
        return self._cancelled

    def cancel(self) -> None:
        self._cancelled = True

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> Awaitable[None]:
        """Tell the caller how far the call got (e.g. ``report_progress(3, total=10)``), if it
        asked to know; a no-op otherwise. Call it from sync or async code; awaiting the
        return value is allowed and not needed. `progress` should grow from one report
        to the next."""
        if self._events is not None:
            self._events.report_progress(progress, total, message)
        return _DONE

    async def invoke(self, name: str, arguments: Mapping[str, Any] | None = None) -> Result:
        """Call another function by qualified name and return its result.

        Raises the matching toolmesh error when the call fails (FunctionError
        when the other function raised), so failures propagate unless caught.
        """
        if self._invoker is None:
            raise RuntimeError("this context cannot invoke other functions")
        payload = json.dumps(dict(arguments or {})).encode()
        result = await self._invoker.invoke_nested(name, payload, parent=self)
        if result.is_error and result.error is not None:
            raise result.error.to_exception()
        return result

    async def resource_updated(self, uri: str) -> None:
        """Tell MCP clients subscribed to the resource at `uri` (one of `@toolmesh.resource`'s
        URIs, or one a template of it matches) that it changed, so they read it again. Raises
        FunctionNotFound when no resource serves `uri`; from sync code use `resource_updated_sync`."""
        if self._invoker is None:
            raise RuntimeError("this context cannot announce resource updates")
        await self._invoker.resource_updated(uri)

    def resource_updated_sync(self, uri: str) -> None:
        """`resource_updated` for sync functions, which run in worker threads."""
        if self._loop is None:
            raise RuntimeError("resource_updated_sync is only available inside a running call")
        asyncio.run_coroutine_threadsafe(self.resource_updated(uri), self._loop).result()

    def invoke_sync(self, name: str, arguments: Mapping[str, Any] | None = None) -> Result:
        """`invoke` for sync functions, which run in worker threads."""
        if self._loop is None:
            raise RuntimeError("invoke_sync is only available inside a running call")
        future = asyncio.run_coroutine_threadsafe(self.invoke(name, arguments), self._loop)
        return future.result()

    # -- asking the caller (see asking.py: the replay contract) ----------------------------------

    def unanswered(self) -> InputRequired | None:
        """What the call asked and got no answer for (the runtime's business, not the function's)."""
        return self._asker.unanswered

    def can_ask(self, kind: str) -> bool:
        """Whether the caller declared it can answer asks of `kind` ("elicitation", "sampling",
        "roots"). Asking anyway ends the call with `InputRequired` when it cannot."""
        return self._asker.can_answer(kind)

    async def elicit(self, message: str, schema: Any = None, *, key: str | None = None) -> Elicited:
        """Ask the user to fill a form: `schema` is a JSON-schema object, a ``{"field": type}``
        dict, a dataclass or a TypedDict (flat: strings, numbers, booleans, enums). Returns the
        action ("accept", "decline", "cancel") and, when accepted, the content."""
        return self.elicit_sync(message, schema, key=key)

    def elicit_sync(self, message: str, schema: Any = None, *, key: str | None = None) -> Elicited:
        """`elicit` for sync functions."""
        answer: Elicited = self._asker.ask([asking.elicitation(message, schema, key=key)])[0]
        return answer

    async def sample(
        self,
        messages: str | Sequence[Mapping[str, Any] | str],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        key: str | None = None,
    ) -> Sampled:
        """Ask the caller's model: `messages` is a prompt string or a list of strings (user
        turns) and ``{"role", "content"}`` messages. Returns the model's message."""
        return self.sample_sync(
            messages, max_tokens=max_tokens, system_prompt=system_prompt, temperature=temperature, key=key
        )

    def sample_sync(
        self,
        messages: str | Sequence[Mapping[str, Any] | str],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        key: str | None = None,
    ) -> Sampled:
        """`sample` for sync functions."""
        parts = asking.sampling(
            messages, max_tokens=max_tokens, system_prompt=system_prompt, temperature=temperature, key=key
        )
        answer: Sampled = self._asker.ask([parts])[0]
        return answer

    async def list_roots(self, *, key: str | None = None) -> list[Root]:
        """The client's roots (``file://`` URIs it lets the server see)."""
        return self.list_roots_sync(key=key)

    def list_roots_sync(self, *, key: str | None = None) -> list[Root]:
        """`list_roots` for sync functions."""
        answer: list[Root] = self._asker.ask([asking.roots(key=key)])[0]
        return answer

    async def ask_all(self, *parts: tuple[asking.Kind, str | None, dict[str, Any]]) -> list[Any]:
        """Several asks in one round, answered together: build each with `toolmesh.asking`'s
        `elicitation(...)`, `sampling(...)`, `roots()`; returns their answers in order."""
        return self.ask_all_sync(*parts)

    def ask_all_sync(self, *parts: tuple[asking.Kind, str | None, dict[str, Any]]) -> list[Any]:
        """`ask_all` for sync functions."""
        return self._asker.ask(parts)
