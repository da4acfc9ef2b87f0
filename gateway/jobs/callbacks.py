"""Result callbacks: the finished job POSTed to the URL its caller gave, signed.

Each POST carries the job document (as `GET /v1/jobs/{id}` answers it) and:

    Content-Type: application/json
    Idempotency-Key: <job id>.<n>       the same on every delivery of one outcome; a job retried
                                        after it finished gets a new one for its new outcome
    X-Toolmesh-Job-Id: <job id>
    X-Toolmesh-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>

A receiver checks the signature with `verify_signature` (or the same three lines in any
language) and rejects old timestamps. Delivery is at least once: a 2xx ends it; anything
else (an error status, a refused connection, a timeout) is retried with exponential backoff
up to `[jobs] callback_attempts`. A gateway killed between the receiver's 2xx and recording
it delivers again after restart, so receivers deduplicate on `Idempotency-Key`.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import urlsplit

import httpx

from toolmesh.errors import InvalidRequest
from toolmesh.gateway.jobs.destinations import DestinationRefused, Destinations

SIGNATURE_HEADER = "X-Toolmesh-Signature"
#: Longest callback URL accepted.
MAX_URL = 2048


def check_callback_url(url: object, secret: str | None, destinations: Destinations) -> str:
    """The callback URL a caller gave, checked: absolute http(s) with a host the gateway may
    send to (see `destinations`)."""
    if not isinstance(url, str) or not url:
        raise InvalidRequest("callback_url must be a non-empty string", param="callback_url")
    if len(url) > MAX_URL or not (url.isascii() and url.isprintable()):
        raise InvalidRequest(
            f"callback_url must be at most {MAX_URL} printable ASCII characters", param="callback_url"
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as exc:
        raise InvalidRequest(f"callback_url is not a URL: {exc}", param="callback_url") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest(
            f"callback_url must be an absolute http:// or https:// URL, got {url!r}", param="callback_url"
        )
    if secret is None:
        raise InvalidRequest(
            "this gateway sends no callbacks: it has no signing secret ([jobs] callback_secret_env)",
            param="callback_url",
        )
    destinations.check_url(url)
    return url


def signature(secret: str, body: bytes, timestamp: int) -> str:
    """The `X-Toolmesh-Signature` value of `body` sent at `timestamp`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify_signature(secret: str, body: bytes, header: str, tolerance: float = 300.0) -> bool:
    """Whether `header` signs `body` with `secret`, sent within `tolerance` seconds of now."""
    fields = dict(part.partition("=")[::2] for part in header.split(","))
    try:
        timestamp = int(fields.get("t", ""))
    except ValueError:
        return False
    if abs(time.time() - timestamp) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, body, timestamp), f"t={timestamp},v1={fields.get('v1', '')}")


class CallbackSender:
    """POSTs signed callbacks; one connection pool for all of them."""

    def __init__(self, secret: str | None, timeout: float, destinations: Destinations) -> None:
        self._secret = secret
        self._destinations = destinations
        self._client = httpx.AsyncClient(timeout=timeout, follow_redirects=False)

    async def send(self, url: str, job_id: str, key: str, body: bytes) -> str | None:
        """Deliver once, with `key` as the Idempotency-Key: None on a 2xx, else why not."""
        if self._secret is None:
            return "no signing secret is configured"
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": key,
            "X-Toolmesh-Job-Id": job_id,
            SIGNATURE_HEADER: signature(self._secret, body, int(time.time())),
        }
        try:
            target = await self._destinations.target(url)
        except DestinationRefused as exc:
            return f"refused: {exc}"
        if target.host_header is not None:
            headers["Host"] = target.host_header
        extensions = {"sni_hostname": target.server_name} if target.server_name else None
        try:
            response = await self._client.post(
                target.url, content=body, headers=headers, extensions=extensions
            )
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        if 200 <= response.status_code < 300:
            return None
        return f"answered {response.status_code}"

    async def close(self) -> None:
        await self._client.aclose()
