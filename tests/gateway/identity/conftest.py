"""A real OpenID issuer on loopback for the token tests: OpenID Connect metadata and a JWKS
served over HTTP from a thread, with RSA keys made by `cryptography`, and tokens it signs."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

#: The resource identifier the test gateways are configured with ([oauth] audience).
AUDIENCE = "http://127.0.0.1/toolmesh"


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class Issuer:
    """The issuer's state; the HTTP server reads it on every request."""

    url: str = ""
    keys: dict[str, rsa.RSAPrivateKey] = field(default_factory=dict)
    jwks_requests: int = 0
    rotations: int = 0

    def jwks(self) -> dict[str, Any]:
        found = []
        for kid, key in self.keys.items():
            jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
            found.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": found}

    def rotate(self) -> str:
        self.rotations += 1
        kid = f"key-{self.rotations}"
        self.keys[kid] = new_key()
        return kid

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.url,
            "sub": "alice",
            "aud": AUDIENCE,
            "iat": now,
            "exp": now + 300,
            "scope": "tools.read",
            "client_id": "test-client",
        }
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def token(
        self,
        kid: str | None = None,
        key: rsa.RSAPrivateKey | None = None,
        headers: dict[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        """A token signed with the issuer's key `kid` (default: the newest), or with `key`."""
        kid = kid or list(self.keys)[-1]
        signer = key or self.keys[kid]
        return jwt.encode(
            self.claims(**claims), signer, algorithm="RS256", headers={"kid": kid, **(headers or {})}
        )

    def unsigned(self, **claims: Any) -> str:
        """`alg: none`: a token anyone can make."""
        header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
        return f"{header}.{_b64(json.dumps(self.claims(**claims)).encode())}."

    def hs256_with_public_key(self, **claims: Any) -> str:
        """HS256 keyed with the issuer's public key (PEM), which every client can read."""
        kid = list(self.keys)[-1]
        pem = (
            self.keys[kid]
            .public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
        body = _b64(json.dumps(self.claims(**claims)).encode())
        signature = hmac.new(pem, f"{header}.{body}".encode(), hashlib.sha256).digest()
        return f"{header}.{body}.{_b64(signature)}"


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    state = Issuer()
    state.rotate()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/.well-known/openid-configuration":
                document: dict[str, Any] = {
                    "issuer": state.url,
                    "jwks_uri": f"{state.url}/jwks",
                    "token_endpoint": f"{state.url}/token",
                }
            elif self.path == "/jwks":
                state.jwks_requests += 1
                document = state.jwks()
            else:
                self.send_error(404)
                return
            body = json.dumps(document).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
