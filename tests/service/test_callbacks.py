"""``POST /api/crcr/callback`` over real HTTP: bearer tokens (per-dispatch HMAC, GitHub-Actions
OIDC JWT against a fake JWKS), per-repo rate limit, the CRCR state machine, the sweeper."""

from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI

from relay.crcr.sweeper import sweep
from relay.crcr.tokens import issue_dispatch_token
from relay.store.jobs import list_jobs
from relay.store.tables import JobRecord, utcnow
from tests.fakes.github import pull_request_payload


def _token(fake, repo: str) -> str:
    for r, body in fake.dispatches:
        if r == repo:
            return body["client_payload"]["callback"]["token"]
    raise AssertionError(f"no dispatch to {repo}")


def _cb(relay, token: str | None, delivery: str, status: str, *, run_id=100, job="test",
        conclusion=None, **extra):
    wf = {"status": status, "run_id": run_id, "name": "CI", "job_name": job}
    if conclusion:
        wf["conclusion"] = conclusion
    wf.update(extra)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(relay.url + "/api/crcr/callback", headers=headers,
                      json={"delivery_id": delivery, "workflow": wf})


@pytest.fixture
def dispatched(crcr):
    relay, fake = crcr()
    relay.sender.send("pull_request", pull_request_payload(number=9), delivery_id="cb-1")
    relay.drain()
    fake.wait_dispatches(4)
    return relay, fake


def test_state_machine_and_measured_times(dispatched) -> None:
    relay, fake = dispatched
    tok = _token(fake, "acme/l2-ci")
    r1 = _cb(relay, tok, "cb-1", "in_progress")
    assert r1.status_code == 200 and r1.json()["state"] == "IN_PROGRESS"
    assert (r1.json()["ok"], r1.json()["status"]) == (True, "in_progress")
    assert r1.json()["queue_time"] >= 0
    time.sleep(0.05)
    r2 = _cb(relay, tok, "cb-1", "completed", conclusion="success",
             test_results={"passed": 3, "failed": 0, "skipped": 1})
    assert r2.status_code == 200 and r2.json()["state"] == "COMPLETED"
    assert r2.json()["status"] == "completed" and r2.json()["execution_time"] >= 0.05
    # duplicates and a replay of the same callback are refused
    dup = _cb(relay, tok, "cb-1", "completed", conclusion="success")
    assert dup.status_code == 400 and "not IN_PROGRESS" in dup.json()["detail"]
    assert dup.json()["detail"].startswith("callback rejected: invalid state transition "
                                           "delivery_id=cb-1 repo=acme/l2-ci status=completed")
    again = _cb(relay, tok, "cb-1", "in_progress")
    assert again.status_code == 400 and "duplicate" in again.json()["detail"]
    # skipped state: completed for a job never started
    skip = _cb(relay, tok, "cb-1", "completed", job="other", conclusion="success")
    assert skip.status_code == 400 and "skipped state" in skip.json()["detail"]
    # a new attempt is a new job
    assert _cb(relay, tok, "cb-1", "in_progress", run_attempt=2).status_code == 200
    counts = relay.wait_outbox()
    assert counts == {"delivered": 3}  # 2 transitions + attempt 2 (the recorder makes no run)
    from relay.store import list_hud_results

    with relay.app.state.session_factory() as s:
        hud = [h for h in list_hud_results(s) if h.repo == "acme/l2-ci"]
    done = [h for h in hud if h.attempt == 1][0].body
    assert done["trusted"]["verified_repo"] == "acme/l2-ci"
    assert done["trusted"]["downstream_repo_level"] == "L2"
    assert done["trusted"]["ci_metrics"]["execution_time"] >= 0.05
    assert done["trusted"]["ci_metrics"]["queue_time"] is None  # CRCR: queue only on in_progress
    # the callback body verbatim: no event_type was sent, none is added
    assert done["untrusted"]["callback_payload"] == {
        "delivery_id": "cb-1", "workflow": {"status": "completed", "run_id": 100, "name": "CI",
                                            "job_name": "test", "conclusion": "success",
                                            "test_results": {"passed": 3, "failed": 0, "skipped": 1}}}


def test_concurrent_completions_one_wins(dispatched) -> None:
    from concurrent.futures import ThreadPoolExecutor

    relay, fake = dispatched
    tok = _token(fake, "acme/l2-ci")
    assert _cb(relay, tok, "cb-1", "in_progress").status_code == 200
    with ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(lambda _: _cb(relay, tok, "cb-1", "completed",
                                              conclusion="success").status_code, range(8)))
    assert codes == [200] + [400] * 7


def test_token_checks(dispatched) -> None:
    relay, fake = dispatched
    tok = _token(fake, "acme/l2-ci")
    assert _cb(relay, None, "cb-1", "in_progress").status_code == 401
    assert _cb(relay, "nonsense", "cb-1", "in_progress").status_code == 401
    assert _cb(relay, tok[:-4] + "0000", "cb-1", "in_progress").status_code == 401
    other = issue_dispatch_token(relay.app.state.settings.callback_key(), "cb-2", "acme/l2-ci")
    resp = _cb(relay, other, "cb-1", "in_progress")
    assert resp.status_code == 403 and "another delivery" in resp.json()["detail"]
    expired = issue_dispatch_token(relay.app.state.settings.callback_key(), "cb-1", "acme/l2-ci",
                                   ttl_s=-1)
    assert _cb(relay, expired, "cb-1", "in_progress").json()["detail"] == "callback token expired"
    stranger = issue_dispatch_token(relay.app.state.settings.callback_key(), "cb-1", "evil/repo")
    assert _cb(relay, stranger, "cb-1", "in_progress").json() == {"ok": True, "status": "ignored"}
    lower = httpx.post(relay.url + "/api/crcr/callback", headers={"Authorization": f"bearer {tok}"},
                       json={"delivery_id": "cb-1", "workflow": {"status": "in_progress",
                                                                 "run_id": "7", "name": "CI"}})
    assert lower.status_code == 200  # RFC 7235: the scheme is case-insensitive (issue 17)
    bad = httpx.post(relay.url + "/api/crcr/callback", headers={"Authorization": f"Bearer {tok}"},
                     content=b"{nope")
    assert bad.status_code == 400 and bad.json()["detail"].startswith("Invalid JSON body")
    shape = httpx.post(relay.url + "/api/crcr/callback", headers={"Authorization": f"Bearer {tok}"},
                       json={"delivery_id": "cb-1", "workflow": {"status": "weird"}})
    assert (shape.status_code, shape.json()["detail"]) == (
        400, "callback body missing required field: 'workflow.run_id'")


def test_rate_limit_per_repo(crcr) -> None:
    relay, fake = crcr(callback_rate_per_min=5)
    relay.sender.send("pull_request", pull_request_payload(), delivery_id="rl-1")
    relay.drain()
    tok, tok2 = _token(fake, "acme/l2-ci"), _token(fake, "acme/l3-ci")
    codes = [_cb(relay, tok, "rl-1", "in_progress", run_id=i).status_code for i in range(1, 7)]
    assert codes == [200] * 5 + [429]
    limited = _cb(relay, tok, "rl-1", "in_progress", run_id=99)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
    assert _cb(relay, tok2, "rl-1", "in_progress").status_code == 200  # other repo unaffected


@pytest.fixture
def jwks(live_server):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update(kid="k1", alg="RS256", use="sig")
    app = FastAPI()

    @app.get("/.well-known/jwks")
    def keys() -> dict:
        return {"keys": [jwk]}

    return key, live_server(app).url + "/.well-known/jwks"


def _oidc(key, repo="acme/l2-ci", **over) -> str:
    now = int(time.time())
    claims = {"iss": "https://token.actions.githubusercontent.com", "aud": "spyre-relay",
              "repository": repo, "jti": str(uuid.uuid4()), "iat": now, "exp": now + 300,
              "run_id": "100"}
    claims.update(over)
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})


def test_oidc_jwt_verified_against_jwks_and_replay_refused(crcr, jwks) -> None:
    key, url = jwks
    relay, fake = crcr(oidc_jwks_url=url)
    relay.sender.send("pull_request", pull_request_payload(), delivery_id="oi-1")
    relay.drain()
    tok = _oidc(key)
    assert _cb(relay, tok, "oi-1", "in_progress").status_code == 200
    replay = _cb(relay, tok, "oi-1", "completed", conclusion="success")
    assert replay.status_code == 401 and "replay" in replay.json()["detail"]
    assert _cb(relay, _oidc(key), "oi-1", "completed", conclusion="success").status_code == 200
    assert _cb(relay, _oidc(key, aud="other"), "oi-1", "in_progress").status_code == 401
    assert _cb(relay, _oidc(key, exp=int(time.time()) - 10), "oi-1", "in_progress").status_code == 401
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert _cb(relay, _oidc(other_key), "oi-1", "in_progress").status_code == 401
    # a JWT for a repo not on the allowlist: acknowledged, ignored (CRCR)
    assert _cb(relay, _oidc(key, repo="evil/x"), "oi-1", "in_progress").json()["status"] == "ignored"
    # an allowlisted repo that got no dispatch of this delivery
    unknown = _cb(relay, _oidc(key), "oi-404", "in_progress")
    assert unknown.status_code == 400 and "no matching dispatch record" in unknown.json()["detail"]


def test_sweeper_times_out_jobs_after_6h(dispatched) -> None:
    relay, fake = dispatched
    tok = _token(fake, "acme/l4-ci")
    assert _cb(relay, tok, "cb-1", "in_progress").status_code == 200
    sf = relay.app.state.session_factory
    assert sweep(sf, 6 * 3600) == []
    swept = sweep(sf, 6 * 3600, now=utcnow() + timedelta(hours=6, minutes=1))
    assert len(swept) == 1
    with sf() as s:
        job = s.get(JobRecord, swept[0])
        assert (job.state, job.conclusion) == ("TIMED_OUT", "timed_out")
    late = _cb(relay, tok, "cb-1", "completed", conclusion="success")
    assert late.status_code == 400
    relay.wait_outbox()
    check = [c for c in fake.check_runs.values() if c["name"].startswith("crcr/acme/l4-ci")][0]
    assert (check["status"], check["conclusion"]) == ("completed", "timed_out")
    with sf() as s:
        assert [j.state for j in list_jobs(s, "acme/l4-ci")] == ["TIMED_OUT"]


def test_state_machine_atomic_on_postgresql(crcr, pg_url) -> None:
    from concurrent.futures import ThreadPoolExecutor

    relay, fake = crcr(database_url=pg_url)
    relay.sender.send("pull_request", pull_request_payload(), delivery_id="pg-1")
    relay.drain()
    tok = _token(fake, "acme/l4-ci")
    with ThreadPoolExecutor(6) as pool:
        starts = sorted(pool.map(lambda _: _cb(relay, tok, "pg-1", "in_progress").status_code,
                                 range(6)))
        assert starts == [200] + [400] * 5
        done = sorted(pool.map(lambda _: _cb(relay, tok, "pg-1", "completed",
                                             conclusion="success").status_code, range(6)))
    assert done == [200] + [400] * 5
    relay.wait_outbox()
    (check,) = [c for c in fake.check_runs.values() if c["name"].startswith("crcr/acme/l4-ci/")]
    assert check["conclusion"] == "success"


def test_callback_after_the_database_file_was_deleted_is_503_not_200(dispatched) -> None:
    """Every 2xx is durable: a callback whose row would go into an unlinked SQLite inode (gone
    at restart) is refused 503 like a webhook delivery, not acknowledged."""
    import os
    from pathlib import Path

    relay, fake = dispatched
    tok = _token(fake, "acme/l2-ci")
    db = Path(relay.app.state.settings.database_url.removeprefix("sqlite:///"))
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{db}{suffix}"):
            os.unlink(f"{db}{suffix}")
    resp = _cb(relay, tok, "cb-1", "in_progress")
    assert resp.status_code == 503 and "database unavailable" in resp.json()["detail"]
