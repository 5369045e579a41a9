"""OIDC JWTs of CI systems as callback credentials: GitHub Actions and Buildkite.

Rules (CRCR ``utils/jwt_helper.py`` and ``tests/test_jwt_helper.py``; GitHub docs "About security
hardening with OpenID Connect"; Buildkite docs "OIDC with Buildkite Agent"):

1. the token's *unverified* ``iss`` picks the issuer; an issuer not configured → 401
   ``Unsupported OIDC issuer``;
2. the signature is verified (RS256 only) with that issuer's JWKS (keys cached by PyJWT's client),
   with ``aud`` = the configured audience, ``exp`` required, and the verified ``iss`` equal to the
   one used to route (401 ``Issuer mismatch``);
3. the caller's repo: GitHub — the ``repository`` claim (401 if missing); Buildkite — the pair
   ``organization_id``/``pipeline_id`` (401 if either is empty) looked up in the CI-provider map
   (``relay.crcr.providers``; 403 ``… is not registered``), then every ``required_claims`` entry
   must hold an allowed value (403 naming the claim).

Issuers and JWKS URLs are settings (trust anchors are never read from the mutable map):
``RELAY_OIDC_JWKS_URL`` / ``RELAY_OIDC_ISSUER`` enable GitHub; ``RELAY_CI_PROVIDERS`` (the map)
enables Buildkite at ``RELAY_BUILDKITE_OIDC_ISSUER`` with ``RELAY_BUILDKITE_OIDC_JWKS_URL``
(default ``<issuer>/.well-known/jwks``).  The audience is ``RELAY_OIDC_AUDIENCE``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jwt

from relay.crcr.providers import CiProvidersSource, ProviderMap
from relay.errors import CallbackAuthError, CallbackForbidden
from relay.settings import Settings

__all__ = ["OidcIssuer", "OidcVerifier", "oidc_from_settings", "GITHUB", "BUILDKITE"]

GITHUB = "github"
BUILDKITE = "buildkite"


@dataclass
class OidcIssuer:
    """One trusted issuer: its ``iss`` value, JWKS URL and ``kind`` (``github`` | ``buildkite``)."""

    issuer: str
    jwks_url: str
    kind: str

    def __post_init__(self) -> None:
        self._jwks = jwt.PyJWKClient(self.jwks_url, cache_keys=True, lifespan=300, timeout=10)

    def decode(self, token: str, audience: str) -> dict[str, Any]:
        try:
            key = self._jwks.get_signing_key_from_jwt(token)
        except (jwt.PyJWTError, jwt.PyJWKClientError) as exc:
            raise CallbackAuthError(f"Invalid authorization token: {exc}") from None
        try:
            return jwt.decode(token, key.key, algorithms=["RS256"], audience=audience,
                              issuer=self.issuer, options={"require": ["exp", "iss", "aud"]})
        except jwt.InvalidIssuerError:
            raise CallbackAuthError(f"Issuer mismatch: token verified for another issuer than "
                                    f"{self.issuer}") from None
        except jwt.PyJWTError as exc:
            raise CallbackAuthError(f"Invalid authorization token: {exc}") from None


class OidcVerifier:
    """Verifies OIDC JWTs of the configured ``issuers``; ``providers()`` is the current
    Buildkite pipeline map.  ``verify`` is called once per callback carrying a JWT."""

    def __init__(self, issuers: list[OidcIssuer], audience: str,
                 providers: Callable[[], ProviderMap] = ProviderMap) -> None:
        self.issuers = {i.issuer: i for i in issuers}
        self.audience = audience
        self.providers = providers

    def verify(self, token: str) -> tuple[str, dict[str, Any], str]:
        """``(repo, claims, issuer kind)`` of a valid token; raises ``CallbackAuthError`` (401) or
        ``CallbackForbidden`` (403) as the module docstring says."""
        try:
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise CallbackAuthError("Invalid authorization token: not a JWT") from None
        iss = unverified.get("iss")
        issuer = self.issuers.get(iss) if isinstance(iss, str) else None
        if issuer is None:
            raise CallbackAuthError(f"Unsupported OIDC issuer: {str(iss)[:200]}")
        claims = issuer.decode(token, self.audience)
        if issuer.kind == GITHUB:
            repo = claims.get("repository")
            if not isinstance(repo, str) or not repo:
                raise CallbackAuthError("GitHub OIDC token missing 'repository' claim")
            return repo, claims, GITHUB
        return self._buildkite_repo(claims), claims, BUILDKITE

    def _buildkite_repo(self, claims: dict[str, Any]) -> str:
        org, pipeline = claims.get("organization_id"), claims.get("pipeline_id")
        if not org or not pipeline:
            raise CallbackAuthError("Buildkite OIDC token missing 'organization_id' or 'pipeline_id'")
        mapped = self.providers().buildkite.get(f"{org}/{pipeline}")
        if mapped is None:
            raise CallbackForbidden(f"Buildkite pipeline {org}/{pipeline} is not registered with "
                                    "this relay (ci_providers repo_map)")
        for claim, allowed in mapped.required_claims.items():
            value = claims.get(claim)
            if value is None or str(value) not in allowed:
                raise CallbackForbidden(f"Buildkite claim {claim!r} value {value!r} not in allowed "
                                        "set for this pipeline")
        return mapped.repo


def oidc_from_settings(settings: Settings) -> OidcVerifier | None:
    """The verifier for the configured issuers, or ``None`` when none is (GitHub needs
    ``RELAY_OIDC_JWKS_URL``, Buildkite ``RELAY_CI_PROVIDERS``).  Raises ``CiProvidersError``
    when the provider map cannot be loaded."""
    issuers: list[OidcIssuer] = []
    if settings.oidc_jwks_url:
        issuers.append(OidcIssuer(settings.oidc_issuer, settings.oidc_jwks_url, GITHUB))
    providers: Callable[[], ProviderMap] = ProviderMap
    if settings.ci_providers:
        providers = CiProvidersSource(settings.ci_providers,
                                      refresh_s=settings.allowlist_refresh_s).get
        jwks = settings.buildkite_oidc_jwks_url or \
            settings.buildkite_oidc_issuer.rstrip("/") + "/.well-known/jwks"
        issuers.append(OidcIssuer(settings.buildkite_oidc_issuer, jwks, BUILDKITE))
    return OidcVerifier(issuers, settings.oidc_audience, providers) if issuers else None
