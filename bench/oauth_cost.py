"""What a bearer token costs a call over an API key: CPU per `Authenticator.authenticate`.

    .venv/bin/python bench/oauth_cost.py [--calls N] [--rounds R]

One Authenticator with an API key and `[oauth]` (an issuer on loopback serving its JWKS, fetched
once at start, as a gateway does), side by side in one run:

    API key               `Bearer <key>`: a SHA-256 and a dict lookup (the baseline)
    token, RS256 (seen)   a token the gateway validated before: answered from the token cache
                          until it expires (a client sends the same token on every call)
    token, ES256 (seen)   the same with an EC key
    token, RS256 (new)    a token never seen: header, signature (RSA-2048), claims, audience
    token, ES256 (new)    the same with a P-256 key

CPU per call is `time.process_time` over N calls, the median of R rounds; `over key` subtracts
the API key's. The target: at most 50 µs over a key for a token with a cached JWKS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from toolmesh.config import KeyConfig, hash_key
from toolmesh.config.oauth_config import OAuthConfig
from toolmesh.gateway.core.auth import Authenticator
from toolmesh.gateway.identity.protected_resource import ProtectedResource
from toolmesh.gateway.identity.tokens import TokenValidator

AUDIENCE = "https://tools.example.com"


def serve(documents: dict[str, Any]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path not in documents:
                self.send_error(404)
                return
            body = json.dumps(documents[self.path]).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def cpu_per_call(call: Callable[[str], object], headers: list[str]) -> float:
    started = time.process_time()
    for header in headers:
        call(header)
    return (time.process_time() - started) / len(headers) * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    documents: dict[str, Any] = {}
    server = serve(documents)
    issuer = f"http://127.0.0.1:{server.server_address[1]}"
    documents["/.well-known/openid-configuration"] = {"issuer": issuer, "jwks_uri": f"{issuer}/jwks"}
    documents["/jwks"] = {
        "keys": [
            {**RSAAlgorithm.to_jwk(rsa_key.public_key(), as_dict=True), "kid": "rsa", "alg": "RS256"},
            {**ECAlgorithm.to_jwk(ec_key.public_key(), as_dict=True), "kid": "ec", "alg": "ES256"},
        ]
    }
    config = OAuthConfig(issuer=issuer, audience=AUDIENCE, scopes={"tools.read": ("get_*", "list_*")})
    tokens = TokenValidator(ProtectedResource(config, AUDIENCE))
    await tokens.start()
    key = KeyConfig(name="ci", key_hash=hash_key("ci-key"), scopes=("get_*", "list_*"))
    auth = Authenticator({key.key_hash or "": key}, tokens=tokens)

    def token(n: int, algorithm: str) -> str:
        now = int(time.time())
        claims = {"iss": issuer, "sub": f"user-{n}", "aud": AUDIENCE, "iat": now, "exp": now + 3600}
        claims |= {"scope": "tools.read openid", "client_id": "bench"}
        signer, kid = (rsa_key, "rsa") if algorithm == "RS256" else (ec_key, "ec")
        return "Bearer " + jwt.encode(claims, signer, algorithm=algorithm, headers={"kid": kid})

    def fresh(algorithm: str) -> list[str]:
        return [token(n, algorithm) for n in range(args.calls)]

    seen = {alg: token(0, alg) for alg in ("RS256", "ES256")}
    for header in seen.values():
        auth.authenticate(header)
    targets: dict[str, Callable[[], list[str]]] = {
        "API key": lambda: ["Bearer ci-key"] * args.calls,
        "token, RS256 (seen)": lambda: [seen["RS256"]] * args.calls,
        "token, ES256 (seen)": lambda: [seen["ES256"]] * args.calls,
        "token, RS256 (new)": lambda: fresh("RS256"),
        "token, ES256 (new)": lambda: fresh("ES256"),
    }
    results: dict[str, list[float]] = {name: [] for name in targets}
    for _ in range(args.rounds):
        for name, make in targets.items():
            headers = make()
            if "new" in name:
                tokens._seen.clear()  # never seen: the signature is checked for each
            results[name].append(cpu_per_call(auth.authenticate, headers))
    await tokens.aclose()
    server.shutdown()

    baseline = statistics.median(results["API key"])
    print(f"{args.calls} calls per round, median of {args.rounds} rounds; CPU µs per authenticate()\n")
    print("| caller | µs/call | over key µs |")
    print("|---|---|---|")
    for name, values in results.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.1f} | {median - baseline:+.1f} |")


if __name__ == "__main__":
    asyncio.run(main())
