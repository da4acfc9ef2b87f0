"""From a prompt to a finished call: route, extract the arguments, invoke, remember.

Transport-free: the caller supplies an `FunctionCaller` (the gateway's adapter wraps
its `Mesh`) and gets an `Execution` back, or one of the hierarchy's errors:
`FunctionNotFound` when nothing fits, `InvalidArguments` naming the required
arguments the prompt did not give; both carry the candidates.

Asking instead of guessing: when a required value is not in the prompt, or it names two
choices of an enum without saying which, nothing runs. The 422 `invalid_arguments`
answer then says `"follow_up": true` in its details, with `needs` (each missing
argument, why, and its options when it has some) and what was understood so far, so a
client can ask its user and send the prompt again with the answer. (`Execution.follow_up`
is another thing: that this turn continued the session's previous function.)
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from toolmesh.errors import FunctionNotFound, InvalidArguments, Unavailable, Violation
from toolmesh.router.extraction.extract import Extraction, extract_arguments
from toolmesh.router.extraction.llm import LlmExtractor
from toolmesh.router.extraction.snippet import code_for
from toolmesh.router.routing import Router, RouteResult, is_follow_up
from toolmesh.router.sessions import Turn

log = logging.getLogger("toolmesh.router")

#: A follow-up keeps the previous function unless another one beats the threshold by this much.
FOLLOW_UP_MARGIN = 0.1

T = TypeVar("T")


class FunctionCaller(Protocol):
    """Calls a function and returns its result as JSON (the gateway's result object)."""

    async def __call__(self, function: str, arguments: Mapping[str, Any]) -> Mapping[str, Any]: ...


@dataclass
class Execution:
    function: str
    arguments: dict[str, Any]
    #: Where each argument came from: "number", "string", "identifier", "enum", "boolean", "previous",
    #: "default", "llm"...
    sources: dict[str, str]
    route: RouteResult
    result: Mapping[str, Any] | None = None
    code: dict[str, str] = field(default_factory=dict)
    follow_up: bool = False
    #: Why the call waits (or would wait) for a confirmation, and the token that runs it: set
    #: by the gateway's free-text policy (gateway/core/free_text.py); None: it runs.
    confirmation: Mapping[str, Any] | None = None
    session_id: str | None = None

    @property
    def status(self) -> str:
        """ "done" (it ran), "needs_confirmation" (send the token back to run it) or "planned"."""
        if self.result is not None:
            return "done"
        if self.confirmation is not None and "token" in self.confirmation:
            return "needs_confirmation"
        return "planned"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "function": self.function,
            "arguments": self.arguments,
            "argument_sources": self.sources,
            "result": self.result,
            "code": self.code,
            "follow_up": self.follow_up,
            "routing_id": self.route.routing_id,
            "candidates": self.route.to_dict()["candidates"],
            "confirmation": self.confirmation,
            "session_id": self.session_id,
        }


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a prompt asks for, worked out before any call: the route, the function chosen
    (None when nothing fits), and the arguments found for it."""

    route: RouteResult
    function: str | None = None
    follow_up: bool = False
    found: Extraction = field(default_factory=Extraction)


def _needs_more(
    function: str, schema: Mapping[str, Any], found: Extraction, route: RouteResult
) -> InvalidArguments:
    """The answer that asks for what the prompt left out (see the module docstring)."""
    properties = schema.get("properties") or {}
    needs: list[dict[str, Any]] = []
    violations = []
    for name in found.missing:
        if name in found.unclear:
            reason, expected, got = "the prompt names more than one choice", "one clear choice", "several"
        elif name in found.unknown:
            named = found.unknown[name]
            reason = f"the prompt asks for {named!r}, which is not an option"
            expected, got = "one of the options", named
        else:
            reason, expected, got = "not in the prompt", "a value in the prompt", "nothing"
        need: dict[str, Any] = {"name": name, "reason": reason}
        options = (properties.get(name) or {}).get("enum")
        if options:
            need["options"] = list(options)
        needs.append(need)
        violations.append(Violation(name, expected, got, f"{name}: {reason}"))
    error = InvalidArguments(
        f"{function} needs {', '.join(found.missing)}, which the prompt does not give clearly",
        violations,
        param="prompt",
    )
    error.details.update(
        function=function,
        arguments=found.arguments,
        candidates=_candidates(route),
        follow_up=True,
        needs=needs,
    )
    return error


def _candidates(route: RouteResult) -> list[dict[str, object]]:
    candidates = route.to_dict()["candidates"]
    assert isinstance(candidates, list)
    return candidates


class PromptExecutor:
    def __init__(
        self,
        router: Router,
        llm: LlmExtractor | None = None,
        today: Callable[[], dt.date] = dt.date.today,
        workers: Executor | None = None,
    ) -> None:
        self.router = router
        self.llm = llm
        self.today = today
        #: Where routing, extraction and the session store run (None: asyncio's default executor).
        self.workers = workers

    async def in_worker(self, work: Callable[[], T]) -> T:
        """`work()` in a worker thread: it is CPU (embedding, extraction) or disk (sessions),
        either of which would stall every other request on the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.workers, work)

    def _choose(self, prompt: str, route: RouteResult, previous: Turn | None) -> tuple[str | None, bool]:
        if previous is None or previous.function is None or not is_follow_up(prompt):
            return route.match, False
        if any(declined.key == previous.function for declined in route.declined):
            # The safety rules passed the previous function over for this prompt ("is HW-002 in
            # stock too?" after "remove HW-001"): a follow-up must not bring it back.
            return route.match, False
        top = route.candidates[0].score if route.candidates else float("-inf")
        if route.match in (None, previous.function) or top < self.router.threshold + FOLLOW_UP_MARGIN:
            return previous.function, True
        return route.match, False

    async def plan(
        self,
        prompt: str,
        *,
        k: int = 5,
        session_id: str | None = None,
        allowed: Callable[[str], bool] | None = None,
        base_url: str = "http://127.0.0.1:8080",
        with_key: bool = False,
    ) -> Execution:
        """Route and extract: the call the prompt asks for, not run (see `run`)."""
        plan = await self.in_worker(functools.partial(self._plan, prompt, k, session_id, allowed))
        route, function, found = plan.route, plan.function, plan.found
        if function is None:
            raise FunctionNotFound(
                "no function fits the prompt well enough; see the candidates",
                param="prompt",
                details={"candidates": _candidates(route)},
            )
        doc = self.router.document(function)
        if found.missing and self.llm is not None:
            await self._ask_llm(
                prompt, function, doc.description, doc.parameters, found.arguments, found.sources
            )
            found.missing = [name for name in found.missing if name not in found.arguments]
        if found.missing:
            raise _needs_more(function, doc.parameters, found, route)
        execution = Execution(
            function, found.arguments, found.sources, route, follow_up=plan.follow_up, session_id=session_id
        )
        execution.code = code_for(base_url, function, found.arguments, with_key=with_key)
        return execution

    async def run(
        self,
        execution: Execution,
        invoker: FunctionCaller,
        prompt: str,
        *,
        session_id: str | None = None,
        learn_as: str | None = None,
    ) -> Execution:
        """Call a planned execution and record it in the session. `learn_as` names a caller
        allowed to teach the router, and is given only when someone other than the router
        vouched for the choice (a confirmed call): when the router chose the function (not a
        session's follow-up) and the call succeeded, the prompt becomes a learned example."""
        function = execution.function
        execution.result = await invoker(function, execution.arguments)
        succeeded = not execution.result.get("is_error")
        route = execution.route
        if learn_as is not None and succeeded and not execution.follow_up and function == route.match:
            learn = functools.partial(self.router.learn, function, prompt, learn_as)
            try:
                await self.in_worker(learn)
            except Exception as exc:  # the call ran; learning is a bonus
                log.warning(f"router did not learn from a call of {function}: {exc}")
        await self.record(session_id, prompt, execution)
        return execution

    async def record(self, session_id: str | None, prompt: str, execution: Execution) -> None:
        """Keep the turn in the session, run or only planned (its result None), so that a
        follow-up continues it."""
        sessions = self.router.sessions
        if not session_id or sessions is None:
            return
        record = functools.partial(
            sessions.record, session_id, prompt, execution.function, execution.arguments, execution.result
        )
        try:
            await self.in_worker(record)
        except Unavailable as exc:
            # The call ran (or was planned): that matters more than the session's memory of it.
            log.warning(f"session {session_id!r} did not record a turn: {exc.message}")

    async def execute(
        self,
        prompt: str,
        invoker: FunctionCaller,
        *,
        k: int = 5,
        session_id: str | None = None,
        dry_run: bool = False,
        allowed: Callable[[str], bool] | None = None,
        base_url: str = "http://127.0.0.1:8080",
        with_key: bool = False,
    ) -> Execution:
        """Plan, then run unless `dry_run`, whatever the function does: for callers that decided
        already (evaluations, tests). The gateway asks its free-text policy in between
        (gateway/core/free_text.py). Nothing is learned: the router chose alone."""
        execution = await self.plan(
            prompt, k=k, session_id=session_id, allowed=allowed, base_url=base_url, with_key=with_key
        )
        if dry_run:
            await self.record(session_id, prompt, execution)
            return execution
        return await self.run(execution, invoker, prompt, session_id=session_id)

    def _plan(
        self, prompt: str, k: int, session_id: str | None, allowed: Callable[[str], bool] | None
    ) -> _Plan:
        """Routing, the session's history and extraction: all the CPU and disk work before
        the call, done in one trip to a worker thread."""
        route = self.router.route(prompt, k, session_id=session_id, allowed=allowed)
        history = self.router.history(session_id)
        previous = next((t for t in reversed(history) if t.function), None)
        if previous is not None and previous.function not in self.router.index:
            previous = None
        if (
            previous is not None
            and allowed is not None
            and previous.function
            and not allowed(previous.function)
        ):
            previous = None
        function, follow_up = self._choose(prompt, route, previous)
        if function is None:
            return _Plan(route)
        doc = self.router.document(function)
        same = previous is not None and previous.function == function
        found = extract_arguments(
            prompt,
            doc.parameters,
            today=self.today(),
            previous=previous.arguments if same and previous else None,
        )
        return _Plan(route, function, follow_up, found)

    async def _ask_llm(
        self,
        prompt: str,
        function: str,
        description: str,
        schema: Mapping[str, Any],
        arguments: dict[str, Any],
        sources: dict[str, str],
    ) -> None:
        assert self.llm is not None
        try:
            answer = await self.llm.extract(prompt, function, description, schema)
        except Unavailable:
            return  # the rules' answer stands; the 422 names what is still missing
        properties = schema.get("properties") or {}
        for name, value in answer.items():
            if name in properties and (name not in arguments or sources.get(name) == "default"):
                arguments[name], sources[name] = value, "llm"
