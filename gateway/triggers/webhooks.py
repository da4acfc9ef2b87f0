"""Webhook signatures: a `POST /v1/hooks/NAME` runs nothing until its body is proven signed with
the trigger's secret (HMAC-SHA256, compared in constant time); otherwise `Unauthenticated`.

    github   X-Hub-Signature-256: sha256=<hex of HMAC(secret, body)>
    hmac     X-Signature-256: sha256=<hex of HMAC(secret, body)>
    stripe   Stripe-Signature: t=<unix>,v1=<hex of HMAC(secret, "<t>.<body>")>[,v1=...]
             and t within `replay_window` seconds of now, so a captured request cannot be replayed

With no `signature` in the trigger, whichever of these headers the request carries is checked.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping

from toolmesh.config.jobs_config import TriggerConfig
from toolmesh.errors import Unauthenticated
from toolmesh.gateway.triggers.trigger_service import TriggerMessage

#: Where webhooks are posted: `POST /v1/hooks/NAME`.
HOOKS_PATH = "/v1/hooks"
HEADERS = {"github": "x-hub-signature-256", "hmac": "x-signature-256", "stripe": "stripe-signature"}
#: Headers that name a delivery (GitHub's, Stripe's event id is in the body), kept on the job.
DELIVERY_HEADERS = ("x-github-delivery", "x-request-id", "idempotency-key")


def _digest(secret: bytes, payload: bytes) -> str:
    return hmac.new(secret, payload, hashlib.sha256).hexdigest()


def _check_prefixed(header: str, secret: bytes, body: bytes) -> bool:
    scheme, _, given = header.strip().partition("=")
    return scheme == "sha256" and hmac.compare_digest(given.encode(), _digest(secret, body).encode())


def _check_stripe(header: str, secret: bytes, body: bytes, window: float, now: float) -> bool:
    stamp, signatures = None, []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t":
            stamp = value
        elif key == "v1":
            signatures.append(value)
    if stamp is None or not stamp.isdigit() or abs(now - int(stamp)) > window:
        return False
    expected = _digest(secret, stamp.encode() + b"." + body).encode()
    # Every candidate is compared, so the time taken says nothing about which one matched.
    found = [hmac.compare_digest(s.encode(), expected) for s in signatures]
    return any(found)


def verify(
    trigger: TriggerConfig, secret: bytes, headers: Mapping[str, str], body: bytes, now: float | None = None
) -> None:
    """Raise Unauthenticated unless `body` carries a valid signature of `secret`."""
    kinds = [trigger.signature] if trigger.signature else list(HEADERS)
    present = [kind for kind in kinds if kind is not None and HEADERS[kind] in headers]
    if not present:
        wanted = " or ".join(HEADERS[k].title() for k in kinds if k is not None)
        raise Unauthenticated(f"webhook {trigger.webhook!r} needs a signature: send {wanted}")
    kind = present[0]
    header = headers[HEADERS[kind]]
    if kind == "stripe":
        ok = _check_stripe(header, secret, body, trigger.replay_window, time.time() if now is None else now)
    else:
        ok = _check_prefixed(header, secret, body)
    if not ok:
        raise Unauthenticated(
            f"webhook {trigger.webhook!r}: the {HEADERS[kind].title()} signature does not match"
            + (" (or its timestamp is outside the replay window)" if kind == "stripe" else "")
        )


def message(headers: Mapping[str, str], body: bytes) -> TriggerMessage:
    """A verified body as a trigger message: its JSON, or the problem with it."""
    delivery = next((headers[h] for h in DELIVERY_HEADERS if h in headers), "")
    source = f"hook:{delivery[:64]}" if delivery else "hook"
    try:
        return TriggerMessage(json.loads(body), source, raw=body)
    except (ValueError, RecursionError) as exc:
        return TriggerMessage(None, source, problem=f"the body is not JSON: {exc}", raw=body)
