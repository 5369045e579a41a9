"""Who may call back (``relay.crcr.tokens``, ``relay.crcr.oidc``), rule by rule, with the answer
each refusal gives: per-dispatch tokens bound to one delivery and repo for a limited time, OIDC
JWTs of a configured issuer (a fake JWKS over loopback), each accepted once."""

from __future__ import annotations

import time

import jwt
import pytest
from sqlalchemy.orm import sessionmaker

from relay.crcr.oidc import BUILDKITE, GITHUB, OidcIssuer, OidcVerifier, oidc_from_settings
from relay.crcr.providers import parse_ci_providers
from relay.crcr.tokens import (
    DISPATCH_AUDIENCE,
    DISPATCH_ISSUER,
    TOKEN_TTL_S,
    Caller,
    authenticate,
    bearer_token,
    issue_dispatch_token,
    verify_dispatch_token,
)
from relay.errors import CallbackAuthError, CallbackForbidden
from relay.settings import Settings
from relay.store import create_schema, make_engine
from tests.fakes.oidc import AUD, jwks_app, new_key, oidc_token

KEY = b"k" * 32
GH = "https://token.actions.githubusercontent.com"
BK = "https://agent.buildkite.com"


def refusal(call, kind=CallbackAuthError) -> str:
    with pytest.raises(kind) as err:
        call()
    return str(err.value)


def test_a_dispatch_token_names_its_repo_and_delivery_for_seven_hours() -> None:
    now = time.time()
    token = issue_dispatch_token(KEY, "d-1", "acme/ci", now=now)
    assert verify_dispatch_token(KEY, token) == Caller(repo="acme/ci", delivery_id="d-1", kind="dispatch")
    claims = jwt.decode(token, KEY, algorithms=["HS256"], audience=DISPATCH_AUDIENCE)
    assert (claims["iss"], claims["iat"], claims["exp"]) == (DISPATCH_ISSUER, int(now), int(now) + TOKEN_TTL_S)
    assert TOKEN_TTL_S == 7 * 3600  # the 6 h job limit plus an hour
    assert len(claims["jti"]) == 32 and claims["jti"] != jwt.decode(
        issue_dispatch_token(KEY, "d-1", "acme/ci", now=now), KEY, algorithms=["HS256"],
        audience=DISPATCH_AUDIENCE)["jti"]


def test_a_dispatch_token_is_refused_expired_forged_or_without_its_claims() -> None:
    expired = issue_dispatch_token(KEY, "d", "a/b", ttl_s=10, now=time.time() - 60)
    assert refusal(lambda: verify_dispatch_token(KEY, expired)) == "callback token expired"
    forged = issue_dispatch_token(b"x" * 32, "d", "a/b")
    assert refusal(lambda: verify_dispatch_token(KEY, forged)) == "callback token signature is invalid"
    no_repo = jwt.encode({"iss": DISPATCH_ISSUER, "aud": DISPATCH_AUDIENCE, "exp": time.time() + 60,
                          "delivery_id": "d"}, KEY, algorithm="HS256")
    assert refusal(lambda: verify_dispatch_token(KEY, no_repo)).startswith("malformed callback token: ")
    not_str = jwt.encode({"iss": DISPATCH_ISSUER, "aud": DISPATCH_AUDIENCE, "exp": time.time() + 60,
                          "delivery_id": 5, "repository": "a/b"}, KEY, algorithm="HS256")
    assert refusal(lambda: verify_dispatch_token(KEY, not_str)) == "malformed callback token claims"


@pytest.mark.parametrize(("header", "token"), [
    ("Bearer abc", "abc"), ("bearer abc", "abc"), ("  BEARER   abc  ", "abc"),
])
def test_the_bearer_scheme_is_matched_in_any_case(header, token) -> None:
    assert bearer_token(header) == token


@pytest.mark.parametrize("header", [None, "", "Basic abc", "Bearer", "Bearer   ", "Token abc"])
def test_no_bearer_token_is_refused_saying_what_is_expected(header) -> None:
    assert refusal(lambda: bearer_token(header)) == "Missing authorization token (Authorization: Bearer <token>)"


@pytest.fixture
def issuer(live_server):
    key = new_key()
    return key, live_server(jwks_app(key)).url + "/jwks"


@pytest.fixture
def session(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'relay.db'}")
    create_schema(engine)
    with sessionmaker(engine)() as s:
        yield s
    engine.dispose()


def _buildkite_map(required: dict | None = None):
    return parse_ci_providers({"providers": {"buildkite": {"repo_map": {
        "org-1/pipe-1": {"repo": "acme/bk", "required_claims": required or {}}}}}})


def test_an_oidc_token_is_accepted_once(issuer, session) -> None:
    key, url = issuer
    oidc = OidcVerifier([OidcIssuer(GH, url, GITHUB)], AUD)
    token = oidc_token(key, GH, repository="acme/ci")
    caller = authenticate(f"Bearer {token}", key=KEY, oidc=oidc, session=session)
    assert caller == Caller(repo="acme/ci", delivery_id=None, kind=GITHUB)
    assert refusal(lambda: authenticate(f"Bearer {token}", key=KEY, oidc=oidc, session=session)) == \
        "token already used (replay refused)"
    no_jti = oidc_token(key, GH, repository="acme/ci", jti=None)
    authenticate(f"Bearer {no_jti}", key=KEY, oidc=oidc, session=session)  # keyed by its SHA-256
    assert refusal(lambda: authenticate(f"Bearer {no_jti}", key=KEY, oidc=oidc, session=session)) == \
        "token already used (replay refused)"
    other = oidc_token(key, GH, repository="acme/ci")  # another jti of the same issuer: accepted
    assert authenticate(f"Bearer {other}", key=KEY, oidc=oidc, session=session).repo == "acme/ci"


def test_a_dispatch_token_authenticates_without_oidc_and_anything_else_needs_it(issuer, session) -> None:
    key, _ = issuer
    dispatch = issue_dispatch_token(KEY, "d-9", "acme/ci")
    assert authenticate(f"Bearer {dispatch}", key=KEY, oidc=None, session=session).delivery_id == "d-9"
    assert refusal(lambda: authenticate(f"Bearer {oidc_token(key, GH)}", key=KEY, oidc=None, session=session)) == \
        "not a relay callback token and OIDC is not configured"
    assert refusal(lambda: authenticate("Bearer not-a-jwt", key=KEY, oidc=None, session=session)) == \
        "not a relay callback token and OIDC is not configured"


def test_oidc_refusals_say_why(issuer) -> None:
    key, url = issuer
    oidc = OidcVerifier([OidcIssuer(GH, url, GITHUB)], AUD)
    assert refusal(lambda: oidc.verify("garbage")) == "Invalid authorization token: not a JWT"
    assert refusal(lambda: oidc.verify(oidc_token(key, "https://evil.example"))) == \
        "Unsupported OIDC issuer: https://evil.example"
    assert refusal(lambda: oidc.verify(oidc_token(key, GH))) == "GitHub OIDC token missing 'repository' claim"
    assert refusal(lambda: oidc.verify(oidc_token(key, GH, repository=""))) == \
        "GitHub OIDC token missing 'repository' claim"
    assert refusal(lambda: oidc.verify(oidc_token(new_key(), GH, repository="a/b"))).startswith(
        "Invalid authorization token: ")
    assert refusal(lambda: oidc.verify(oidc_token(key, GH, repository="a/b", aud="other"))).startswith(
        "Invalid authorization token: ")
    alias = OidcVerifier([OidcIssuer("https://alias.example", url, GITHUB)], AUD)
    alias.issuers[GH] = alias.issuers.pop("https://alias.example")  # routed by GH, verified for alias
    assert refusal(lambda: alias.verify(oidc_token(key, GH, repository="a/b"))) == \
        "Issuer mismatch: token verified for another issuer than https://alias.example"


def test_a_buildkite_token_maps_its_pipeline_to_a_repo_when_its_claims_are_allowed(issuer) -> None:
    key, url = issuer
    oidc = OidcVerifier([OidcIssuer(BK, url, BUILDKITE)], AUD,
                        lambda: _buildkite_map({"build_branch": ["main"], "build_number": ["7"]}))
    ok = oidc_token(key, BK, organization_id="org-1", pipeline_id="pipe-1", build_branch="main", build_number=7)
    repo, claims, kind = oidc.verify(ok)
    assert (repo, kind, claims["pipeline_id"]) == ("acme/bk", BUILDKITE, "pipe-1")
    assert refusal(lambda: oidc.verify(oidc_token(key, BK, organization_id="org-1"))) == \
        "Buildkite OIDC token missing 'organization_id' or 'pipeline_id'"
    assert refusal(lambda: oidc.verify(oidc_token(key, BK, pipeline_id="pipe-1"))) == \
        "Buildkite OIDC token missing 'organization_id' or 'pipeline_id'"
    assert refusal(lambda: oidc.verify(oidc_token(key, BK, organization_id="org-1", pipeline_id="p2")),
                   CallbackForbidden) == \
        "Buildkite pipeline org-1/p2 is not registered with this relay (ci_providers repo_map)"
    assert refusal(lambda: oidc.verify(oidc_token(key, BK, organization_id="org-1", pipeline_id="pipe-1",
                                                  build_branch="dev", build_number=7)), CallbackForbidden) == \
        "Buildkite claim 'build_branch' value 'dev' not in allowed set for this pipeline"
    assert refusal(lambda: oidc.verify(oidc_token(key, BK, organization_id="org-1", pipeline_id="pipe-1",
                                                  build_branch="main")), CallbackForbidden) == \
        "Buildkite claim 'build_number' value None not in allowed set for this pipeline"


def test_issuers_come_from_the_settings(tmp_path) -> None:
    assert oidc_from_settings(Settings(webhook_secret="s" * 32)) is None
    gh = oidc_from_settings(Settings(webhook_secret="s" * 32, oidc_jwks_url="https://gh.example/jwks",
                                     oidc_audience="aud-1"))
    assert gh is not None and list(gh.issuers) == [GH] and gh.audience == "aud-1"
    assert (gh.issuers[GH].jwks_url, gh.issuers[GH].kind) == ("https://gh.example/jwks", GITHUB)
    providers = tmp_path / "ci_providers.yml"
    providers.write_text("providers:\n  buildkite:\n    repo_map:\n      o/p: {repo: acme/bk}\n")
    bk = oidc_from_settings(Settings(webhook_secret="s" * 32, ci_providers=str(providers),
                                     buildkite_oidc_issuer="https://bk.example/"))
    assert bk is not None and list(bk.issuers) == ["https://bk.example/"]
    assert (bk.issuers["https://bk.example/"].jwks_url, bk.issuers["https://bk.example/"].kind) == (
        "https://bk.example/.well-known/jwks", BUILDKITE)
    assert bk.providers().buildkite["o/p"].repo == "acme/bk"
    explicit = oidc_from_settings(Settings(webhook_secret="s" * 32, ci_providers=str(providers),
                                           buildkite_oidc_jwks_url="https://keys.example/bk"))
    assert explicit is not None and explicit.issuers[BK].jwks_url == "https://keys.example/bk"
    only_slashes = oidc_from_settings(Settings(webhook_secret="s" * 32, ci_providers=str(providers),
                                               buildkite_oidc_issuer="https://bk.example/X//"))
    assert only_slashes is not None  # only trailing slashes are dropped from the issuer
    assert only_slashes.issuers["https://bk.example/X//"].jwks_url == "https://bk.example/X/.well-known/jwks"


def _unsigned(claims: dict) -> str:
    """A JWT-shaped token whose claims PyJWT's encoder would refuse (an ``iss`` that is no string)."""
    import base64
    import json

    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'RS256', 'kid': 'k1'})}.{part(claims)}.c2ln"


def test_an_oidc_token_is_refused_without_exp_with_an_unknown_key_or_an_issuer_that_is_no_string(issuer) -> None:
    """CRCR ``jwt_helper``: ``exp`` is required; a key the JWKS does not hold and an ``iss`` of
    any other type than a string are 401s with a reason, never a 500."""
    key, url = issuer
    oidc = OidcVerifier([OidcIssuer(GH, url, GITHUB)], AUD)
    no_exp = oidc_token(key, GH, repository="a/b", exp=None)
    assert refusal(lambda: oidc.verify(no_exp)) == \
        'Invalid authorization token: Token is missing the "exp" claim'
    other_kid = jwt.encode({"iss": GH, "aud": AUD, "exp": int(time.time()) + 60, "repository": "a/b"},
                           key, algorithm="RS256", headers={"kid": "k2"})
    assert refusal(lambda: oidc.verify(other_kid)).startswith(
        "Invalid authorization token: Unable to find a signing key that matches")
    for iss in (["https://token.actions.githubusercontent.com"], {"a": 1}, 7):
        assert refusal(lambda iss=iss: oidc.verify(_unsigned({"iss": iss}))) == \
            f"Unsupported OIDC issuer: {str(iss)[:200]}"
    long_iss = "https://" + "x" * 300
    assert refusal(lambda: oidc.verify(oidc_token(key, long_iss))) == \
        f"Unsupported OIDC issuer: {long_iss[:200]}"


def test_the_buildkite_pipeline_map_is_reread_at_the_settings_interval(tmp_path) -> None:
    providers = tmp_path / "ci_providers.yml"
    providers.write_text("providers:\n  buildkite:\n    repo_map:\n      o/p: {repo: acme/bk}\n")
    bk = oidc_from_settings(Settings(webhook_secret="s" * 32, ci_providers=str(providers),
                                     allowlist_refresh_s=0))
    assert bk is not None and bk.providers().buildkite["o/p"].repo == "acme/bk"
    providers.write_text("providers:\n  buildkite:\n    repo_map:\n      o/p: {repo: acme/other}\n")
    assert bk.providers().buildkite["o/p"].repo == "acme/other"
