"""JSON-RPC with one stdio MCP server, newline-delimited, with no SDK session in between.

The official client session costs a task group, memory streams and model validation on every call;
a pod forwards each call as it is, so this client writes the request line, and one reader task
resolves the caller's future when the answer's line arrives. The handshake is the protocol's own
(`initialize`, then `notifications/initialized`); the server's progress and log notifications go
to the request that listens for them, others (`list_changed`) are dropped. Its requests:
`ping` is answered with an empty result; elicitation and sampling go to the request in flight that
answers them (`Answerer`), when it is the only one (stdio does not say whose they are); anything
else, and these with no one to answer, get an error, as the SDK's session answers with no callbacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolmesh.runtimes.mcp.server_asks import CAPABILITIES, KINDS, Answerer

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


class StdioSession:
    """A started server and its reader: `request` sends one request and waits for its answer."""

    def __init__(self, command: Sequence[str], process: asyncio.subprocess.Process) -> None:
        self._command = list(command)
        self._process = process
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        #: What each request that listens hears, by its id (which is also its progress token).
        self._listening: dict[int, Heard] = {}
        #: Who answers the server's requests during each request that can, by its id.
        self._answering: dict[int, Answerer] = {}
        self._reader = asyncio.get_running_loop().create_task(self._read())
        #: Why the server is gone, once it is.
        self.gone: str | None = None
        #: What the server said of itself in `initialize` (`capabilities`, `serverInfo`...).
        self.server: dict[str, Any] = {}

    @classmethod
    async def start(cls, command: Sequence[str], env: Mapping[str, str] | None = None) -> StdioSession:
        """Start the server and shake hands; ServerExited when it cannot be started or answer."""
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                # The pod's environment, whole: the runtime's `env` reached it already.
                env=dict(os.environ if env is None else env),
                limit=MAX_LINE,
            )
        except OSError as exc:
            raise ServerExited(f"the MCP server {command[0]!r} did not start: {exc}") from None
        session = cls(command, process)
        try:
            hello = {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": CAPABILITIES,
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
        request in flight (stdio has no other way to tell whose they are); `answer` answers the
        server's elicitation and sampling requests in that case too."""
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
        stdin = self._process.stdin
        assert stdin is not None
        try:
            await stdin.drain()
        except (ConnectionError, RuntimeError) as exc:
            self._end(f"the MCP server {self._command[0]!r} stopped reading: {exc!r}")
            raise ServerExited(self.gone) from None

    def _write(self, message: Mapping[str, Any]) -> None:
        stdin = self._process.stdin
        if self.gone is not None or stdin is None or stdin.is_closing():
            raise ServerExited(self.gone or f"the MCP server {self._command[0]!r} exited")
        stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    async def _read(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        try:
            while line := await stdout.readline():
                self._dispatch(line)
        except (ValueError, ConnectionError) as exc:  # a line past MAX_LINE, a broken pipe
            self._end(f"the MCP server {self._command[0]!r} broke its output: {exc!r}")
            self._process.kill()
            return
        code = await self._process.wait()
        self._end(f"the MCP server {self._command[0]!r} exited with status {code}")

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return  # not JSON-RPC: a server printing to stdout by mistake
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if "id" not in message and self._listening:
            self._notified(message)
            return
        if method is None:
            answer = self._waiting.get(message.get("id"))  # type: ignore[arg-type]
            if answer is None or answer.done():
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
            elif method in KINDS and len(self._waiting) == 1:
                ended = self._answered(reply, str(method), message.get("params"))
            else:
                reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"the client does not offer {method}"}
            with contextlib.suppress(ServerExited):
                self._write(reply)
            if ended is not None:
                self._cancel(ended)

    def _answered(self, reply: dict[str, Any], method: str, params: Any) -> int | None:
        """`reply` to the server's `method` by the only request in flight's answerer. When that
        raises, the request ends with its exception, and its id is returned: the server is to be
        told it is cancelled (after the reply)."""
        ident: int = next(iter(self._waiting))
        answer = self._answering.get(ident)
        if answer is None:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"the client does not offer {method}"}
            return None
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
        elif message.get("method") == "notifications/message" and len(self._waiting) == 1:
            heard = self._listening.get(next(iter(self._waiting)))
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
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        if self._process.returncode is None:
            try:
                await asyncio.wait_for(self._process.wait(), 2)
            except TimeoutError:
                self._process.kill()
                await self._process.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
