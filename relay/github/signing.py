"""GitHub webhook signatures: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>``.

Rule source: GitHub docs, "Validating webhook deliveries" — the HMAC key is the webhook secret,
the message is the exact request body bytes, the digest is lowercase hex with a ``sha256=``
prefix, and comparison must be constant-time.  Test doubles sign with this same ``sign``.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from relay.errors import SignatureMalformed, SignatureMismatch, SignatureMissing

__all__ = ["sign", "verify", "HEADER"]

HEADER = "X-Hub-Signature-256"
_FORM = re.compile(r"sha256=[0-9a-fA-F]{64}")


def sign(body: bytes, secret: str) -> str:
    """The ``X-Hub-Signature-256`` value for ``body``: ``"sha256=" + 64 lowercase hex digits``."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify(body: bytes, secret: str, header: str | None) -> None:
    """Check ``header`` against ``body``; returns ``None`` when valid.

    Raises ``SignatureMissing`` (no/empty header, HTTP 400), ``SignatureMalformed`` (not
    ``sha256=<64 hex>``, HTTP 401 as in CRCR) or ``SignatureMismatch`` (HTTP 401) when the digest
    differs.  The comparison uses ``hmac.compare_digest``.
    """
    if header is None or not header.strip():
        raise SignatureMissing(f"missing {HEADER} header")
    value = header.strip()
    if not _FORM.fullmatch(value):
        raise SignatureMalformed(f"malformed {HEADER} header (expected sha256=<64 hex digits>)")
    expected = sign(body, secret)
    if not hmac.compare_digest(expected.encode("ascii"), value.lower().encode("ascii")):
        raise SignatureMismatch("signature does not match the payload")
