"""A ``pull_request`` delivery end to end through the default processor: PR files fetched from
the fake GitHub over loopback (paginated), the pipeline called (monkeypatched), the run saved,
listed by the dashboard and reported to the in-process HUD ingest."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import httpx
import pytest

import relay.worker.delivery
from relay.settings import Settings
from relay.store import get_delivery, list_hud_results
from relay.worker.processing import DeliverySink
from selection.models import ChangeSet
from tests.fakes.github import pr_files, pull_request_payload, push_payload
from tests.fakes.runs import run_from_changeset
from tests.service.conftest import SECRET


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def fake_run_change(request, config, ports):
        seen.append({"changeset": request.changeset, "trigger": request.trigger,
                     "delivery_id": request.delivery_id, "sink": ports.sink, "ref": request.ref})
        return SimpleNamespace(run=run_from_changeset(request.changeset, trigger=request.trigger,
                                                      delivery_id=request.delivery_id))

    monkeypatch.setattr(relay.worker.delivery, "run_change", fake_run_change)
    return seen


def test_pull_request_fetches_all_pages_and_runs(tmp_path, start_relay, fake_github, calls) -> None:
    fake, gh_url = fake_github
    fake.add_pull("pytorch/pytorch", 7, pr_files(250))
    settings = Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / 'r.db'}",
                        github_api_url=gh_url, github_token="ghs_faketoken")
    relay_ = start_relay(settings)  # default processor, in-process dashboard reporting

    resp = relay_.sender.send("pull_request", pull_request_payload(number=7, labels=("ciflow/crcr/spyre",)),
                              delivery_id="pr-1")
    assert resp.status_code == 202
    relay_.drain(20)
    relay_.wait_outbox()

    with relay_.app.state.session_factory() as s:
        row = get_delivery(s, "pr-1")
        assert row is not None and row.status == "processed", row.error
        hud = list_hud_results(s)
    assert len(calls) == 1
    cs: ChangeSet = calls[0]["changeset"]
    assert calls[0]["trigger"] == "webhook" and calls[0]["delivery_id"] == "pr-1"
    assert isinstance(calls[0]["sink"], DeliverySink)  # the delivery reports, with the event name
    assert (cs.upstream, cs.base, cs.head, cs.title) == ("pytorch/pytorch", "b" * 40, "a" * 40, "Fix softmax")
    assert cs.labels == ["ciflow/crcr/spyre"]
    assert [f.filename for f in cs.files] == [f"torch/_refs/f{i}.py" for i in range(250)]

    pages = [s for s in fake.seen if s.path.endswith("/files")]
    assert [p.query.get("page", "1") for p in pages] == ["1", "2", "3"]
    assert pages[0].query["per_page"] == "100"
    assert pages[0].headers["authorization"] == "Bearer ghs_faketoken"
    assert pages[0].headers["accept"] == "application/vnd.github+json"
    assert pages[0].headers["x-github-api-version"] == "2022-11-28"

    runs = httpx.get(relay_.url + "/api/v1/dashboard").json()["runs"]
    assert [r["delivery_id"] for r in runs] == ["pr-1"]
    assert runs[0]["counts"]["passed"] == 5 and "results" not in runs[0]

    assert len(hud) == 1
    body = hud[0].body
    assert body["trusted"]["verified_repo"] == "spyre-sim"
    assert body["untrusted"]["callback_payload"]["event_type"] == "pull_request"
    assert body["untrusted"]["callback_payload"]["workflow"]["test_results"] == {
        "passed": 5, "failed": 0, "skipped": 0}


def test_pull_request_closed_does_not_run(tmp_path, start_relay, fake_github, calls) -> None:
    _, gh_url = fake_github
    settings = Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / 'r.db'}",
                        github_api_url=gh_url)
    relay_ = start_relay(settings)
    relay_.sender.send("pull_request", pull_request_payload(action="closed"), delivery_id="pr-c")
    relay_.drain()
    assert calls == []


def test_github_failure_marks_delivery_failed_not_lost(tmp_path, start_relay, fake_github, calls) -> None:
    _, gh_url = fake_github  # PR 7 not registered → 404 from the fake
    settings = Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / 'r.db'}",
                        github_api_url=gh_url)
    relay_ = start_relay(settings)
    relay_.sender.send("pull_request", pull_request_payload(), delivery_id="pr-404")
    relay_.drain()
    with relay_.app.state.session_factory() as s:
        row = get_delivery(s, "pr-404")
    assert row is not None and row.status == "failed"
    assert "GitHubAPIError" in (row.error or "") and "404" in (row.error or "")


def test_push_builds_changeset_from_commits(tmp_path, start_relay, fake_github, calls) -> None:
    _, gh_url = fake_github  # no compare registered: 404, so the payload's path lists are used
    settings = Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / 'r.db'}",
                        github_api_url=gh_url)
    relay_ = start_relay(settings, report=False)
    payload = push_payload(commits=[{"added": ["a.py"], "modified": ["b.py"], "removed": []},
                                    {"added": [], "modified": ["a.py"], "removed": ["c.py"]}])
    assert relay_.sender.send("push", payload, delivery_id="push-1").status_code == 202
    relay_.drain()
    cs: ChangeSet = calls[0]["changeset"]
    assert (cs.base, cs.head) == ("c" * 40, "d" * 40)
    assert [(f.filename, f.status) for f in cs.files] == [
        ("a.py", "added"), ("b.py", "modified"), ("c.py", "removed")]
    assert cs.files[0].patch is None and "no patches (GitHub: GitHub API 404" in cs.notes[0]
