"""Check runs as CRCR makes them for pushes (``ciflow/trunk/<pr>`` tags only), and L3 demotion
(CRCR ``utils/demotion.py``, ``tests/test_demotion.py``) over loopback with the fake GitHub."""

from __future__ import annotations

from datetime import timedelta

import httpx

from relay.crcr.demotion import reconcile, suppressed
from relay.crcr.sweeper import sweep_and_reconcile
from relay.github.client import GitHubClient
from relay.store.demotions import demoted_since, set_demotion
from relay.store.tables import utcnow
from tests.fakes.github import pull_request_payload, push_payload

DEMOTION_HEAD = "pytorch:crcr-demotion/acme/l3-ci"


def _token(fake, delivery, repo):
    return next(b["client_payload"]["callback"]["token"] for r, b in fake.dispatches
                if r == repo and b["client_payload"]["delivery_id"] == delivery)


def _cb(relay, token, delivery, status, run_id=99999, job="build", **wf):
    body = {"delivery_id": delivery, "workflow": {"status": status, "run_id": run_id, "name": "CI",
                                                  "job_name": job, **wf}}
    return httpx.post(relay.url + "/api/crcr/callback", json=body,
                      headers={"Authorization": f"Bearer {token}"})


def test_push_trunk_tag_gets_a_check_run_main_does_not(crcr) -> None:
    relay, fake = crcr("L4: [acme/l4-ci]\n")
    trunk = push_payload(after="abc123" + "0" * 34) | {"ref": "refs/tags/ciflow/trunk/42"}
    relay.sender.send("push", trunk, delivery_id="t-1")
    relay.sender.send("push", push_payload(), delivery_id="m-1")
    relay.drain()
    tok_t, tok_m = _token(fake, "t-1", "acme/l4-ci"), _token(fake, "m-1", "acme/l4-ci")
    assert _cb(relay, tok_t, "t-1", "in_progress").json()["status"] == "in_progress"
    assert _cb(relay, tok_m, "m-1", "in_progress", run_id=5).json()["status"] == "in_progress"
    relay.wait_outbox()
    (check,) = fake.check_runs.values()
    assert (check["head_sha"], check["external_id"]) == (trunk["after"], "99999:42")
    assert check["output"]["title"] == "In progress"


def _github(relay):
    settings = relay.app.state.settings
    return lambda: GitHubClient.from_settings(settings)


def _quiet(relay):
    """Wait for the deliverer's startup sweep (it reconciles too), so that it cannot race the
    test's own reconcile calls; the next one is ``sweep_interval_s`` (1 h here) away."""
    import time

    deadline = time.monotonic() + 10
    while relay.app.state.deliverer.sweeps == 0:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def _reconcile(relay):
    allowlist = relay.app.state.allowlist  # the source: get() the current one, refresh() re-read
    return reconcile(relay.app.state.session_factory, allowlist.get, allowlist.refresh,
                     _github(relay), "pytorch/pytorch")


def test_open_demotion_pr_holds_back_new_l3_check_runs(crcr) -> None:
    relay, fake = crcr(sweep_interval_s=3600)
    _quiet(relay)
    labeled = ("ciflow/crcr/spyre",)
    relay.sender.send("pull_request", pull_request_payload(number=6, labels=labeled), delivery_id="a")
    relay.drain()
    tok = _token(fake, "a", "acme/l3-ci")
    _cb(relay, tok, "a", "in_progress", job="early")  # starts before the demotion
    relay.wait_outbox()
    assert len(fake.check_runs) == 1
    fake.open_pulls[("pytorch/pytorch", DEMOTION_HEAD)] = 77
    assert _reconcile(relay) == {"acme/l3-ci": True}
    _cb(relay, tok, "a", "in_progress", job="late")
    _cb(relay, _token(fake, "a", "acme/l4-ci"), "a", "in_progress", job="l4")  # L4: never held
    _cb(relay, tok, "a", "completed", job="early", conclusion="success")
    relay.wait_outbox()
    names = {c["name"]: c for c in fake.check_runs.values()}
    assert "crcr/acme/l3-ci/CI/late" not in names and "crcr/acme/l4-ci/CI/l4" in names
    assert names["crcr/acme/l3-ci/CI/early"]["conclusion"] == "success"  # finished all the same
    # a label arriving during the demotion starts nothing either
    late_label = pull_request_payload(number=6, action="labeled", labels=labeled)
    late_label["label"] = {"name": labeled[0]}
    relay.sender.send("pull_request", late_label, delivery_id="lab")
    relay.drain()
    relay.wait_outbox()
    assert "crcr/acme/l3-ci/CI/late" not in {c["name"] for c in fake.check_runs.values()}
    # the PR closed: the allowlist is read again first, then the demotion ends
    del fake.open_pulls[("pytorch/pytorch", DEMOTION_HEAD)]
    reloads = relay.app.state.allowlist.reloads
    assert _reconcile(relay) == {"acme/l3-ci": False}
    assert relay.app.state.allowlist.reloads == reloads + 1
    with relay.app.state.session_factory() as s:
        assert demoted_since(s, "acme/l3-ci") is None


def test_demotion_stays_when_the_allowlist_cannot_be_read(crcr, tmp_path) -> None:
    relay, fake = crcr(sweep_interval_s=3600)
    _quiet(relay)
    with relay.app.state.session_factory() as s:
        set_demotion(s, "acme/l3-ci", 77)
    (tmp_path / "allowlist.yaml").unlink()
    assert _reconcile(relay) == {}
    fake.fail_with = [502] * 8
    sweep_and_reconcile(relay.app.state.session_factory, 6 * 3600, relay.app.state.allowlist.get,
                        None, _github(relay), "pytorch/pytorch")  # errors leave it as it is
    with relay.app.state.session_factory() as s:
        assert demoted_since(s, "acme/l3-ci") is not None


def test_suppressed_rule(crcr) -> None:
    relay, _ = crcr()
    with relay.app.state.session_factory() as s:
        since = set_demotion(s, "org/repo")
        assert suppressed(s, "L3", "org/repo") and suppressed(s, "L3", "org/repo", since)
        assert not suppressed(s, "L3", "org/repo", since - timedelta(seconds=1))
        assert not suppressed(s, "L4", "org/repo") and not suppressed(s, "L2", "org/repo")
        assert not suppressed(s, None, "org/repo") and not suppressed(s, "L3", "other/repo")
        assert set_demotion(s, "org/repo", now=utcnow() + timedelta(days=1)) == since  # first kept
