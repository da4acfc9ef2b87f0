"""TLS to a `grpc_reflection` runtime's server: `tls = true` (the system's roots), or a table of
files or environment variables (a private CA, a client certificate for mutual TLS, the name the
certificate carries).

Files are read each time the runtime starts, so a reload picks up rotated certificates; relative
paths are from the config file's directory. Variables (`ca = { env = "BILLING_CA" }`, holding the
PEM text) are read once at start-up, as headers' `{ env = ... }` values are: on Kubernetes a
Secret's keys become the gateway's variables (`toolmesh deploy render` passes them from the
`toolmesh-keys` Secret), with no volume to mount.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

#: The target prefix that asks for TLS ("grpcs://billing.internal:443"), and the one that says
#: plaintext; neither is a gRPC name resolver's scheme, so they are taken off before dialing.
TLS_SCHEME = "grpcs://"
PLAINTEXT_SCHEME = "grpc://"


class PemFromEnv(BaseModel):
    """PEM text in one of the gateway's environment variables: `{ env = "BILLING_CA" }`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The variable that holds the PEM text (on Kubernetes, a key of the `toolmesh-keys` Secret).
    env: str = Field(min_length=1)
    #: The variable's value once the gateway read its environment (`read`): no config field, so
    #: never written in a config file nor rendered back into one.
    _pem: str | None = PrivateAttr(default=None)

    @property
    def pem(self) -> str | None:
        return self._pem

    def read(self, environ: Mapping[str, str], what: str) -> PemFromEnv:
        """This with its variable's value; ValueError naming `what` when it is unset or holds no PEM."""
        value = environ.get(self.env)
        if not value:
            raise ValueError(f"tls: {what}: environment variable {self.env} is not set")
        if "-----BEGIN " not in value:
            raise ValueError(
                f"tls: {what}: environment variable {self.env} holds no PEM block (-----BEGIN ...)"
            )
        read = self.model_copy()
        read._pem = value
        return read


class GrpcTls(BaseModel):
    """TLS settings for a gRPC server; unset fields take gRPC's defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: PEM file of the certificates that may sign the server's; unset: the system's roots.
    ca_file: str | None = None
    #: PEM file of the gateway's own certificate (chain), for servers that ask for one (mTLS).
    cert_file: str | None = None
    #: PEM file of that certificate's private key.
    key_file: str | None = None
    #: `ca_file`'s certificates as PEM text in an environment variable (`{ env = "BILLING_CA" }`),
    #: read at start-up; give one of the two.
    ca: PemFromEnv | None = None
    #: `cert_file`'s certificate (chain) as PEM text in an environment variable.
    cert: PemFromEnv | None = None
    #: `key_file`'s private key as PEM text in an environment variable.
    key: PemFromEnv | None = None
    #: The name the server's certificate must carry, when it is not the target's host (an IP
    #: address, a load balancer's name); also the `:authority` sent.
    server_name: str | None = None

    @model_validator(mode="after")
    def _pair(self) -> GrpcTls:
        for name in ("ca", "cert", "key"):
            if getattr(self, name) is not None and getattr(self, f"{name}_file") is not None:
                raise ValueError(f"tls: give `{name}` or `{name}_file`, not both")
        if (self.cert_file is None and self.cert is None) != (self.key_file is None and self.key is None):
            raise ValueError(
                "tls: give the client's certificate and its key together "
                "(`cert_file` or `cert`, with `key_file` or `key`)"
            )
        return self

    def variables(self) -> list[str]:
        """The environment variables this reads (its `{ env = ... }` values)."""
        return [pem.env for pem in (self.ca, self.cert, self.key) if pem is not None]

    def read(self, environ: Mapping[str, str]) -> GrpcTls:
        """This with its `{ env = ... }` values read from `environ` (ValueError when one is unset)."""
        update = {
            name: pem.read(environ, name)
            for name, pem in (("ca", self.ca), ("cert", self.cert), ("key", self.key))
            if pem is not None
        }
        return self.model_copy(update=update) if update else self


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


__all__ = ["PLAINTEXT_SCHEME", "TLS_SCHEME", "GrpcTls", "PemFromEnv", "grpc_target", "grpc_tls"]
