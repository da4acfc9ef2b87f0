"""Running calls: validation, timeouts, the in-flight limit, results. No transport here.

Sync functions run in a bounded thread pool, async ones on the event loop, generators stream
one item at a time. Every call ends in a `Result` except those turned away before they start
(unknown function, pod at its limit), which raise the matching toolmesh error.

A call that runs out of memory (MemoryError, e.g. at the pod's address-space limit) or returns
more than `max_result_bytes` ends in a `resource_exhausted` error result naming the limit; the
pod and its other calls carry on. A sync call that passes its timeout leaves its thread running
(Python cannot stop a thread); when `max_stuck` threads are stuck so, the executor turns new
calls away (refused, so the gateway sends them elsewhere) and tells its owner, which drains the
pod and exits so that a fresh one replaces it. A blocked event loop is watched from a thread
(isolation/loop_watchdog.py, through `running`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import toolmesh.tracing as tracing
from toolmesh.errors import (
    FunctionTimeout,
    InputRequired,
    InvalidArguments,
    InvalidRequest,
    Overloaded,
    ResourceExhausted,
    ToolmeshError,
    Unavailable,
)
from toolmesh.protocol.calls import REFUSED, Call, Outcome, new_request_id, outcome_of
from toolmesh.runtimes.functions.asking import input_required_result
from toolmesh.runtimes.functions.call_events import EventChannel
from toolmesh.runtimes.functions.context import DEPTH_KEY, Context
from toolmesh.runtimes.functions.durable_state import StateAnswer, StateOp
from toolmesh.runtimes.functions.hosted import HostedFunction, Kind
from toolmesh.runtimes.functions.registry import Registry
from toolmesh.runtimes.functions.results import (
    Content,
    ErrorInfo,
    Result,
    Text,
    content_bytes,
    normalise,
    result_meta,
)
from toolmesh.runtimes.pod.deadlines import Deadlines, WorkerThreads
from toolmesh.runtimes.pod.executor_config import ExecutorConfig
from toolmesh.runtimes.pod.isolation import call_output
from toolmesh.runtimes.pod.isolation.loop_watchdog import RunningCalls

Emit = Callable[[list[Content]], Awaitable[None]]


class MeshClient(Protocol):
    """Runs a call somewhere else in the mesh (the gateway), for ctx.invoke."""

    async def invoke(self, call: Call) -> Result: ...

    async def resource_updated(self, uri: str) -> None: ...

    async def state(self, op: StateOp) -> StateAnswer: ...


class Observer(Protocol):
    """Told about every call that ends; metrics and logs plug in here."""

    def finished(self, call: Call, function: str, outcome: str, seconds: float) -> None: ...


class Executor:
    """Runs calls against a registry. Implements `Invoker`, so functions in the
    same pod can call each other through `ctx.invoke`."""

    def __init__(
        self,
        registry: Registry,
        config: ExecutorConfig | None = None,
        *,
        observer: Observer | None = None,
        mesh: MeshClient | None = None,
        on_stuck: Callable[[int], None] | None = None,
    ) -> None:
        """`on_stuck(threads)` is called once, when `max_stuck` threads are stuck."""
        self.registry = registry
        self.config = config or ExecutorConfig()
        self._observer = observer
        self._mesh = mesh
        max_stuck = self.config.max_stuck or max(1, self.config.workers // 2)
        self._threads = WorkerThreads(self.config.workers, max_stuck, on_stuck)
        self._inflight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._draining = False
        self._deadlines = Deadlines()
        #: The calls running now, read by the loop watchdog's thread.
        self.running = RunningCalls()

    @property
    def inflight(self) -> int:
        return self._inflight

    @property
    def stuck(self) -> int:
        """Threads still running a sync call whose caller was answered (timed out or cancelled)."""
        return self._threads.stuck

    @property
    def busy_threads(self) -> int:
        """Threads running a function now; idle pool threads are not counted."""
        return self._threads.busy

    async def drain(self, grace: float) -> bool:
        """Turn new calls away (UNAVAILABLE, retryable) and wait up to `grace`
        seconds for the running ones. Returns True if they all finished."""
        self._draining = True
        try:
            await asyncio.wait_for(self._idle.wait(), grace)
        except TimeoutError:
            return False
        return True

    async def invoke(self, call: Call) -> Result:
        """Run a call to completion (generators are collected)."""
        return await self._invoke(self._admit(call), call)

    async def _invoke(self, hosted: HostedFunction, call: Call) -> Result:
        try:
            if hosted.kind is Kind.SYNC or hosted.kind is Kind.ASYNC:
                return await self._run(hosted, call, _no_items)
            chunks: list[Content] = []
            size = 0

            async def collect(items: list[Content]) -> None:
                nonlocal size
                size += content_bytes(items)
                self._check_size(hosted, size)
                chunks.extend(items)

            result = await self._run(hosted, call, collect)
        finally:
            self._release()
        result.content = chunks + result.content
        return result

    async def stream(self, call: Call) -> AsyncIterator[list[Content] | Result]:
        """Run a call, yielding content items as they are produced, then the Result."""
        hosted = self._admit(call)
        queue: asyncio.Queue[list[Content] | Result | ToolmeshError] = asyncio.Queue(maxsize=16)

        async def produce() -> None:
            try:
                await queue.put(await self._run(hosted, call, emit))
            except ToolmeshError as exc:
                await queue.put(exc)

        # The function runs in its own task so its timeout never fires inside
        # the consumer's code while the stream is suspended at a yield.
        async def emit(items: list[Content]) -> None:
            # Each item is its own message on the stream: the limit holds for each.
            self._check_size(hosted, content_bytes(items))
            await queue.put(items)

        producer = asyncio.ensure_future(produce())
        try:
            while True:
                event = await queue.get()
                if isinstance(event, ToolmeshError):
                    raise event
                yield event
                if isinstance(event, Result):
                    break
        finally:
            if not producer.done():
                producer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await producer
            self._release()

    async def invoke_nested(self, name: str, arguments: bytes, *, parent: Context) -> Result:
        """`Invoker` for ctx.invoke: a call on behalf of a running function, run
        here when this pod hosts the function and through the mesh otherwise."""
        depth = parent.depth + 1
        if depth > self.config.max_depth:
            raise InvalidRequest(f"call depth limit ({self.config.max_depth}) exceeded calling {name!r}")
        metadata = {**parent.metadata, DEPTH_KEY: str(depth)}
        call = Call(name, arguments, parent.request_id, parent.session_id, metadata, parent.deadline)
        call.trace = parent.trace_context
        if name not in self.registry and self._mesh is not None:
            return await self._mesh.invoke(call)
        # Part of work already admitted: neither the in-flight limit nor a drain turns it away.
        return await self._invoke(self._admit(call, nested=True), call)

    async def resource_updated(self, uri: str) -> None:
        """`Invoker` for ctx.resource_updated: tell the gateway, which tells the subscribers."""
        if self._mesh is None:
            raise RuntimeError("this pod is not part of a mesh: no gateway to announce a resource update to")
        await self._mesh.resource_updated(uri)

    async def state(self, op: StateOp) -> StateAnswer:
        """`Invoker` for ctx.state: the gateway keeps the runtime's state."""
        if self._mesh is None:
            raise RuntimeError("ctx.state needs a gateway: this pod is not part of a mesh")
        return await self._mesh.state(op)

    def close(self) -> None:
        """Stop the worker threads. Threads stuck in a sync function are abandoned."""
        self._threads.shutdown()

    # -- internals --------------------------------------------------------------------------

    def _admit(self, call: Call, *, nested: bool = False) -> HostedFunction:
        try:
            hosted = self.registry.get(call.function)
        except ToolmeshError:
            self._finish(call, "", Outcome.NOT_FOUND, 0.0)
            raise
        recycling = self._threads.overwhelmed or self.running.condemned is not None
        if not nested and (self._draining or recycling or self._inflight >= self.config.max_inflight):
            self._finish(call, call.function, Outcome.REJECTED, 0.0)
            if recycling:
                why = self.running.condemned or f"{self.stuck} threads stuck in calls that timed out"
                raise Unavailable(
                    f"runtime pod is being replaced ({why}); send the call to another replica",
                    retry_after=0,
                    details={REFUSED: True},
                )
            if self._draining:
                raise Unavailable(
                    "runtime is shutting down; send the call to another replica",
                    retry_after=0,
                    details={REFUSED: True},
                )
            raise Overloaded(
                f"runtime is at its limit of {self.config.max_inflight} calls in flight", retry_after=1.0
            )
        self._inflight += 1
        self._idle.clear()
        return hosted

    def _release(self) -> None:
        self._inflight -= 1
        if self._inflight == 0:
            self._idle.set()

    def _finish(self, call: Call, function: str, outcome: str, seconds: float) -> None:
        if self._observer is not None:
            self._observer.finished(call, function, outcome, seconds)

    def _time_limit(self, hosted: HostedFunction, call: Call) -> tuple[float, bool]:
        """Seconds the call may run, and whether the caller's deadline (rather
        than the function's own timeout) is what limits it."""
        own = hosted.spec.timeout or self.config.default_timeout
        if call.deadline is None:
            return own, False
        remaining = max(call.deadline - time.monotonic(), 0.0)
        return (remaining, True) if remaining < own else (own, False)

    async def _run(self, hosted: HostedFunction, call: Call, emit: Emit) -> Result:
        if not tracing.enabled():
            return await self._run_call(hosted, call, emit)
        name = hosted.spec.qualified_name
        attributes = {"toolmesh.request_id": call.request_id}
        # The pod's span of the call: a child of the caller's (the gateway's, or a ctx.invoke's).
        with tracing.span(f"toolmesh.function {name}", attributes, parent=call.trace, server=True) as span:
            result = await self._run_call(hosted, call, emit)
            if result.is_error and result.error is not None:
                tracing.mark_failed(span, result.error.code)
            return result

    async def _run_call(self, hosted: HostedFunction, call: Call, emit: Emit) -> Result:
        request_id = call.request_id or new_request_id()
        started = time.perf_counter()
        queued_ms = (started - call.received_at) * 1000
        try:
            arguments = hosted.validator.validate(call.arguments)
        except InvalidArguments as exc:
            result = Result.failure(ErrorInfo.from_exception(exc))
        else:
            try:
                result = await self._execute(hosted, call, request_id, arguments, emit)
            except FunctionTimeout:
                self._finish(call, hosted.spec.qualified_name, Outcome.TIMEOUT, time.perf_counter() - started)
                raise
            except asyncio.CancelledError:
                self._finish(
                    call, hosted.spec.qualified_name, Outcome.CANCELLED, time.perf_counter() - started
                )
                raise
        ended = time.perf_counter()
        result.request_id = request_id
        result.queued_ms = queued_ms
        result.duration_ms = (ended - started) * 1000
        self._finish(call, hosted.spec.qualified_name, outcome_of(result), ended - call.received_at)
        return result

    async def _execute(
        self, hosted: HostedFunction, call: Call, request_id: str, arguments: dict[str, Any], emit: Emit
    ) -> Result:
        timeout, caller_bound = self._time_limit(hosted, call)
        ctx: Context | None = None
        channel: EventChannel | None = None
        if hosted.context_param is not None:
            if call.events is not None and call.events.wants_anything:
                channel = EventChannel(call.events, hosted.spec.qualified_name, asyncio.get_running_loop())
            ctx = Context(
                function=hosted.spec.qualified_name,
                request_id=request_id,
                session_id=call.session_id,
                metadata=call.metadata,
                deadline=time.monotonic() + timeout,
                invoker=self,
                loop=asyncio.get_running_loop(),
                trace_context=tracing.carrier() or tracing.as_carrier(call.trace),
                events=channel,
            )
            arguments[hosted.context_param] = ctx
        limit = self._deadlines.limit(timeout)
        running = self.running.enter(hosted.spec.qualified_name, request_id, timeout)
        try:
            with call_output.capturing(request_id, hosted.spec.qualified_name):
                async with limit:
                    value = await self._call(hosted, arguments, emit)
        except TimeoutError as exc:
            if ctx is not None:
                ctx.cancel()
            if not limit.expired:
                return self._function_error(exc)
            name = hosted.spec.qualified_name
            if caller_bound:
                # The caller has given up: a call-level error, not a result it would read.
                raise FunctionTimeout(f"the caller's deadline passed before {name} finished") from None
            return Result.failure(
                ErrorInfo(FunctionTimeout.code, f"{name} did not finish within {timeout:.3g} s")
            )
        except asyncio.CancelledError:
            if ctx is not None:
                ctx.cancel()
            raise
        except _TooLarge as exc:
            return Result.failure(exc.error)
        except MemoryError as exc:
            _release_frames(exc)
            return self._out_of_memory(hosted)
        except Exception as exc:
            return self._function_error(exc)
        finally:
            self.running.leave(running)
            if channel is not None:
                channel.close()
        if ctx is not None and (unanswered := ctx.unanswered()) is not None:
            return input_required_result(unanswered)  # it caught its InputRequired: see asking.py
        try:
            content, structured = normalise(value)
            meta = result_meta(value)
        except TypeError as exc:
            return self._function_error(exc)
        except MemoryError:
            return self._out_of_memory(hosted)
        del value  # a result too large to send should not stay alive while the error goes out
        try:
            self._check_size(hosted, content_bytes(content) + len(structured or b""))
        except _TooLarge as exc:
            return Result.failure(exc.error)
        return Result(content=content, structured_json=structured, meta=meta)

    def _check_size(self, hosted: HostedFunction, size: int) -> None:
        limit = self.config.max_result_bytes
        if size > limit:
            message = (
                f"{hosted.spec.qualified_name} returned {size} bytes, more than its runtime's "
                f"max_result_bytes ({limit})"
            )
            raise _TooLarge(ErrorInfo(ResourceExhausted.code, message))

    def _out_of_memory(self, hosted: HostedFunction) -> Result:
        name = hosted.spec.qualified_name
        limit = self.config.max_memory_mb
        where = f"its runtime's memory limit (max_memory_mb = {limit})" if limit else "the memory of its pod"
        return Result.failure(
            ErrorInfo(ResourceExhausted.code, f"{name} ran out of memory: it passed {where}")
        )

    def _function_error(self, exc: BaseException) -> Result:
        if isinstance(exc, InputRequired):  # ctx.elicit & co. with no answer yet: see asking.py
            return input_required_result(exc)
        if isinstance(exc, ToolmeshError):
            # Raised through ctx.invoke: pass the inner message on instead of nesting class names.
            message = exc.message
        else:
            message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        trace = "".join(traceback.format_exception(exc)) if self.config.debug else ""
        return Result.failure(ErrorInfo("function_error", message, traceback=trace))

    async def _call(self, hosted: HostedFunction, arguments: dict[str, Any], emit: Emit) -> Any:
        fn = hosted.call
        if hosted.kind is Kind.ASYNC:
            return await fn(**arguments)
        if hosted.kind is Kind.SYNC:
            return await self._threads.run(functools.partial(fn, **arguments))
        if hosted.kind is Kind.ASYNC_GENERATOR:
            async with contextlib.aclosing(fn(**arguments)) as agen:
                async for item in agen:
                    await emit(_chunk(item))
            return None
        generator = await self._threads.run(functools.partial(fn, **arguments))
        try:
            while True:
                item = await self._threads.run(next, generator, _DONE)
                if item is _DONE:
                    return None
                await emit(_chunk(item))
        finally:
            self._threads.run_later(_close_quietly, generator)


_DONE = object()


class _TooLarge(Exception):
    """A result (or a streamed item) passed max_result_bytes; carries the error to return."""

    def __init__(self, error: ErrorInfo) -> None:
        super().__init__(error.message)
        self.error = error


async def _no_items(items: list[Content]) -> None:
    raise AssertionError("only generators emit items")


def _chunk(item: Any) -> list[Content]:
    content, _ = normalise(item)
    return content or [Text("")]


def _release_frames(exc: BaseException) -> None:
    """Drop the locals of the frames a MemoryError passed through, which hold what the function
    allocated: through the futures in them the error refers to itself, so without this the
    memory would wait for a garbage collection while other calls need it."""
    traceback.clear_frames(exc.__traceback__)
    exc.__traceback__ = None


def _close_quietly(generator: Any) -> None:
    with contextlib.suppress(Exception):
        generator.close()
