"""`GrpcReflectionRuntime`: a gRPC server's methods, read by reflection, called by the gateway.

One grpc.aio channel per runtime, no pods. Each unary method is a function whose arguments are
its request message in protobuf's JSON mapping (message_schemas.py, json_mapping.py); each
server-streaming method a streaming function whose messages stream as they arrive (collected
when called unary). Client- and bidi-streaming methods are left out, logged (a call has one
request). A server that cannot be read at start does not stop the gateway: the runtime logs why,
serves nothing and is not ready; a reload reads it again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf import descriptor_pb2, json_format, message_factory
from google.protobuf.descriptor import Descriptor, MethodDescriptor
from google.protobuf.message import Message

from toolmesh.config.runtime_config import RuntimeConfig
from toolmesh.config.tls_config import grpc_tls
from toolmesh.errors import FunctionNotFound, FunctionTimeout, InvalidArguments, Unavailable
from toolmesh.gateway.sources.base.naming import selected
from toolmesh.gateway.sources.base.service_runtime import GatewaySource, call_arguments
from toolmesh.gateway.sources.grpc_reflection.grpc_channel import ChannelError, connected, open_channel
from toolmesh.gateway.sources.grpc_reflection.json_mapping import Lookup, MessageCodec
from toolmesh.gateway.sources.grpc_reflection.message_schemas import message_schema, request_schema
from toolmesh.gateway.sources.grpc_reflection.reflection_client import (
    ReflectionError,
    read_services,
    read_symbol,
)
from toolmesh.gateway.sources.grpc_reflection.status_details import status_details
from toolmesh.protocol.calls import Call
from toolmesh.runtimes.functions.results import Content, ErrorInfo, Json, Result
from toolmesh.runtimes.functions.spec import FunctionSpec, function_name, name_limit

log = logging.getLogger("toolmesh.sources")

#: Status codes that mean the server, not the call, is the problem.
_UNAVAILABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNIMPLEMENTED})


@dataclass(frozen=True, slots=True)
class Method:
    """One method, as much as calling it needs."""

    spec: FunctionSpec
    path: str
    request: Descriptor
    response: type[Message]
    streams: bool


class GrpcReflectionRuntime(GatewaySource):
    """A runtime whose functions are the unary and server-streaming methods of a gRPC server."""

    def __init__(
        self, config: RuntimeConfig, headers: Mapping[str, str], directory: Path | None = None
    ) -> None:
        """`headers` go with every call as metadata (their names lowercased), never a caller's;
        `directory` (the config file's) is where relative TLS files are."""
        assert config.grpc_reflection is not None
        super().__init__(config)
        self._directory = directory
        self._metadata = tuple((name.lower(), value) for name, value in headers.items())
        self._methods: dict[str, Method] = {}
        self._channel: grpc.aio.Channel | None = None
        self._codec: MessageCodec | None = None

    @property
    def ready(self) -> bool:
        return self._channel is not None

    async def start(self, *, strict: bool = False) -> None:
        """Read the server's services and serve their methods. When that fails, log why and
        serve nothing (or with `strict`, as a reload does, raise and keep what was served)."""
        config = self.config
        assert config.grpc_reflection is not None
        channel = None
        try:
            channel = open_channel(
                config.grpc_reflection, grpc_tls(config.grpc_reflection, config.tls), self._directory
            )
            deadline = asyncio.get_running_loop().time() + config.startup_timeout
            await connected(channel, config.startup_timeout)
            async with asyncio.timeout_at(deadline):
                pool, services, files = await read_services(channel, self._metadata, config.startup_timeout)
        except (ChannelError, ReflectionError, TimeoutError) as exc:
            if channel is not None:
                await channel.close(grace=None)
            cause = (
                str(exc)
                if not isinstance(exc, TimeoutError)
                else f"not read within {config.startup_timeout:g} s"
            )
            message = f"runtime {self.name!r}: gRPC server {config.grpc_reflection}: {cause}"
            if strict:
                raise Unavailable(message) from None
            log.error("%s; it serves no functions", message, extra={"runtime": self.name})
            self.error = message
            return
        except BaseException:
            # Cancelled (the gateway stops while it loads in the background): no channel left open.
            if channel is not None:
                await channel.close(grace=None)
            raise
        methods = _methods(
            [m for s in services for m in s.methods], config.name, config.include, config.exclude
        )
        old, self._channel = self._channel, channel
        self._codec = MessageCodec(pool, files, self._lookup(channel))
        self._methods = {m.spec.name: m for m in methods}
        self.specs = [m.spec for m in methods]
        self.error = None
        if old is not None:
            await old.close(grace=None)

    async def close(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close(grace=None)

    def _lookup(self, channel: grpc.aio.Channel) -> Lookup:
        """Asks the server's reflection for the files of a type an Any names."""
        wait = min(self.config.startup_timeout, self.config.timeout)

        async def lookup(symbol: str, have: set[str]) -> dict[str, descriptor_pb2.FileDescriptorProto]:
            return await read_symbol(channel, self._metadata, wait, symbol, have)

        return lookup

    async def _find(self, call: Call) -> tuple[Method, grpc.aio.Channel, MessageCodec, Message]:
        method = self._methods.get(call.function.rpartition(".")[2])
        channel, codec = self._channel, self._codec
        if method is None or channel is None or codec is None:
            raise FunctionNotFound(f"runtime {self.name!r} has no function {call.function!r}")
        try:
            request = await codec.parse(method.request, call_arguments(call.arguments))
        except json_format.ParseError as exc:
            raise InvalidArguments(f"{method.spec.qualified_name}: {exc}", ()) from None
        return method, channel, codec, request

    async def invoke(self, call: Call, timeout: float, *, idempotent: bool = False) -> Result:
        started = time.perf_counter()
        method, channel, codec, request = await self._find(call)
        limit = min(timeout, self.config.timeout)
        self._inflight += 1
        try:
            if method.streams:
                streamed = channel.unary_stream(method.path, _serialize, method.response.FromString)
                replies = [reply async for reply in streamed(request, timeout=limit, metadata=self._metadata)]
                content: list[Content] = [await _json(codec, reply) for reply in replies]
                result = Result(content=content)
            else:
                unary = channel.unary_unary(method.path, _serialize, method.response.FromString)
                data = (await _json(codec, await unary(request, timeout=limit, metadata=self._metadata))).data
                result = Result(content=[Json(data)], structured_json=data)
        except grpc.aio.AioRpcError as exc:
            result = await self._failure(method, codec, exc, limit)
        except json_format.Error as exc:  # an answer the mapping cannot write (a NaN in a Struct)
            result = Result.failure(ErrorInfo("function_error", f"{method.path} answered: {exc}"))
        finally:
            self._inflight -= 1
        result.duration_ms = (time.perf_counter() - started) * 1000
        result.request_id = call.request_id
        return result

    async def stream(self, call: Call, timeout: float) -> AsyncIterator[list[Content] | Result]:
        method, channel, codec, request = await self._find(call)
        if not method.streams:
            yield await self.invoke(call, timeout)
            return
        started = time.perf_counter()
        limit = min(timeout, self.config.timeout)
        stub = channel.unary_stream(method.path, _serialize, method.response.FromString)
        self._inflight += 1
        try:
            async for reply in stub(request, timeout=limit, metadata=self._metadata):
                yield [await _json(codec, reply)]
            result = Result()
        except grpc.aio.AioRpcError as exc:
            result = await self._failure(method, codec, exc, limit)
        except json_format.Error as exc:
            result = Result.failure(ErrorInfo("function_error", f"{method.path} answered: {exc}"))
        finally:
            self._inflight -= 1
        result.duration_ms = (time.perf_counter() - started) * 1000
        result.request_id = call.request_id
        yield result

    async def _failure(
        self, method: Method, codec: MessageCodec, exc: grpc.aio.AioRpcError, limit: float
    ) -> Result:
        code = exc.code()
        details = exc.details() or ""
        rich = status_details(exc.trailing_metadata())
        if rich:
            # google.rpc.Status details (BadRequest, ErrorInfo...), as JSON, for a model to act on.
            try:
                written = json.dumps(await codec.write_all(rich), separators=(",", ":"))
                details = f"{details}; details: {written}"
            except json_format.Error:
                pass  # details the mapping cannot write: the status alone
        if code is grpc.StatusCode.DEADLINE_EXCEEDED:
            raise FunctionTimeout(f"{method.path} did not answer within {limit:g} s") from None
        if code in _UNAVAILABLE:
            raise Unavailable(f"runtime {self.name!r}: {method.path}: {code.name}: {details}") from None
        if code is grpc.StatusCode.INVALID_ARGUMENT:
            raise InvalidArguments(f"{method.spec.qualified_name}: {details}", ()) from None
        return Result.failure(ErrorInfo("function_error", f"{method.path} answered {code.name}: {details}"))


def _methods(
    found: list[MethodDescriptor], namespace: str, include: tuple[str, ...], exclude: tuple[str, ...]
) -> list[Method]:
    limit = name_limit(namespace)
    kept = []
    for m in found:
        if not selected(f"{m.containing_service.full_name}/{m.name}", include, exclude):
            continue
        if m.client_streaming:
            kind = "bidi-streaming" if m.server_streaming else "client-streaming"
            log.info(
                "runtime %r: gRPC method %s/%s is %s: not a function",
                namespace,
                m.containing_service.full_name,
                m.name,
                kind,
                extra={"runtime": namespace},
            )
            continue
        kept.append(m)
    taken: set[str] = set()
    methods = []
    for m in kept:
        path = f"/{m.containing_service.full_name}/{m.name}"
        streams = bool(m.server_streaming)
        deprecated = "Deprecated. " if m.GetOptions().deprecated else ""
        spec = FunctionSpec(
            name=function_name(_raw_name(m, kept), limit, taken, prefix="op"),
            description=(
                f"{deprecated}gRPC {'server-streaming ' if streams else ''}method {path[1:]}: takes a "
                f"{m.input_type.full_name}, answers {'a stream of ' if streams else ''}"
                f"{m.output_type.full_name}."
            ),
            input_schema=request_schema(m.input_type),
            namespace=namespace,
            output_schema=None if streams else message_schema(m.output_type),
            streaming=streams,
        )
        response = message_factory.GetMessageClass(m.output_type)
        methods.append(Method(spec, path, m.input_type, response, streams))
    return methods


def _raw_name(method: MethodDescriptor, kept: list[MethodDescriptor]) -> str:
    """The method's own name; `Service_Method` when another service has a method of that name;
    `package_Service_Method` when that service's name is shared too."""
    same = [m for m in kept if m.name == method.name]
    if len(same) == 1:
        return method.name
    service = method.containing_service
    if sum(m.containing_service.name == service.name for m in same) == 1:
        return f"{service.name}_{method.name}"
    return f"{service.full_name}_{method.name}"


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


async def _json(codec: MessageCodec, message: Message) -> Json:
    value = await codec.write(message)
    return Json(json.dumps(value, separators=(",", ":")).encode())
