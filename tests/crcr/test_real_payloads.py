"""Every real GitHub webhook payload of ``../shared/fixtures/github-webhooks`` (octokit/webhooks
examples) through the app ``relay serve`` builds (``create_app``), signed with the production
signer, over loopback against the fake GitHub: what the intake answers, what is dispatched (the
payload verbatim, CRCR's ``client_payload``), what is re-run, what ends ignored — and the same
payloads from a repository other than the upstream are all ignored (issue 15's first bug)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from relay.settings import Settings
from relay.store import get_delivery
from relay.store.dispatches import list_dispatches
from tests.fakes.fixtures import fixture_dir, fixture_names
from tests.service.conftest import SECRET

NAMES = fixture_names("github-webhooks", "*.json")
ALLOWLIST = """\
L1: [acme/l1-ci]
L2: [acme/l2-ci]
L3:
  spyre: {acme/l3-ci: [alice]}
L4:
  - acme/l4-ci: bob
"""
DOWNSTREAMS = ["acme/l1-ci", "acme/l2-ci", "acme/l3-ci", "acme/l4-ci"]
#: file → (HTTP status, delivery status, dispatched?) when its repository is the upstream
EXPECT = {
    "check_run.created.payload.json": (200, "ignored", False),
    "check_run.rerequested.payload.json": (202, "processed", False),  # not a crcr/... check run
    "check_suite.rerequested.payload.json": (202, "processed", False),
    "ping.payload.json": (200, "processed", False),
    "pull_request.assigned.payload.json": (200, "ignored", False),
    "pull_request.closed.payload.json": (202, "processed", True),
    "pull_request.labeled.payload.json": (200, "ignored", False),  # label "bug"
    "pull_request.opened.payload.json": (202, "processed", True),
    "pull_request.reopened.payload.json": (202, "processed", True),
    "pull_request.synchronize.payload.json": (202, "processed", True),
    "pull_request.unlabeled.payload.json": (200, "ignored", False),
    "push.payload.json": (202, "processed", True),  # a deleted tag: dispatched, no head
    "push.with-new-branch.payload.json": (202, "processed", True),
}


def _load(name: str) -> tuple[str, bytes, dict]:
    path = fixture_dir("github-webhooks") / name
    return name.split(".", 1)[0], path.read_bytes(), json.loads(path.read_bytes())


@pytest.fixture
def serve(tmp_path: Path, start_relay, fake_github):
    fake, gh_url = fake_github
    (tmp_path / "allowlist.yaml").write_text(ALLOWLIST)

    def start(upstream: str):
        settings = Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / 'r.db'}",
                            state_dir=tmp_path, github_api_url=gh_url,
                            allowlist=str(tmp_path / "allowlist.yaml"), upstream_repo=upstream,
                            outbox_poll_s=0.05, dispatch_max_wait_s=1.0)
        return start_relay(settings), fake  # no processor given: relay serve's own

    return start


def test_every_payload_has_an_expectation() -> None:
    fixture_dir("github-webhooks")
    assert sorted(EXPECT) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_real_payload_from_the_upstream(serve, name: str) -> None:
    event, raw, payload = _load(name)
    relay, fake = serve((payload.get("repository") or {}).get("full_name", "pytorch/pytorch"))
    resp = relay.sender.send(event, None, body=raw, delivery_id=f"real-{name}")
    code, status, dispatched = EXPECT[name]
    assert resp.status_code == code, resp.text
    relay.drain()
    with relay.app.state.session_factory() as s:
        row = get_delivery(s, f"real-{name}")
        rows = {d.repo: d for d in list_dispatches(s, f"real-{name}")}
    assert row.status == status
    if status == "ignored":  # the reason is kept as the row's text
        assert row.error.endswith(("is not an event the relay acts on",
                                   "is not a ciflow/crcr/<device> label")), row.error
    else:
        assert row.error is None
    if not dispatched:
        assert fake.dispatches == [] and rows == {}
        return
    assert sorted(r for r, _ in fake.dispatches) == DOWNSTREAMS
    for _, body in fake.dispatches:
        cp = body["client_payload"]
        assert body["event_type"] == event
        assert (cp["event_type"], cp["delivery_id"], cp["payload"]) == (event, f"real-{name}", payload)
    head = rows["acme/l4-ci"].head_sha
    if event == "pull_request":
        assert (rows["acme/l4-ci"].pr_number, head) == (payload["number"],
                                                        payload["pull_request"]["head"]["sha"])
    else:  # no ciflow/trunk tag: no PR, so never a check run; a deleted ref has no head
        assert rows["acme/l4-ci"].pr_number is None
        assert head == (None if payload["deleted"] else payload["after"])


@pytest.mark.parametrize("name", [n for n in NAMES if not n.startswith("ping")])
def test_real_payload_from_another_repository_is_ignored(serve, name: str) -> None:
    event, raw, _ = _load(name)
    relay, fake = serve("pytorch/pytorch")
    resp = relay.sender.send(event, None, body=raw, delivery_id=f"other-{name}")
    assert (resp.status_code, resp.json()["status"]) == (200, "ignored")
    relay.drain()
    assert fake.dispatches == []


def test_real_check_run_and_suite_rerun_when_they_are_crcr_checks(serve) -> None:
    _, _, check_run = _load("check_run.rerequested.payload.json")
    relay, fake = serve(check_run["repository"]["full_name"])
    crcr = copy.deepcopy(check_run)
    crcr["check_run"].update(name="crcr/acme/l3-ci/CI/build", external_id="4242:7")
    relay.sender.send("check_run", crcr, delivery_id="rr-1")
    relay.drain()
    assert fake.reruns == [("acme/l3-ci", 4242)]
    _, _, suite = _load("check_suite.rerequested.payload.json")
    relay2, fake = serve(suite["repository"]["full_name"])
    fake.check_runs[1] = {"name": "crcr/acme/l4-ci/CI/a", "external_id": "51:2"}
    fake.check_runs[2] = {"name": "crcr/acme/l4-ci/CI/b", "external_id": "51:2"}
    fake.suites[suite["check_suite"]["id"]] = [1, 2]
    relay2.sender.send("check_suite", suite, delivery_id="rs-1")
    relay2.drain()
    assert fake.whole_reruns == [("acme/l4-ci", 51)]  # the whole run, not its failed jobs


def test_real_labeled_payload_with_a_crcr_label_only_starts_checks(serve) -> None:
    _, _, labeled = _load("pull_request.labeled.payload.json")
    relay, fake = serve(labeled["repository"]["full_name"])
    labeled = copy.deepcopy(labeled)
    labeled["label"]["name"] = "ciflow/crcr/spyre"
    assert relay.sender.send("pull_request", labeled, delivery_id="lab-1").status_code == 202
    relay.drain()
    with relay.app.state.session_factory() as s:
        assert get_delivery(s, "lab-1").status == "processed"
    assert fake.dispatches == []
