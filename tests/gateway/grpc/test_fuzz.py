"""Fuzzing the gRPC Mesh service with malformed messages: each gets a status, the gateway keeps serving.

Raw bytes go to every Mesh method over a plain channel (no serializer): well-formed
messages with generated field values (unknown functions, arguments that are not JSON,
odd `k`s), which must get a toolmesh status (never UNKNOWN or INTERNAL, no traceback);
and random bytes, messages cut short or followed by junk, which must get a status
without hanging, and INVALID_ARGUMENT when they do not parse (grpc.aio itself would
answer UNKNOWN and log a traceback: gateway/grpc/decoding.py).
Bounded like tests/gateway/http/test_fuzz.py (TOOLMESH_FUZZ_EXAMPLES raises it).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.gateway.conftest import gateway_in_thread, runtime
from toolmesh.config import RouterConfig
from toolmesh.gateway.server import Gateway
from toolmesh.v1 import function_pb2, invoke_pb2, mesh_pb2

EXAMPLES = int(os.environ.get("TOOLMESH_FUZZ_EXAMPLES", "15"))
FUZZ_SETTINGS = settings(
    max_examples=8 * EXAMPLES,
    deadline=None,
    derandomize="TOOLMESH_FUZZ_EXAMPLES" not in os.environ,
    database=None,
    suppress_health_check=list(HealthCheck),
)
SERVICE = "/toolmesh.v1.Mesh/"
UNARY = ("ListFunctions", "Invoke", "Route")
STREAM = ("InvokeStream",)
FUNCTIONS = ("add", "shout", "pick", "norm", "maps.merge", "maps__merge")

#: Answers seen, by method and status, reported by the last test of the module.
OUTCOMES: Counter[tuple[str, str]] = Counter()


@pytest.fixture(scope="module")
def live(router_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    router = RouterConfig(cache_dir=router_cache, data_dir=tmp_path_factory.mktemp("router-data"))
    with gateway_in_thread(runtime("tools", "fuzz_tools"), router=router) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def channel(live: Gateway) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(f"127.0.0.1:{live.grpc_port}") as opened:
        yield opened


def _raw(value: bytes) -> bytes:
    return value


def send(channel: grpc.Channel, method: str, payload: bytes) -> tuple[grpc.StatusCode, str]:
    """Send `payload` as the request of `method`; the status and details it ends with."""
    try:
        if method in STREAM:
            stream = channel.unary_stream(
                SERVICE + method, request_serializer=_raw, response_deserializer=None
            )
            for _ in stream(payload, timeout=30):
                pass
        else:
            channel.unary_unary(SERVICE + method, request_serializer=_raw, response_deserializer=None)(
                payload, timeout=30
            )
    except grpc.RpcError as error:
        # What a sync channel raises is also the finished call, with its status.
        finished = cast(grpc.Call, error)
        return finished.code(), finished.details() or ""
    return grpc.StatusCode.OK, ""


def check(method: str, payload: bytes, code: grpc.StatusCode, details: str) -> None:
    OUTCOMES[(method, code.name)] += 1
    where = f"{method} with {payload[:80]!r}: {code.name} {details[:300]!r}"
    assert code is not grpc.StatusCode.UNKNOWN, where
    assert "Traceback" not in details, where


def _invoke(function: str, arguments: bytes, session: str) -> bytes:
    message = invoke_pb2.InvokeRequest(function=function, arguments=arguments, session_id=session)
    return message.SerializeToString()


JSON_ARGUMENTS = st.dictionaries(
    st.sampled_from(["a", "b", "text", "times", "mode", "point", "left", "right"]),
    st.none() | st.booleans() | st.integers() | st.text(max_size=10) | st.lists(st.integers(), max_size=3),
    max_size=4,
).map(lambda value: json.dumps(value).encode())
INVOKE = st.builds(
    _invoke,
    st.sampled_from(FUNCTIONS) | st.text(max_size=30),
    JSON_ARGUMENTS | st.binary(max_size=40),
    st.text(max_size=10),
)
ROUTE = st.builds(
    lambda prompt, k, session: mesh_pb2.RouteRequest(
        prompt=prompt, k=k, session_id=session
    ).SerializeToString(),
    st.text(max_size=60),
    st.integers(-(2**31), 2**31 - 1),
    st.text(max_size=10),
)
LIST = st.builds(
    lambda namespace: function_pb2.ListFunctionsRequest(namespace=namespace).SerializeToString(),
    st.sampled_from(["", "maps"]) | st.text(max_size=20),
)
WELL_FORMED: dict[str, st.SearchStrategy[bytes]] = {
    "ListFunctions": LIST,
    "Invoke": INVOKE,
    "InvokeStream": INVOKE,
    "Route": ROUTE,
}


def _cut(message: bytes, at: float) -> bytes:
    return message[: int(len(message) * at)]


METHOD = st.sampled_from(UNARY + STREAM)


@FUZZ_SETTINGS
@given(method=METHOD, data=st.data())
def test_well_formed_messages_get_a_toolmesh_status(
    channel: grpc.Channel, method: str, data: st.DataObject
) -> None:
    """Messages that parse, with generated values: unknown functions, arguments that are not
    JSON or break the schema, odd `k`s. Each is toolmesh's to answer, never UNKNOWN/INTERNAL."""
    payload = data.draw(WELL_FORMED[method])
    code, details = send(channel, method, payload)
    check(method, payload, code, details)
    assert code is not grpc.StatusCode.INTERNAL, f"{method} with {payload[:80]!r}: {details[:300]!r}"


@FUZZ_SETTINGS
@given(method=METHOD, data=st.data())
def test_garbage_bytes_get_a_status_and_no_hang(
    channel: grpc.Channel, method: str, data: st.DataObject
) -> None:
    """Random bytes, messages cut short, messages with junk after them: every call ends with
    a status within its deadline, never UNKNOWN or INTERNAL."""
    well_formed = WELL_FORMED[method]
    payload = data.draw(
        st.binary(max_size=200)
        | st.builds(_cut, well_formed, st.floats(0.0, 0.99))
        | st.builds(lambda message, junk: message + junk, well_formed, st.binary(min_size=1, max_size=20))
    )
    code, details = send(channel, method, payload)
    check(method, payload, code, details)
    assert code is not grpc.StatusCode.DEADLINE_EXCEEDED, f"{method} with {payload[:80]!r} hung"


@pytest.mark.parametrize("method", UNARY + STREAM)
def test_undecodable_bytes_are_invalid_argument(channel: grpc.Channel, method: str) -> None:
    # Found by this fuzz test: grpc.aio answered UNKNOWN and logged a traceback.
    code, details = send(channel, method, b"\x00")
    assert code is grpc.StatusCode.INVALID_ARGUMENT, f"{code.name} {details!r}"
    assert "is not a valid message" in details


def test_the_gateway_still_serves_after_fuzzing(
    channel: grpc.Channel, capsys: pytest.CaptureFixture[str]
) -> None:
    code, details = send(channel, "Invoke", _invoke("add", b'{"a": 2, "b": 40}', ""))
    assert code is grpc.StatusCode.OK, details
    if not OUTCOMES:
        pytest.skip("the fuzz test was deselected; nothing to count")
    with capsys.disabled():
        print(f"\ngRPC Mesh fuzz: {sum(OUTCOMES.values())} calls")
        for (method, status), count in sorted(OUTCOMES.items()):
            print(f"  {count:6}  {method:14} {status}")
