"""A `grpc_reflection` runtime's messages to and from protobuf's JSON mapping
(`google.protobuf.json_format`, the reference), with the pool reflection filled.

Output is the canonical mapping (lowerCamelCase or `json_name` names, 64-bit integers as strings,
enums by name); input is read as json_format reads it (JSON or proto field names, enum names or
numbers, integers as numbers or strings). An `Any` names its type by URL: one the pool lacks is
asked of the server's reflection once (servers reflect every type they link, error details
among them); one the server does not know either is written `{"@type": url, "value": base64}`
(its bytes), and refused on input.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from google.protobuf import (
    any_pb2,
    descriptor_pb2,
    descriptor_pool,
    json_format,
    message_factory,
    wrappers_pb2,
)
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from toolmesh.gateway.sources.grpc_reflection.reflection_client import add_files
from toolmesh.gateway.sources.grpc_reflection.well_known_schemas import (
    OBJECT_WELL_KNOWN,
    WELL_KNOWN,
    WRAPPED_REQUEST_FIELD,
)

#: Asks the server for the files that define a symbol, but for those already had.
Lookup = Callable[[str, set[str]], Awaitable[dict[str, descriptor_pb2.FileDescriptorProto]]]

_ANY = "google.protobuf.Any"
_NOT_FOUND = "Can not find message descriptor by type_url: "
#: Appended to an undecodable Any's URL while it is written as a BytesValue, then taken off.
_UNDECODED = "/toolmesh-undecoded/google.protobuf.BytesValue"
#: How many unknown types one message may make us look up: each is a reflection round trip.
_LOOKUPS = 8
#: How many names the server did not know are remembered (and not asked again).
_UNKNOWN_KEPT = 1024


class MessageCodec:
    """JSON to and from the messages of one server's methods."""

    def __init__(self, pool: descriptor_pool.DescriptorPool, files: set[str], lookup: Lookup) -> None:
        self._pool = pool
        self._files = files
        self._lookup = lookup
        #: Type names the server was asked for and does not know: not asked again.
        self._unknown: set[str] = set()

    async def parse(self, descriptor: Descriptor, arguments: dict[str, Any]) -> Message:
        """`arguments` as a `descriptor` message; json_format.ParseError naming what is wrong."""
        value: Any = arguments
        if descriptor.full_name in WELL_KNOWN and descriptor.full_name not in OBJECT_WELL_KNOWN:
            if set(arguments) != {WRAPPED_REQUEST_FIELD}:
                raise json_format.ParseError(f'a {descriptor.full_name} is sent as {{"value": ...}}')
            value = arguments[WRAPPED_REQUEST_FIELD]
        for _ in range(_LOOKUPS):
            message = message_factory.GetMessageClass(descriptor)()
            try:
                json_format.ParseDict(value, message, descriptor_pool=self._pool)
                break
            except json_format.ParseError as exc:
                if not await self._resolved(str(exc)):
                    raise
        else:
            raise json_format.ParseError("too many Any types the gateway did not know")
        if not message.IsInitialized():
            missing = ", ".join(message.FindInitializationErrors())  # type: ignore[attr-defined]
            raise json_format.ParseError(f"required fields missing: {missing}")
        return message

    async def write(self, message: Message) -> Any:
        """`message` in the JSON mapping."""
        for _ in range(_LOOKUPS):
            try:
                return json_format.MessageToDict(message, descriptor_pool=self._pool)
            except TypeError as exc:
                if not await self._resolved(str(exc)):
                    break
        copy = type(message)()
        copy.CopyFrom(message)
        _mark_undecodable(copy, self._pool)
        return _unmark(json_format.MessageToDict(copy, descriptor_pool=self._pool))

    async def write_all(self, messages: Iterable[any_pb2.Any]) -> list[Any]:
        """Each of `messages` (Anys, e.g. a status's details) in the JSON mapping."""
        return [await self.write(message) for message in messages]

    async def _resolved(self, error: str) -> bool:
        """Whether the type an error says the pool lacks is in it now (asked of the server)."""
        at = error.find(_NOT_FOUND)
        if at < 0:
            return False
        name = error[at + len(_NOT_FOUND) :].split()[0].rstrip(".").rpartition("/")[2]
        # Past _UNKNOWN_KEPT names, callers' made-up types cost no more round trips.
        if not name or name in self._unknown or len(self._unknown) >= _UNKNOWN_KEPT:
            return False
        files = await self._lookup(name, self._files)
        try:
            add_files(self._pool, files, self._files)
            self._pool.FindMessageTypeByName(name)
        except (KeyError, TypeError, ValueError):
            self._unknown.add(name)
            return False
        return True


def _mark_undecodable(message: Any, pool: descriptor_pool.DescriptorPool) -> bool:
    """Turn each Any in `message` whose type `pool` lacks into a BytesValue of its bytes, its
    URL marked (_unmark takes the mark off the JSON). Whether anything changed. (The Any class
    is the pool's, not any_pb2's: hence `message: Any`.)"""
    if message.DESCRIPTOR.full_name == _ANY:
        try:
            descriptor = pool.FindMessageTypeByName(message.type_url.rpartition("/")[2])
        except KeyError:
            message.value = wrappers_pb2.BytesValue(value=message.value).SerializeToString()
            message.type_url += _UNDECODED
            return True
        inner = message_factory.GetMessageClass(descriptor).FromString(message.value)
        if not _mark_undecodable(inner, pool):
            return False
        message.value = inner.SerializeToString()
        return True
    changed = False
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is None:
                continue
            items = list(value.values())
        elif field.is_repeated:
            items = list(value)
        else:
            items = [value]
        for item in items:
            changed = _mark_undecodable(item, pool) or changed
    return changed


def _unmark(value: Any) -> Any:
    if isinstance(value, list):
        return [_unmark(item) for item in value]
    if not isinstance(value, dict):
        return value
    url = value.get("@type")
    if isinstance(url, str) and url.endswith(_UNDECODED):
        return {"@type": url.removesuffix(_UNDECODED), "value": value.get("value", "")}
    return {key: _unmark(item) for key, item in value.items()}
