"""A fake OIDC issuer: an RSA key whose JWKS is served over loopback (the relay fetches it with
PyJWT's ``PyJWKClient``, as from GitHub or Buildkite), and tokens it signs."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI

__all__ = ["AUD", "jwks_app", "new_key", "oidc_token"]

AUD = "spyre-relay"


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwks_app(key: rsa.RSAPrivateKey, kid: str = "k1") -> FastAPI:
    """An app serving ``GET /jwks`` with the public half of ``key``."""
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())) | {"kid": kid, "alg": "RS256"}
    app = FastAPI()
    app.get("/jwks")(lambda: {"keys": [jwk]})
    return app


def oidc_token(key: rsa.RSAPrivateKey, iss: str, **claims: Any) -> str:
    """A token of ``iss`` for ``AUD`` valid 5 minutes with a fresh ``jti``; ``claims`` override
    (a claim given as ``None`` is left out)."""
    now = int(time.time())
    body = {"iss": iss, "aud": AUD, "iat": now, "exp": now + 300, "jti": uuid.uuid4().hex} | claims
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm="RS256",
                      headers={"kid": "k1"})
