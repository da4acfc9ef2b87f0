"""A gRPC server's services and their descriptors, read by server reflection (v1alpha, which
grpcio and most servers serve, or v1) over the runtime's own channel."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import grpc
from google.protobuf import (  # noqa: F401  (the well-known files, in the default pool for _known)
    any_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    struct_pb2,
    timestamp_pb2,
    wrappers_pb2,
)
from google.protobuf.descriptor import ServiceDescriptor
from grpc_reflection.v1alpha import reflection_pb2

#: The reflection method, v1alpha first (grpcio serves only it), then v1.
REFLECTION_PATHS = (
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
)
#: Services a server runs for its operators, not its callers: reflection (every reflecting server
#: has it), health checks (no use to a model) and channelz (its connections' internals, which no
#: caller of the mesh should read). None of them become functions.
INFRASTRUCTURE_SERVICES = frozenset(
    {
        "grpc.reflection.v1alpha.ServerReflection",
        "grpc.reflection.v1.ServerReflection",
        "grpc.health.v1.Health",
        "grpc.channelz.v1.Channelz",
    }
)
#: The well-known types' files, in every pool: an Any may hold one the services never import.
WELL_KNOWN_FILES = tuple(
    f"google/protobuf/{name}.proto"
    for name in ("any", "duration", "empty", "field_mask", "struct", "timestamp", "wrappers")
)


class ReflectionError(Exception):
    """The server's reflection could not be read: its message says why."""


async def read_services(
    channel: grpc.aio.Channel, metadata: Sequence[tuple[str, str]], timeout: float
) -> tuple[descriptor_pool.DescriptorPool, list[ServiceDescriptor], set[str]]:
    """A pool holding the files of every service the server reflects (and the well-known
    types'), those services, and the names of the files in the pool: asked of reflection v1alpha
    (what grpcio serves), else of v1 (same messages, new name)."""
    names, files = await _ask(channel, metadata, timeout, None, set())
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    add_files(
        pool, {**files, **{name: _known(name) for name in WELL_KNOWN_FILES if name not in files}}, added
    )
    return pool, [pool.FindServiceByName(name) for name in names], added


async def read_symbol(
    channel: grpc.aio.Channel,
    metadata: Sequence[tuple[str, str]],
    timeout: float,
    symbol: str,
    have: set[str],
) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """The files that define `symbol` (a message's full name) and those they import, but for
    the files named in `have`; empty when the server does not know the symbol."""
    try:
        return (await _ask(channel, metadata, timeout, symbol, have))[1]
    except ReflectionError:
        return {}


def add_files(
    pool: descriptor_pool.DescriptorPool,
    files: Mapping[str, descriptor_pb2.FileDescriptorProto | None],
    added: set[str],
) -> None:
    """Add `files` to `pool`, each after the files it imports, but for those in `added`."""

    def add(name: str) -> None:
        proto = files.get(name)
        if name in added or proto is None:
            return
        added.add(name)
        for dependency in proto.dependency:
            add(dependency)
        pool.Add(proto)

    for name in files:
        add(name)


async def _ask(
    channel: grpc.aio.Channel,
    metadata: Sequence[tuple[str, str]],
    timeout: float,
    symbol: str | None,
    have: set[str],
) -> tuple[list[str], dict[str, descriptor_pb2.FileDescriptorProto]]:
    try:
        return await _read_files(channel, REFLECTION_PATHS[0], metadata, timeout, symbol, have)
    except grpc.aio.AioRpcError as exc:
        if exc.code() is not grpc.StatusCode.UNIMPLEMENTED:
            raise ReflectionError(f"reflection failed: {exc.code().name}: {exc.details()}") from None
        try:
            return await _read_files(channel, REFLECTION_PATHS[1], metadata, timeout, symbol, have)
        except grpc.aio.AioRpcError as again:
            raise ReflectionError(f"reflection failed: {again.code().name}: {again.details()}") from None


async def _read_files(
    channel: grpc.aio.Channel,
    path: str,
    metadata: Sequence[tuple[str, str]],
    timeout: float,
    symbol: str | None,
    have: set[str],
) -> tuple[list[str], dict[str, descriptor_pb2.FileDescriptorProto]]:
    """The services the server lists and the files that define them (with their imports); or
    with `symbol`, the files that define it. Files named in `have` are not asked for again."""
    call = channel.stream_stream(
        path,
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )(None, metadata=tuple(metadata), timeout=timeout)

    async def ask(**request: str) -> reflection_pb2.ServerReflectionResponse:
        await call.write(reflection_pb2.ServerReflectionRequest(**request))
        response = await call.read()
        if not isinstance(response, reflection_pb2.ServerReflectionResponse):
            raise ReflectionError("the server closed the reflection stream")
        if response.HasField("error_response"):
            error = response.error_response
            raise ReflectionError(f"reflection answered {error.error_code}: {error.error_message}")
        return response

    try:
        names: list[str] = []
        if symbol is None:
            listed = await ask(list_services="")
            services = listed.list_services_response.service
            names = [s.name for s in services if s.name not in INFRASTRUCTURE_SERVICES]
        files: dict[str, descriptor_pb2.FileDescriptorProto] = {}

        def keep(response: reflection_pb2.ServerReflectionResponse) -> None:
            for raw in response.file_descriptor_response.file_descriptor_proto:
                proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
                if proto.name not in have:
                    files.setdefault(proto.name, proto)

        for name in names if symbol is None else [symbol]:
            keep(await ask(file_containing_symbol=name))
        missing = [name for name in _missing(files) if name not in have]
        while missing:
            for name in missing:
                found = _known(name)
                if found is not None:
                    files[name] = found
                else:
                    keep(await ask(file_by_filename=name))
                    if name not in files:
                        raise ReflectionError(f"the server did not send {name}")
            missing = [name for name in _missing(files) if name not in have]
        await call.done_writing()
        return names, files
    except grpc.aio.AioRpcError as exc:
        # A write that races the server's refusal (UNIMPLEMENTED on a server without this
        # version) fails "INTERNAL: Internal error from Core"; the call's own status says why.
        if exc.code() is grpc.StatusCode.INTERNAL and not call.cancelled():
            code = await asyncio.wait_for(call.code(), timeout)
            if code is not grpc.StatusCode.INTERNAL:
                details = await call.details()
                raise grpc.aio.AioRpcError(
                    code, grpc.aio.Metadata(), grpc.aio.Metadata(), details, None
                ) from None
        raise
    finally:
        call.cancel()


def _missing(files: dict[str, descriptor_pb2.FileDescriptorProto]) -> list[str]:
    return sorted({d for proto in files.values() for d in proto.dependency if d not in files})


def _known(name: str) -> descriptor_pb2.FileDescriptorProto | None:
    """A well-known file (google/protobuf/timestamp.proto...) from protobuf itself."""
    if not name.startswith("google/protobuf/"):
        return None
    try:
        found = descriptor_pool.Default().FindFileByName(name)
    except KeyError:
        return None
    proto = descriptor_pb2.FileDescriptorProto()
    found.CopyToProto(proto)
    return proto
