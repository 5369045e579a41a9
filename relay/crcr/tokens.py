"""Bearer tokens accepted by ``POST /api/crcr/callback``.

Two kinds (``Authorization: Bearer <token>``):

* **Per-dispatch HMAC tokens**, issued when the relay dispatches and sent to the downstream in
  ``client_payload.callback.token``: ``crcr1.<base64url(JSON claims)>.<hex HMAC-SHA256>`` with
  claims ``{"d": delivery_id, "r": "org/repo", "x": expiry epoch s}``.  The key is
  ``Settings.callback_key()``.  A token authenticates its repo and is valid only for its own
  delivery (403 otherwise) until expiry (default 7 h: CRCR's 6 h job limit plus margin).
  Replays of the same callback are refused by the state machine (400).
* **GitHub-Actions OIDC JWTs** (GitHub docs, "About security hardening with OpenID Connect"):
  RS256, verified with PyJWT against the configured JWKS (``RELAY_OIDC_JWKS_URL``), ``iss``
  = ``RELAY_OIDC_ISSUER``, ``aud`` = ``RELAY_OIDC_AUDIENCE``, ``exp`` required; the caller's
  repo is the ``repository`` claim.  Each ``jti`` is accepted once (``token_uses`` table):
  a replayed JWT is refused with 401.

``authenticate`` returns a ``Caller``; every failure raises ``CallbackAuthError`` (401).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass

import jwt
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.errors import CallbackAuthError
from relay.store.tables import TokenUseRecord

__all__ = ["Caller", "issue_dispatch_token", "verify_dispatch_token", "OidcVerifier",
           "authenticate", "TOKEN_TTL_S"]

TOKEN_TTL_S = 7 * 3600
_PREFIX = "crcr1"


@dataclass(frozen=True)
class Caller:
    """Who called: ``repo`` (verified), ``delivery_id`` the token is bound to (``None`` for OIDC),
    ``kind`` (``dispatch`` | ``oidc``)."""

    repo: str
    delivery_id: str | None
    kind: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def issue_dispatch_token(key: bytes, delivery_id: str, repo: str, *,
                         ttl_s: int = TOKEN_TTL_S, now: float | None = None) -> str:
    """A per-dispatch token for ``repo``'s callbacks about ``delivery_id``."""
    claims = {"d": delivery_id, "r": repo, "x": int((now or time.time()) + ttl_s)}
    body = _b64(json.dumps(claims, separators=(",", ":")).encode())
    mac = hmac.new(key, f"{_PREFIX}.{body}".encode(), hashlib.sha256).hexdigest()
    return f"{_PREFIX}.{body}.{mac}"


def verify_dispatch_token(key: bytes, token: str, *, now: float | None = None) -> Caller:
    """The ``Caller`` of a valid per-dispatch token; raises ``CallbackAuthError``."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != _PREFIX:
        raise CallbackAuthError("malformed callback token")
    expected = hmac.new(key, f"{_PREFIX}.{parts[1]}".encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode("utf-8", "replace"), parts[2].encode("utf-8", "replace")):
        raise CallbackAuthError("callback token signature is invalid")
    try:
        claims = json.loads(_unb64(parts[1]))
        delivery, repo, expiry = str(claims["d"]), str(claims["r"]), float(claims["x"])
    except (ValueError, KeyError, TypeError):
        raise CallbackAuthError("malformed callback token claims") from None
    if (now or time.time()) > expiry:
        raise CallbackAuthError("callback token expired")
    return Caller(repo=repo, delivery_id=delivery, kind="dispatch")


class OidcVerifier:
    """Verifies GitHub-Actions OIDC JWTs against a JWKS URL (keys cached by PyJWT's client)."""

    def __init__(self, jwks_url: str, issuer: str, audience: str) -> None:
        self.issuer = issuer
        self.audience = audience
        self._jwks = jwt.PyJWKClient(jwks_url, cache_keys=True, lifespan=300, timeout=10)

    def verify(self, token: str) -> dict:
        """The verified claims; raises ``CallbackAuthError`` for any JWT problem."""
        try:
            key = self._jwks.get_signing_key_from_jwt(token)
            return jwt.decode(token, key.key, algorithms=["RS256"], audience=self.audience,
                              issuer=self.issuer,
                              options={"require": ["exp", "iss", "aud", "jti", "repository"]})
        except (jwt.PyJWTError, jwt.PyJWKClientError) as exc:
            raise CallbackAuthError(f"OIDC token rejected: {exc}") from None


def _consume(session: Session, key: str) -> None:
    session.add(TokenUseRecord(token_key=key[:200]))
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise CallbackAuthError("token already used (replay refused)") from None


def authenticate(header: str | None, *, key: bytes, oidc: OidcVerifier | None,
                 session: Session) -> Caller:
    """The ``Caller`` for an ``Authorization`` header value; raises ``CallbackAuthError``."""
    if not header or not header.startswith("Bearer ") or not header[7:].strip():
        raise CallbackAuthError("missing bearer token (Authorization: Bearer <token>)")
    token = header[7:].strip()
    if token.startswith(_PREFIX + "."):
        return verify_dispatch_token(key, token)
    if oidc is None:
        raise CallbackAuthError("not a relay callback token and OIDC is not configured")
    claims = oidc.verify(token)
    _consume(session, f"oidc:{claims['iss']}:{claims['jti']}")
    return Caller(repo=str(claims["repository"]), delivery_id=None, kind="oidc")
