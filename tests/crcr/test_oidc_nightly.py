"""OIDC from GitHub Actions and Buildkite (a ``ci_providers.yml`` map built from
``../shared/fixtures/crcr-allowlists/buildkite_claims.json``) and nightly/periodic callbacks with
the upstream commit checked, over loopback against a fake JWKS and the fake GitHub."""

from __future__ import annotations

import json

import httpx
import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa

from relay.crcr.providers import parse_ci_providers
from tests.fakes.fixtures import fixture_dir
from tests.fakes.oidc import jwks_app, new_key, oidc_token

SHA = "5" * 40
BUILDKITE = "https://agent.buildkite.com"
GITHUB = "https://token.actions.githubusercontent.com"


@pytest.fixture
def claims() -> dict:
    return json.loads((fixture_dir("crcr-allowlists") / "buildkite_claims.json").read_text())


@pytest.fixture
def keys(live_server):
    key = new_key()
    return key, live_server(jwks_app(key)).url + "/jwks"


def _jwt(key, iss, **claims) -> str:
    return oidc_token(key, iss, **claims)


@pytest.fixture
def nightly(crcr, keys, claims, tmp_path):
    key, url = keys
    reg = claims["registered"]
    providers = {"providers": {"buildkite": {"repo_map": {
        f"{reg['organization_id']}/{reg['pipeline_id']}": {
            "repo": reg["maps_to"], "required_claims": {"build_branch": [reg["build_branch"]]}}}}}}
    (tmp_path / "ci_providers.yml").write_text(yaml.safe_dump(providers))
    allowlist = f"L2:\n  - {reg['maps_to']}\n  - acme/pr-only: {{events: [pull_request]}}\nL1: [acme/l1]\n"
    relay, fake = crcr(allowlist, oidc_jwks_url=url, ci_providers=str(tmp_path / "ci_providers.yml"),
                       buildkite_oidc_jwks_url=url)
    fake.commits["pytorch/pytorch"] = {SHA}

    def post(token: str, status="completed", sha=SHA, event="nightly", **wf) -> httpx.Response:
        body = {"event_type": event, "delivery_id": sha, "payload": {"head_sha": sha},
                "workflow": {"status": status, "run_id": 11, "name": "nightly", "job_name": "t",
                             "conclusion": "failure", **wf}}
        return httpx.post(relay.url + "/api/crcr/callback", json=body,
                          headers={"Authorization": f"Bearer {token}"})

    def buildkite(**over) -> str:
        return _jwt(key, BUILDKITE, **({"organization_id": reg["organization_id"],
                                        "pipeline_id": reg["pipeline_id"],
                                        "build_branch": reg["build_branch"]} | over))

    return relay, fake, post, buildkite, key


def test_buildkite_registered_pipeline_reports_a_nightly(nightly) -> None:
    relay, fake, post, buildkite, _ = nightly
    resp = post(buildkite(), triage_verdict={"schema_version": 1, "category": "flake",
                                             "confidence": "low", "summary": "s", "x": 1})
    assert (resp.status_code, resp.json()) == (200, {"ok": True, "status": "completed"})
    assert post(buildkite()).json() == {"ok": True, "status": "duplicate"}
    assert post(buildkite(), event="periodic", run_id=12).json()["status"] == "completed"
    relay.wait_outbox()
    from relay.store import list_hud_results

    with relay.app.state.session_factory() as s:
        (row, _) = sorted(list_hud_results(s), key=lambda h: h.run_id)
    assert row.repo == "vllm-project/vllm"
    assert row.body["trusted"]["ci_metrics"] == {"queue_time": None, "execution_time": None}
    assert row.body["untrusted"]["callback_payload"]["workflow"]["triage_verdict"] == {
        "schema_version": 1, "category": "flake", "confidence": "low", "summary": "s"}
    assert fake.check_runs == {}  # nightlies never get check runs


def test_buildkite_identity_rules(nightly, claims) -> None:
    _, _, post, buildkite, _ = nightly
    other = claims["unregistered"]
    unregistered = post(buildkite(organization_id=other["organization_id"],
                                  pipeline_id=other["pipeline_id"]))
    assert unregistered.status_code == 403 and "is not registered" in unregistered.json()["detail"]
    fork = post(buildkite(build_branch="fork-pr-branch"))
    assert fork.status_code == 403 and "build_branch" in fork.json()["detail"]
    assert post(buildkite(organization_id="")).status_code == 401
    stranger = post(_jwt(rsa.generate_private_key(public_exponent=65537, key_size=2048), BUILDKITE))
    assert stranger.status_code == 401
    unknown = post(_jwt(nightly[4], "https://issuer.invalid"))
    assert unknown.status_code == 401 and "Unsupported OIDC issuer" in unknown.json()["detail"]
    assert post(buildkite(aud="pytorch-cross-repo-ci-relay")).status_code == 401


def test_nightly_rules(nightly) -> None:
    _, fake, post, buildkite, key = nightly
    running = post(buildkite(), status="in_progress")
    assert running.status_code == 400 and "completed" in running.json()["detail"]
    unknown = post(buildkite(), sha="6" * 40)
    assert unknown.status_code == 400 and "not a commit of pytorch/pytorch" in unknown.json()["detail"]
    assert post(buildkite(), sha="not-a-sha").status_code == 400
    lookups = len(fake.commit_lookups)
    assert post(buildkite(), sha="6" * 40).status_code == 400  # the negative answer is cached
    assert len(fake.commit_lookups) == lookups
    fake.commit_fail = [500]
    assert post(buildkite(), sha="7" * 40).json()["status"] == "completed"  # fail open
    gh_token = _jwt(key, GITHUB, repository="acme/pr-only")
    assert post(gh_token).json() == {"ok": True, "status": "ignored"}  # takes no nightly events
    assert post(_jwt(key, GITHUB, repository="acme/l1")).json()["status"] == "ignored"
    missing = post(_jwt(key, GITHUB))
    assert missing.status_code == 401 and "'repository' claim" in missing.json()["detail"]


def test_ci_providers_map_forms() -> None:
    """CRCR ``TestLoadCIProviderMappings``: simple and constrained forms, the legacy section,
    scalar claim values as lists, bad entries skipped, other providers ignored."""
    got = parse_ci_providers({"providers": {"buildkite": {"repo_map": {
        "o1/p1": "vllm-project/vllm", "o2/p2": {"repo": "a/b", "required_claims": {"cluster_id": "c"}},
        "noslash": "a/b", "o3/p3": "noslash"}}, "gitlab": {"repo_map": {"g/p": "x/y"}}}})
    assert {k: (v.repo, v.required_claims) for k, v in got.buildkite.items()} == {
        "o1/p1": ("vllm-project/vllm", {}), "o2/p2": ("a/b", {"cluster_id": ("c",)})}
    legacy = parse_ci_providers({"buildkite": {"o/p": {"repo": "a/b"}}})
    assert legacy.buildkite["o/p"].repo == "a/b"
    assert parse_ci_providers(None).buildkite == {} and parse_ci_providers({}).buildkite == {}
