"""MCP tasks: a tools/call answered at once with a task the client polls, run as a toolmesh job.

A thin adapter over `JobService`: the task id is the job id (so the task is also
`GET /v1/jobs/{id}` over HTTP and `GetJob` over gRPC), a task is its caller's only (jobs record
their principal), and tasks live where jobs do: SQLite on one machine, Redis with `[state] url`,
so they outlive a gateway and any replica answers for them. A function opts in with
`@toolmesh.function(task_support="optional" | "required")`.

Each era negotiates tasks its own way:

- 2026-07-28, the ``io.modelcontextprotocol/tasks`` extension (SEP-2663), advertised under
  ``capabilities.extensions``. Creation is server-directed: a tools/call of a task-supporting
  tool from a request whose ``_meta`` client capabilities declare the extension answers a
  ``CreateTaskResult`` (``resultType: "task"``); without the extension an optional tool runs
  directly and a required one is refused with -32021. ``tasks/get`` inlines the result or the
  error, or the ``inputRequests`` of a task that waits; ``tasks/update`` answers them and
  ``tasks/cancel`` (both: an empty ack); ``tasks/result`` and ``tasks/list`` do not exist (-32601),
  and the task methods need the extension (-32021).
- 2025-11-25's experimental tasks: ``capabilities.tasks`` and ``execution.taskSupport`` on
  tools; the client asks with ``params.task`` on tools/call and gets ``{"task": {...}}``;
  ``tasks/get``, ``tasks/result`` (waits for the end, then the tool's result), ``tasks/list``
  and ``tasks/cancel`` (a finished task: -32602).

Statuses: queued and running jobs are ``working``, succeeded ones ``completed``. A failed job is
``completed`` with ``isError`` when the function ran and reported the error (it raised, the
arguments were wrong), else ``failed`` with a JSON-RPC error (a timeout, a limit of its runtime,
every attempt unavailable); cancelled ones ``cancelled``.

Asking the caller (``ctx.elicit``...) is replay (runtimes/functions/asking.py): a job whose
function asks ends failed ``input_required``, with the asks in its result. In 2026-07-28 that job
is an ``input_required`` task showing the asks not answered yet; ``tasks/update`` records the
answers in the job (`JobService.answer`) and, once every ask of the round is answered, queues it
again: each attempt replays with all the answers so far, and may ask another round. 2025-11-25
would answer through ``tasks/result``'s stream, which a stateless server does not keep open for
a job, so there such a task is ``completed`` with an error result.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import decode_header_value
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    HEADER_MISMATCH,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    SERVER_INFO_META_KEY,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolmesh.errors import (
    FunctionError,
    InputRequired,
    InvalidArguments,
    InvalidRequest,
    ToolmeshError,
    from_code,
)
from toolmesh.gateway.core.requests import InvokeRequest
from toolmesh.gateway.core.result_json import result_from_json
from toolmesh.gateway.jobs.job import Job, JobStatus
from toolmesh.gateway.jobs.job_runner import POLL
from toolmesh.gateway.jobs.job_service import JobService
from toolmesh.gateway.mcp.caller import call_options, caller, refusal
from toolmesh.gateway.mcp.convert import call_result
from toolmesh.gateway.mcp.input_requests import METHODS
from toolmesh.runtimes.functions.asking import Ask, pending_asks
from toolmesh.runtimes.functions.results import Result
from toolmesh.runtimes.functions.spec import TASKS_REQUIRED, FunctionSpec

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: 2025-11-25: the `_meta` key that ties a tasks/result answer to its task.
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: How often a client should poll, in milliseconds: as often as an idle worker looks for jobs.
POLL_INTERVAL_MS = round(POLL * 1000)
#: Error codes of a function that ran and reported a failure: an error result, not a failed task.
#: (A function that asked, in the era that cannot answer it, too.)
TOOL_ERRORS = frozenset({FunctionError.code, InvalidArguments.code, InputRequired.code})
#: What 2025-11-25 clients read in `capabilities.tasks`.
LEGACY_CAPABILITY = types.ServerTasksCapability(
    list=types.TasksListCapability(),
    cancel=types.TasksCancelCapability(),
    requests=types.ServerTasksRequestsCapability(
        tools=types.TasksToolsCapability(call=types.TasksCallCapability())
    ),
)


class UpdateTaskParams(types.GetTaskRequestParams):
    """tasks/update (2026-07-28): answers to a task's input requests."""

    input_responses: dict[str, Any] | None = None


class TasksServer(Server[Any]):
    """The SDK server, declaring 2025-11-25's `tasks` capability once tasks are served (the
    2026 sieve drops it there, as the 2025 one drops `extensions`)."""

    serves_tasks = False

    def get_capabilities(self, *args: Any, **kwargs: Any) -> types.ServerCapabilities:
        capabilities = super().get_capabilities(*args, **kwargs)
        if not self.serves_tasks:
            return capabilities
        return capabilities.model_copy(update={"tasks": LEGACY_CAPABILITY})


class McpTasks:
    """The task methods, and the middleware that turns a tools/call into a task."""

    def __init__(self, jobs: JobService) -> None:
        self.jobs = jobs
        self.ttl_ms = round(jobs.config.ttl * 1000)

    def install(self, server: TasksServer) -> None:
        server.serves_tasks = True
        server.extensions[TASKS_EXTENSION] = {}
        server.middleware.append(self)
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, self._get)
        server.add_request_handler("tasks/cancel", types.GetTaskRequestParams, self._cancel)
        server.add_request_handler("tasks/update", UpdateTaskParams, self._update)
        server.add_request_handler("tasks/result", types.GetTaskRequestParams, self._result)
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, self._list)
        self._stamp = server.server_info_stamp

    # -- tools/call ---------------------------------------------------------------------------

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or not isinstance(ctx.params, Mapping):
            return await call_next(ctx)
        params: Mapping[str, Any] = ctx.params
        spec = self._task_spec(ctx, params)
        if spec is None or not self._wants_task(ctx, spec, params):
            return await call_next(ctx)
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            return await call_next(ctx)  # the SDK's validation refuses it
        principal, _ = caller(ctx)
        call = InvokeRequest(spec.qualified_name, json.dumps(arguments).encode(), call_options(ctx))
        try:
            job = await self.jobs.submit(principal, call)
        except ToolmeshError as exc:
            raise refusal(exc) from None
        working = TaskState("working")
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # Written here, past the SDK's serializer, so its envelope is ours to fill.
            meta = {SERVER_INFO_META_KEY: self._stamp}
            return {"resultType": "task", **self._task(job, working, modern=True), "_meta": meta}
        return {"task": self._task(job, working, modern=False)}

    def _task_spec(
        self, ctx: ServerRequestContext[Any, Any], params: Mapping[str, Any]
    ) -> FunctionSpec | None:
        """The called function, when the caller may call it; else None (the handler refuses it)."""
        name = params.get("name")
        if not isinstance(name, str):
            return None
        principal, namespace = caller(ctx)
        try:
            spec = self.jobs.mesh.function(name, principal)
        except ToolmeshError:
            return None
        return spec if not namespace or spec.namespace == namespace else None

    def _wants_task(
        self, ctx: ServerRequestContext[Any, Any], spec: FunctionSpec, params: Mapping[str, Any]
    ) -> bool:
        """Whether this call becomes a task; raises when it must be one and cannot (or the
        reverse, 2025-11-25)."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            asked = params.get("task") is not None
            if asked and not spec.task_support:
                raise MCPError(METHOD_NOT_FOUND, f"tool {spec.qualified_name!r} cannot run as a task")
            if not asked and spec.task_support == TASKS_REQUIRED:
                raise MCPError(
                    METHOD_NOT_FOUND, f"tool {spec.qualified_name!r} runs only as a task: send params.task"
                )
            return asked
        if not spec.task_support or "inputResponses" in params or "requestState" in params:
            return False  # a legacy `task` hint promotes nothing; a round of asks runs directly
        if negotiated(ctx):
            return True
        if spec.task_support == TASKS_REQUIRED:
            raise _missing_extension(f"tool {spec.qualified_name!r} runs only as a task")
        return False

    # -- task methods ---------------------------------------------------------------------------

    async def _get(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskRequestParams
    ) -> dict[str, Any]:
        modern = self._check(ctx, params.task_id)
        job = await self._job(ctx, params.task_id)
        state = outcome(job, modern=modern)
        detailed = self._task(job, state, modern=modern)
        if not modern:
            return detailed
        if state.asks:
            asks = {a.key: {"method": METHODS[a.kind], "params": a.params} for a in state.asks}
            detailed["inputRequests"] = asks
        elif state.result is not None:
            detailed["result"] = self._tool_result(ctx, job, state.result)
        elif state.error is not None:
            detailed["error"] = state.error
        return detailed

    async def _cancel(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskRequestParams
    ) -> dict[str, Any]:
        modern = self._check(ctx, params.task_id)
        principal, _ = caller(ctx)
        try:
            job = await self.jobs.cancel(principal, params.task_id)
        except InvalidRequest as exc:  # finished: an error in 2025, the same ack in 2026
            if not modern:
                raise refusal(exc) from None
            return {}
        except ToolmeshError as exc:  # another's or unknown: job_not_found, -32602
            raise refusal(exc) from None
        return {} if modern else self._task(job, outcome(job, modern=False), modern=False)

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams) -> dict[str, Any]:
        if not self._check(ctx, params.task_id):
            raise MCPError(METHOD_NOT_FOUND, "tasks/update is a method of the 2026-07-28 tasks extension")
        job = await self._job(ctx, params.task_id)
        waiting = {a.key for a in outcome(job, modern=True).asks}
        # Answers to what the task does not wait for are ignored, as a tools/call ignores them.
        answers = {
            key: value
            for key, value in (params.input_responses or {}).items()
            if key in waiting and isinstance(value, Mapping)
        }
        if answers:
            principal, _ = caller(ctx)
            try:
                await self.jobs.answer(principal, job.id, answers, resume=waiting <= answers.keys())
            except ToolmeshError as exc:
                raise refusal(exc) from None
        return {}

    async def _result(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskRequestParams
    ) -> dict[str, Any]:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(METHOD_NOT_FOUND, "tasks/result is gone in 2026-07-28: tasks/get has the result")
        job = await self._job(ctx, params.task_id)
        while not job.status.finished:
            await asyncio.sleep(POLL)
            job = await self._job(ctx, params.task_id)
        state = outcome(job, modern=False)
        if state.error is not None:
            raise MCPError(state.error["code"], state.error["message"])
        if state.result is None:
            raise MCPError(types.INVALID_PARAMS, f"task {job.id!r} was cancelled; it has no result")
        result = self._tool_result(ctx, job, state.result)
        return {**result, "_meta": {RELATED_TASK: {"taskId": job.id}}}

    async def _list(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(METHOD_NOT_FOUND, "tasks/list is gone in 2026-07-28")
        principal, _ = caller(ctx)
        try:
            found = await self.jobs.list(principal)
        except ToolmeshError as exc:
            raise refusal(exc) from None
        return {"tasks": [self._task(job, outcome(job, modern=False), modern=False) for job in found]}

    # -- helpers ------------------------------------------------------------------------------

    def _check(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> bool:
        """Whether the request is of the 2026 era, after its checks there: the extension was
        negotiated (-32021) and an `Mcp-Name` header names this task (-32020, SEP-2243)."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return False
        if not negotiated(ctx):
            raise _missing_extension(f"{ctx.method} needs the tasks extension")
        header = ctx.request.headers.get("mcp-name") if ctx.request is not None else None
        if header is not None and decode_header_value(header) != task_id:
            raise MCPError(HEADER_MISMATCH, "Mcp-Name header does not match the request's taskId")
        return True

    async def _job(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> Job:
        principal, _ = caller(ctx)
        try:
            return await self.jobs.get(principal, task_id)
        except ToolmeshError as exc:  # another's or unknown: job_not_found, -32602
            raise refusal(exc) from None

    def _task(self, job: Job, state: TaskState, *, modern: bool) -> dict[str, Any]:
        """The fields of a Task, in the era's names."""
        task: dict[str, Any] = {
            "taskId": job.id,
            "status": state.status,
            "createdAt": iso_time(job.created),
            "lastUpdatedAt": iso_time(job.updated or job.created),
        }
        if state.error is not None:
            task["statusMessage"] = state.error["message"]
        if modern:
            return {**task, "ttlMs": self.ttl_ms, "pollIntervalMs": POLL_INTERVAL_MS}
        return {**task, "ttl": self.ttl_ms, "pollInterval": POLL_INTERVAL_MS}

    def _tool_result(self, ctx: ServerRequestContext[Any, Any], job: Job, result: Result) -> dict[str, Any]:
        shown = call_result(self._spec(ctx, job), result)
        return shown.model_dump(by_alias=True, mode="json", exclude_none=True)

    def _spec(self, ctx: ServerRequestContext[Any, Any], job: Job) -> FunctionSpec:
        # For how its result is shown (structured output); a function gone since is shown plainly.
        principal, _ = caller(ctx)
        try:
            return self.jobs.mesh.function(job.function, principal)
        except ToolmeshError:
            namespace, _, name = job.function.rpartition(".")
            return FunctionSpec(name=name, namespace=namespace, description="", input_schema={})


def negotiated(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether a 2026 request declares the tasks extension in its `_meta` client capabilities."""
    declared = (ctx.meta or {}).get(CLIENT_CAPABILITIES_META_KEY)
    extensions = declared.get("extensions") if isinstance(declared, Mapping) else None
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


@dataclass(frozen=True, slots=True)
class TaskState:
    """Where a job stands, as a task: its status, and its tool result or JSON-RPC error."""

    status: str
    #: When completed: the tool's result (an error result when the function reported one).
    result: Result | None = None
    #: When failed: {"code", "message"}.
    error: dict[str, Any] | None = None
    #: When input_required: what the function asked that its caller has not answered yet.
    asks: tuple[Ask, ...] = ()


def outcome(job: Job, *, modern: bool) -> TaskState:
    """`job` as a task of the era: a function that asked its caller waits for the answers in
    2026-07-28 (`tasks/update`); 2025-11-25 has no way to send them, so there it is an error result."""
    if not job.status.finished:
        return TaskState("working")
    if job.status is JobStatus.CANCELLED:
        return TaskState("cancelled")
    result = result_from_json(job.result) if job.result is not None else None
    pending = pending_asks(result) if modern and result is not None else None
    if pending is not None and job.status is JobStatus.FAILED:
        answered = json.loads(job.answers) if job.answers else {}
        return TaskState("input_required", asks=tuple(a for a in pending[0] if a.key not in answered))
    if result is not None and (job.status is JobStatus.SUCCEEDED or _tool_error(result)):
        return TaskState("completed", result)
    code, message = (job.error or {}).get("code", ""), (job.error or {}).get("message", "")
    return TaskState("failed", error={"code": from_code(code, message).jsonrpc_code, "message": message})


def iso_time(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _tool_error(result: Result) -> bool:
    return result.error is None or result.error.code in TOOL_ERRORS


def _missing_extension(message: str) -> MCPError:
    required: dict[str, Any] = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
    return MCPError(MISSING_REQUIRED_CLIENT_CAPABILITY, f"{message}: declare {TASKS_EXTENSION}", required)
