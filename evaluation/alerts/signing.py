"""Webhook signatures, the Standard Webhooks way (github.com/standard-webhooks/standard-webhooks).

Each POST carries three headers:
- `webhook-id`: the message's id, the same on every retry of it (a receiver drops repeats);
- `webhook-timestamp`: when this attempt was signed, in whole seconds since the epoch;
- `webhook-signature`: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, a space-separated
  list so a receiver may be given several during a rotation (Goldset sends one).
The key is the base64-decoded part of the set's secret `whsec_<base64>`.

`webhook_verify` is the receiver's side, written out for receivers to copy and for the tests;
tests/evaluation/alerts/test_webhook_signing.py checks it against the reference library.
"""

import base64
import hashlib
import hmac
import secrets
import time

SECRET_PREFIX = "whsec_"
# The spec asks for 24 to 64 random bytes.
SECRET_BYTES = 32
# A receiver refuses a timestamp further than this from its clock (the spec's replay guard).
TOLERANCE_SECONDS = 5 * 60


class WebhookSignatureError(Exception):
    """The message is not signed by the secret, or its timestamp is out of tolerance."""


def webhook_secret_generate() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def _signature(secret: str, message_id: str, timestamp: int, body: bytes) -> bytes:
    signed = f"{message_id}.{timestamp}.".encode() + body
    return hmac.new(_key(secret), signed, hashlib.sha256).digest()


def webhook_headers(*, secret: str, message_id: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    """The three Standard Webhooks headers of `body` signed with `secret` at `timestamp`
    (whole seconds since the epoch; now when None)."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    signature = base64.b64encode(_signature(secret, message_id, timestamp, body)).decode()
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp), "webhook-signature": f"v1,{signature}"}


def webhook_verify(*, secret: str, headers: dict[str, str], body: bytes, now: int | None = None) -> None:
    """Check that `body` with `headers` (any case) was signed with `secret` within
    TOLERANCE_SECONDS of `now` (epoch seconds; the clock when None). Returns None when it
    was; raises WebhookSignatureError saying why not. Verify the raw body bytes before
    parsing them: re-encoded JSON is not what was signed."""
    headers = {name.lower(): value for name, value in headers.items()}
    message_id, timestamp, signatures = (headers.get(name) for name in ("webhook-id", "webhook-timestamp", "webhook-signature"))
    if not (message_id and timestamp and signatures):
        raise WebhookSignatureError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        sent = int(timestamp)
    except ValueError:
        raise WebhookSignatureError(f"webhook-timestamp {timestamp!r} is not whole seconds") from None
    now = int(time.time()) if now is None else now
    if abs(now - sent) > TOLERANCE_SECONDS:
        raise WebhookSignatureError(f"webhook-timestamp {sent} is more than {TOLERANCE_SECONDS} s from now ({now})")
    expected = _signature(secret, message_id, sent, body)
    for versioned in signatures.split(" "):
        version, _, signature = versioned.partition(",")
        if version != "v1":
            continue  # a scheme this verifier does not know; another entry may be v1
        try:
            given = base64.b64decode(signature, validate=True)
        except ValueError:
            continue
        if hmac.compare_digest(expected, given):
            return
    raise WebhookSignatureError("no v1 signature matches the secret")
