"""JSON-RPC with one stdio MCP server, newline-delimited, with no SDK session in between.

The official client session costs a task group, memory streams and model validation on every call;
a pod forwards each call as it is, so this client writes the request line, and the server's output
is split into lines as the event loop reads it (the session is the subprocess's protocol), so the
answer's line resolves the caller's future at once: no reader task or stream buffer to wake in
between, one loop turn less per call. The handshake is the protocol's own
(`initialize`, then `notifications/initialized`); the server's progress and log notifications go
to the request that listens for them; its `notifications/*/list_changed` to `changed`, others are
dropped. Its requests: `ping` is answered with an empty result; elicitation, sampling and roots
(when offered) go to the request in flight that answers them (`Answerer`), when it is the only one that does
(stdio does not say whose they are: the pod's own requests, such as a listing, answer none; roots
are each call's caller's, so a `roots/list` outside a call, as a server may send just after
`initialize`, has no one to ask); anything else, and these with no one to answer, get an error, as
the SDK's session answers with no callbacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolmesh.runtimes.mcp.server_asks import KINDS, Answerer, answers, capabilities
from toolmesh.runtimes.mcp.server_env import server_environment

#: The revision offered; a server may answer with an older one it speaks.
PROTOCOL_VERSION = "2025-11-25"
CLIENT_INFO = {"name": "toolmesh", "version": "1"}
#: JSON-RPC's "method not found", the answer to what the client does not offer.
METHOD_NOT_FOUND = -32601
#: Longest line read from the server (a tool's answer is one line).
MAX_LINE = 64 * 1024 * 1024


#: Receives a notification the server sent about a request (its JSON-RPC message).
Heard = Callable[[dict[str, Any]], None]
#: JSON-RPC's "internal error", the answer to a request whose call stopped to ask its caller.
INTERNAL_ERROR = -32603


class ServerExited(RuntimeError):
    """The MCP server process ended (or never started); the message says how."""


class RpcError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _declined(method: str) -> str:
    """Why the server's request `method` gets an error."""
    if method == "roots/list":
        return (
            "roots/list is answered by a tool call's caller, when the runtime offers roots "
            "(`roots = true`) and that call is the only one in flight that can ask"
        )
    if method in KINDS:
        return (
            f"{method} is answered by a tool call's caller, while that call is the only one in flight "
            "that can ask (stdio does not say whose a request is)"
        )
    return f"the client does not offer {method}"


class StdioSession(asyncio.SubprocessProtocol):
    """A started server and its pipes: `request` sends one request and waits for its answer."""

    def __init__(self, command: Sequence[str], roots: bool = False, own_group: bool = False) -> None:
        self._command = list(command)
        #: Whether the server leads a process group of its own, which `close` kills whole.
        self._own_group = own_group
        #: Whether `roots` was offered (then `roots/list` is a call's ask, else declined).
        self._roots = roots
        self._transport: asyncio.SubprocessTransport | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        #: What each request that listens hears, by its id (which is also its progress token).
        self._listening: dict[int, Heard] = {}
        #: Who answers the server's requests during each request that can, by its id.
        self._answering: dict[int, Answerer] = {}
        #: The start of a line whose end has not arrived yet.
        self._partial = bytearray()
        self._stdout_open = True
        self._status: int | None = None
        self._exited: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        #: Set while the server's input pipe is full: writers wait for it to drain.
        self._drained: asyncio.Future[None] | None = None
        #: Why the server is gone, once it is.
        self.gone: str | None = None
        #: What the server said of itself in `initialize` (`capabilities`, `serverInfo`...).
        self.server: dict[str, Any] = {}
        #: Gets the method of each `notifications/{tools,resources,prompts}/list_changed` it sends.
        self.changed: Callable[[str], None] | None = None

    @classmethod
    async def start(
        cls,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        changed: Callable[[str], None] | None = None,
        roots: bool = False,
        own_group: bool = False,
    ) -> StdioSession:
        """Start the server and shake hands; ServerExited when it cannot be started or answer.
        `changed` hears its `list_changed` notifications from the start; `roots` offers roots.
        `own_group` starts it in a process group of its own, killed whole when it is closed: what
        a wrapper (`npx`, `sh -c`) started goes with it even when it outlives the wrapper. A
        pod's server stays in the pod's group instead, which the pool kills with the pod."""
        loop = asyncio.get_running_loop()
        try:
            _, session = await loop.subprocess_exec(
                lambda: cls(command, roots, own_group),
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=None,
                # Not the pod's whole environment: the gateway's keys are not a third party's.
                env=server_environment() if env is None else dict(env),
                start_new_session=own_group,
            )
        except OSError as exc:
            raise ServerExited(f"the MCP server {command[0]!r} did not start: {exc}") from None
        session.changed = changed
        try:
            hello = {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": capabilities(roots),
                "clientInfo": CLIENT_INFO,
            }
            server = await session.request("initialize", hello)
            session.server = server if isinstance(server, dict) else {}
            await session._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        except BaseException:
            await session.close()
            raise
        return session

    @property
    def alive(self) -> bool:
        return self.gone is None

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        heard: Heard | None = None,
        answer: Answerer | None = None,
    ) -> Any:
        """The result of `method`: RpcError for an error answer, ServerExited when the server ends
        first. Cancelled (a timeout), it tells the server to stop working on it. `heard` gets the
        request's progress notifications, and the server's log messages while it is the only
        request in flight that listens (stdio has no other way to tell whose they are); `answer`
        answers the server's elicitation, sampling and roots requests while it is the only one that
        does."""
        if self.gone is not None:
            raise ServerExited(self.gone)
        ident = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if heard is not None:
            self._listening[ident] = heard
            params = {**(params or {}), "_meta": {**(params or {}).get("_meta", {}), "progressToken": ident}}
        if answer is not None:
            self._answering[ident] = answer
        if params is not None:
            message["params"] = params
        answered = asyncio.get_running_loop().create_future()
        self._waiting[ident] = answered
        try:
            await self._send(message)
            return await answered
        except asyncio.CancelledError:
            self._cancel(ident)
            raise
        finally:
            self._waiting.pop(ident, None)
            self._listening.pop(ident, None)
            self._answering.pop(ident, None)

    def _cancel(self, ident: int) -> None:
        """Tell the server to stop working on request `ident`."""
        if self.gone is None:
            cancelled = {"requestId": ident}
            with contextlib.suppress(ServerExited):
                self._write({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancelled})

    async def _send(self, message: Mapping[str, Any]) -> None:
        self._write(message)
        if self._drained is not None:  # the pipe is full: wait until the server reads
            await asyncio.shield(self._drained)

    def _write(self, message: Mapping[str, Any]) -> None:
        stdin = self._transport.get_pipe_transport(0) if self._transport is not None else None
        if self.gone is not None or stdin is None or stdin.is_closing():
            raise ServerExited(self.gone or f"the MCP server {self._command[0]!r} exited")
        stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")  # type: ignore[attr-defined]

    # -- the subprocess's protocol: called by the event loop ------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd != 1:
            return
        if self._partial:
            self._partial += data
            if b"\n" not in data:
                self._check_partial()
                return
            data = bytes(self._partial)
            self._partial.clear()
        *lines, rest = data.split(b"\n")
        for line in lines:
            self._dispatch(line)
        if rest:
            self._partial += rest
            self._check_partial()

    def _check_partial(self) -> None:
        if len(self._partial) > MAX_LINE:
            self._partial.clear()
            self._end(f"the MCP server {self._command[0]!r} broke its output: a line over {MAX_LINE} bytes")
            self._kill()

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self._stdout_open = False
            self._ended()
        elif fd == 0:
            if exc is not None:  # what was written is lost (an exiting server closes it cleanly)
                self._end(f"the MCP server {self._command[0]!r} stopped reading: {exc!r}")
            self.resume_writing()

    def process_exited(self) -> None:
        status = self._transport.get_returncode() if self._transport is not None else None
        self._status = -1 if status is None else status
        if not self._exited.done():
            self._exited.set_result(None)
        self._ended()

    def _ended(self) -> None:
        # Both the output read to its end and the status known: answers written just before the
        # server exited still reach their callers.
        if not self._stdout_open and self._status is not None:
            self._end(f"the MCP server {self._command[0]!r} exited with status {self._status}")

    def pause_writing(self) -> None:
        if self._drained is None:
            self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _kill(self) -> None:
        if self._transport is None:
            return
        with contextlib.suppress(ProcessLookupError):
            if self._own_group:
                os.killpg(self._transport.get_pid(), signal.SIGKILL)
            else:
                self._transport.kill()

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return  # not JSON-RPC: a server printing to stdout by mistake
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if "id" not in message:
            if isinstance(method, str) and method.endswith("/list_changed"):
                if self.changed is not None:
                    self.changed(method)
            elif self._listening:
                self._notified(message)
            return
        if method is None:
            answer = self._waiting.get(message.get("id"))  # type: ignore[arg-type]
            # A JSON log line that happens to have an "id" (a logger's) answers nothing.
            if answer is None or answer.done() or not ("result" in message or "error" in message):
                return
            error = message.get("error")
            if isinstance(error, dict):
                answer.set_exception(RpcError(int(error.get("code", 0)), str(error.get("message", ""))))
            else:
                answer.set_result(message.get("result"))
        elif "id" in message:
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
            ended: int | None = None
            if method == "ping":
                reply["result"] = {}
            elif answers(str(method), self._roots) and len(self._answering) == 1:
                ended = self._answered(reply, str(method), message.get("params"))
            else:
                reply["error"] = {"code": METHOD_NOT_FOUND, "message": _declined(str(method))}
            with contextlib.suppress(ServerExited):
                self._write(reply)
            if ended is not None:
                self._cancel(ended)

    def _answered(self, reply: dict[str, Any], method: str, params: Any) -> int | None:
        """`reply` to the server's `method` by the answerer of the only request in flight that has
        one (the pod's own requests, a listing, have none: they cannot have asked). When that
        raises, the request ends with its exception, and its id is returned: the server is to be
        told it is cancelled (after the reply)."""
        ident, answer = next(iter(self._answering.items()))
        try:
            reply["result"] = answer(method, params if isinstance(params, dict) else {})
        except Exception as exc:
            reply["error"] = {"code": INTERNAL_ERROR, "message": str(exc) or type(exc).__name__}
            waiting = self._waiting.get(ident)
            if waiting is not None and not waiting.done():
                waiting.set_exception(exc)
            return ident
        return None

    def _notified(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        if not isinstance(params, dict):
            return
        if message.get("method") == "notifications/progress":
            heard = self._listening.get(params.get("progressToken"))  # type: ignore[arg-type]
        elif message.get("method") == "notifications/message" and len(self._listening) == 1:
            heard = next(iter(self._listening.values()))
        else:
            return
        if heard is not None:
            heard(message)

    def _end(self, why: str) -> None:
        if self.gone is None:
            self.gone = why
        waiting, self._waiting = self._waiting, {}
        for answer in waiting.values():
            if not answer.done():
                answer.set_exception(ServerExited(self.gone))

    async def close(self) -> None:
        """Stop the server: its input closed, then killed if it lingers."""
        self._end(f"the MCP server {self._command[0]!r} was stopped")
        self.resume_writing()
        transport = self._transport
        if transport is None:
            return
        stdin = transport.get_pipe_transport(0)
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        if not self._exited.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._exited), 2)
            except TimeoutError:
                self._kill()
                await self._exited
        if self._own_group:  # what it started and left behind, deaf to its input's end
            self._kill()
        transport.close()
