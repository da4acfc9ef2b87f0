"""TLS to a `grpc_reflection` runtime's server: `tls = true` (the system's roots), or a table of
files (a private CA, a client certificate for mutual TLS, the name the certificate carries).

Files, not values: a key is a secret, and files are how secrets are mounted (Kubernetes Secret
volumes); they are read each time the runtime starts, so a reload picks up rotated certificates.
Relative paths are from the config file's directory.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator

#: The target prefix that asks for TLS ("grpcs://billing.internal:443"), and the one that says
#: plaintext; neither is a gRPC name resolver's scheme, so they are taken off before dialing.
TLS_SCHEME = "grpcs://"
PLAINTEXT_SCHEME = "grpc://"


class GrpcTls(BaseModel):
    """TLS settings for a gRPC server; unset fields take gRPC's defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: PEM file of the certificates that may sign the server's; unset: the system's roots.
    ca_file: str | None = None
    #: PEM file of the gateway's own certificate (chain), for servers that ask for one (mTLS).
    cert_file: str | None = None
    #: PEM file of that certificate's private key.
    key_file: str | None = None
    #: The name the server's certificate must carry, when it is not the target's host (an IP
    #: address, a load balancer's name); also the `:authority` sent.
    server_name: str | None = None

    @model_validator(mode="after")
    def _pair(self) -> GrpcTls:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("tls: give `cert_file` and `key_file` together (the client's certificate)")
        return self


def grpc_target(target: str) -> str:
    """`target` as gRPC dials it: without a `grpcs://`/`grpc://` prefix."""
    for scheme in (TLS_SCHEME, PLAINTEXT_SCHEME):
        if target.startswith(scheme):
            return target[len(scheme) :]
    return target


def grpc_tls(target: str, tls: bool | GrpcTls) -> GrpcTls | None:
    """The TLS settings for `target` (None: plaintext): `tls`, or the defaults when the target
    starts with `grpcs://`."""
    if isinstance(tls, GrpcTls):
        return tls
    return GrpcTls() if tls or target.startswith(TLS_SCHEME) else None


__all__ = ["PLAINTEXT_SCHEME", "TLS_SCHEME", "GrpcTls", "grpc_target", "grpc_tls"]
