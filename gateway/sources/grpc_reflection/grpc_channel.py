"""The channel to a `grpc_reflection` runtime's server, plaintext or TLS (toolmesh/config/tls_config.py),
and waiting for it to connect, with the cause when it cannot: TLS that fails (an unknown CA, a
wrong name, a certificate the server refuses) is told at once, not after the start-up timeout."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc

from toolmesh.config.tls_config import GrpcTls, PemFromEnv, grpc_target

#: A server that restarts is found again within a second or two, not after gRPC's default
#: backoff (up to two minutes), during which every call fails at once.
CHANNEL_OPTIONS = (("grpc.initial_reconnect_backoff_ms", 200), ("grpc.max_reconnect_backoff_ms", 2000))
#: A method no server has: called once when the channel fails, for the cause in its status.
_PROBE = "/toolmesh.Probe/Connect"
#: Words of a failed connection's status that mean TLS failed, which retrying will not mend.
_TLS_FAILED = ("ssl", "tls", "handshake", "certificate", "verification")


class ChannelError(Exception):
    """The channel could not be made or did not connect: its message says why."""


def open_channel(target: str, tls: GrpcTls | None, directory: Path | None = None) -> grpc.aio.Channel:
    """A channel to `target`; with `tls`, its files read now (relative to `directory`), its
    `{ env = ... }` values as the gateway read them at start-up."""
    address = grpc_target(target)
    if tls is None:
        return grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_material(tls.ca, "ca") or _read(tls.ca_file, directory),
        private_key=_material(tls.key, "key") or _read(tls.key_file, directory),
        certificate_chain=_material(tls.cert, "cert") or _read(tls.cert_file, directory),
    )
    options: list[tuple[str, int | str]] = list(CHANNEL_OPTIONS)
    if tls.server_name is not None:
        options += [("grpc.ssl_target_name_override", tls.server_name)]
        options += [("grpc.default_authority", tls.server_name)]
    return grpc.aio.secure_channel(address, credentials, options=options)


def _material(pem: PemFromEnv | None, name: str) -> bytes | None:
    """The PEM text of `{ env = ... }`, which the gateway read from its environment at start-up."""
    if pem is None:
        return None
    if pem.pem is None:  # a config that did not go through the gateway's environment
        raise ChannelError(f"TLS `{name}`: environment variable {pem.env} was not read")
    return pem.pem.encode()


def _read(path: str | None, directory: Path | None) -> bytes | None:
    if path is None:
        return None
    file = Path(path).expanduser()
    if directory is not None and not file.is_absolute():
        file = directory / file
    try:
        return file.read_bytes()
    except OSError as exc:
        raise ChannelError(f"TLS file {str(file)!r}: {exc.strerror or exc}") from None


async def connected(channel: grpc.aio.Channel, timeout: float) -> None:
    """Return once `channel` is connected. Raise ChannelError when TLS fails (at once) or it is
    not connected within `timeout` (the last cause named); a refused connection is retried."""
    cause = ""
    try:
        async with asyncio.timeout(timeout):
            while True:
                state = channel.get_state(try_to_connect=True)
                if state is grpc.ChannelConnectivity.READY:
                    return
                if state is grpc.ChannelConnectivity.TRANSIENT_FAILURE:
                    cause = await _cause(channel)
                    if any(word in cause.lower() for word in _TLS_FAILED):
                        raise ChannelError(f"TLS failed: {cause}")
                await channel.wait_for_state_change(state)
    except TimeoutError:
        raise ChannelError(f"not reachable within {timeout:g} s" + (f" ({cause})" if cause else "")) from None


async def _cause(channel: grpc.aio.Channel) -> str:
    """Why the channel failed, as the status of a call that does not wait for it says."""
    probe = channel.unary_unary(_PROBE, request_serializer=bytes, response_deserializer=bytes)
    try:
        await probe(b"", timeout=5, wait_for_ready=False)
    except grpc.aio.AioRpcError as exc:
        return exc.details() or exc.code().name
    return ""
