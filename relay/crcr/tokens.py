"""Bearer tokens accepted by ``POST /api/crcr/callback``.

``Authorization: Bearer <token>`` — the scheme is matched case-insensitively (RFC 7235 §2.1;
CRCR strips ``Bearer `` in any case).  Two kinds of token:

* **Per-dispatch tokens** (ours; CRCR has none): a JWT signed HS256 with PyJWT, issued when the
  relay dispatches and sent to the downstream in ``client_payload.callback.token``; claims ``iss``
  = ``spyre-relay``, ``aud`` = ``spyre-relay-callback``, ``delivery_id``, ``repository``,
  ``iat``, ``exp`` (the job timeout plus an hour: a job may report until the sweeper gives up on
  it) and a random ``jti``.  Key: ``Settings.callback_key()``.  Such a token authenticates its
  repo for its own delivery only (403 for another delivery); a callback replayed with it is
  refused by the state machine (400), since every state is entered once.
* **OIDC JWTs** of GitHub Actions or Buildkite (``relay.crcr.oidc``), RS256 against the issuer's
  JWKS.  Each token is accepted once (its ``iss``+``jti``, or its SHA-256 without a ``jti``, in
  the ``token_uses`` table): a replayed JWT is refused with 401.  CRCR accepts replays (README,
  "Known limitations"); refusing them is a deliberate difference.

``authenticate`` returns a ``Caller``; failures raise ``CallbackAuthError`` (401) or
``CallbackForbidden`` (403).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass

import jwt
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.crcr.oidc import OidcVerifier
from relay.errors import CallbackAuthError
from relay.store.tables import TokenUseRecord

__all__ = ["Caller", "issue_dispatch_token", "verify_dispatch_token", "authenticate",
           "bearer_token", "TOKEN_TTL_S", "DISPATCH_ISSUER"]

#: default lifetime of a per-dispatch token: CRCR's job limit used here (6 h) plus an hour
TOKEN_TTL_S = 7 * 3600
DISPATCH_ISSUER = "spyre-relay"
DISPATCH_AUDIENCE = "spyre-relay-callback"


@dataclass(frozen=True)
class Caller:
    """Who called: ``repo`` (verified), ``delivery_id`` the token is bound to (``None`` for
    OIDC), ``kind`` (``dispatch`` | ``github`` | ``buildkite``)."""

    repo: str
    delivery_id: str | None
    kind: str


def issue_dispatch_token(key: bytes, delivery_id: str, repo: str, *,
                         ttl_s: float = TOKEN_TTL_S, now: float | None = None) -> str:
    """A per-dispatch token (HS256 JWT) for ``repo``'s callbacks about ``delivery_id``, valid
    ``ttl_s`` seconds from ``now`` (epoch seconds, default the current time)."""
    issued = int(now if now is not None else time.time())
    claims = {"iss": DISPATCH_ISSUER, "aud": DISPATCH_AUDIENCE, "delivery_id": delivery_id,
              "repository": repo, "iat": issued, "exp": issued + int(ttl_s),
              "jti": uuid.uuid4().hex}
    return jwt.encode(claims, key, algorithm="HS256")


def verify_dispatch_token(key: bytes, token: str) -> Caller:
    """The ``Caller`` of a valid per-dispatch token; raises ``CallbackAuthError`` (bad
    signature, expired, malformed or missing claims)."""
    options = {"require": ["exp", "iss", "aud", "delivery_id", "repository"]}
    try:
        claims = jwt.decode(token, key, algorithms=["HS256"], audience=DISPATCH_AUDIENCE,
                            issuer=DISPATCH_ISSUER, options=options)
    except jwt.ExpiredSignatureError:
        raise CallbackAuthError("callback token expired") from None
    except jwt.InvalidSignatureError:
        raise CallbackAuthError("callback token signature is invalid") from None
    except jwt.PyJWTError as exc:
        raise CallbackAuthError(f"malformed callback token: {exc}") from None
    delivery, repo = claims["delivery_id"], claims["repository"]
    if not isinstance(delivery, str) or not isinstance(repo, str):
        raise CallbackAuthError("malformed callback token claims")
    return Caller(repo=repo, delivery_id=delivery, kind="dispatch")


def bearer_token(header: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` value, scheme in any case (RFC 7235);
    raises ``CallbackAuthError`` when missing or of another scheme."""
    scheme, _, token = (header or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise CallbackAuthError("Missing authorization token (Authorization: Bearer <token>)")
    return token.strip()


def _consume(session: Session, key: str) -> None:
    session.add(TokenUseRecord(token_key=key[:200]))
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise CallbackAuthError("token already used (replay refused)") from None


def _is_dispatch_token(token: str) -> bool:
    try:
        return jwt.decode(token, options={"verify_signature": False}).get("iss") == DISPATCH_ISSUER
    except jwt.PyJWTError:
        return False


def authenticate(header: str | None, *, key: bytes, oidc: OidcVerifier | None,
                 session: Session) -> Caller:
    """The ``Caller`` for an ``Authorization`` header value (see the module docstring)."""
    token = bearer_token(header)
    if _is_dispatch_token(token):
        return verify_dispatch_token(key, token)
    if oidc is None:
        raise CallbackAuthError("not a relay callback token and OIDC is not configured")
    repo, claims, kind = oidc.verify(token)
    jti = claims.get("jti")
    use = f"oidc:{claims['iss']}:{jti}" if jti else "oidc:sha256:" + hashlib.sha256(token.encode()).hexdigest()
    _consume(session, use)
    return Caller(repo=repo, delivery_id=None, kind=kind)
