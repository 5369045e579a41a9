"""Flaky-test quarantine (``relay.quarantine.policy``): disable proposals on SQLite and PostgreSQL, with
DISABLED issues filed on the fake GitHub over loopback HTTP (re-enable and release:
``test_quarantine_reenable.py``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select
from tenacity import wait_none

from relay.domain.run import Run
from relay.github.client import GitHubClient
from relay.quarantine.policy import evaluate
from relay.settings import Settings
from relay.store.tables import DeliveryRecord
from test_specs.values.results import TestResult
from tests.regression.quarantine_support import MAIN, NOW, REPO, TITLE, Runs, T, posts, records, settings_for


def test_three_flaky_main_runs_file_one_issue_exactly_once(db_url, factory, github):
    fake, client = github
    runs = Runs(factory)
    runs.flaky_at(5, 3)
    # the third counts through its stored FLAKY verdict (trunk flips), not its outcome
    runs.add(NOW - timedelta(hours=1), {T: "failed"}, verdicts={T: "FLAKY"})
    runs.flaky_at(4, 2, test="twice")  # only two runs: nothing
    settings = settings_for(db_url, str(client._http.base_url))
    with factory() as s:
        report = evaluate(s, settings, client, now=NOW)
    assert [p.test_id for p in report.disabled] == [T]
    p = report.disabled[0]
    assert (p.flaky_runs, p.issue_repo, p.issue_number, p.issue_adopted) == (3, REPO, 1, False)
    [issue] = fake.issues[REPO]
    assert issue["title"] == TITLE and issue["html_url"] == p.issue_url
    assert issue["body"].startswith("Platforms: spyre-sim\n")
    assert "3 runs within 6 h" in issue["body"] and "r0003" in issue["body"]
    [rec] = records(factory)
    assert (rec.test_id, rec.state, rec.flaky_runs, rec.issue_number) == (T, "disabled", 3, 1)
    assert rec.flaky_run_ids == ["r0001", "r0002", "r0003"]  # named by its FLAKY verdicts
    for later in (NOW, NOW + timedelta(hours=1)):
        with factory() as s:
            again = evaluate(s, settings, client, now=later)
        assert again.disabled == [] and again.quarantined == 1 and again.errors == []
    assert len(fake.issues[REPO]) == 1 and posts(fake, "/issues") == 1


def test_flaky_verdicts_that_are_no_evidence_of_their_own_do_not_disable(db_url, factory, github):
    """A quarantine FLAKY repeats the record (counting it would keep a test disabled by its own
    record), and a FLAKY stored before its rule was recorded may come from the old flips rule that
    read pull-request heads: neither is flakiness evidence; a rerun FLAKY is."""
    _fake, client = github
    runs = Runs(factory)
    runs.flaky_at(5)
    runs.add(NOW - timedelta(hours=4), {T: "failed"}, verdicts={T: "FLAKY"}, flaky_by="quarantine")
    runs.add(NOW - timedelta(hours=3), {T: "failed"}, verdicts={T: "FLAKY"}, flaky_by=None)
    runs.add(NOW - timedelta(hours=2), {T: "failed"}, verdicts={T: "FLAKY"}, flaky_by="trunk_flips")
    settings = settings_for(db_url, quarantine_repo=None)
    with factory() as s:
        assert evaluate(s, settings, client, now=NOW).disabled == []  # 2 runs, not more than 2
    runs.add(NOW - timedelta(hours=1), {T: "flaky"}, verdicts={T: "FLAKY"}, flaky_by="rerun")
    with factory() as s:
        [p] = evaluate(s, settings, client, now=NOW).disabled
    assert p.flaky_runs == 3
    assert records(factory)[0].flaky_run_ids == ["r0001", "r0004", "r0005"]


def test_an_open_issue_with_the_exact_title_is_adopted_across_pages(db_url, factory, github):
    fake, client = github
    for i in range(120):  # the match is on the second page of 100
        fake.add_issue(REPO, f"unrelated {i}")
    fake.add_issue(REPO, TITLE, state="closed")
    fake.add_issue(REPO, TITLE, pull_request=True)
    fake.add_issue(REPO, TITLE + "_extra")
    wanted = fake.add_issue(REPO, TITLE)
    Runs(factory).flaky_at(5, 3, 1)
    with factory() as s:
        report = evaluate(s, settings_for(db_url), client, now=NOW)
    [p] = report.disabled
    assert p.issue_adopted and p.issue_number == wanted["number"] == 124
    assert posts(fake, "/issues") == 0
    assert any(seen.query.get("page") == "2" for seen in fake.seen)


def test_flaky_runs_elsewhere_do_not_count(db_url, factory, github):
    fake, client = github
    runs = Runs(factory)
    runs.flaky_at(5, 1)  # two that count; any one of the rest would make three
    runs.flaky_at(3, ref="refs/heads/feature")
    runs.flaky_at(3, ref=None)
    runs.flaky_at(3, event="pull_request")  # a PR run carries its base ref, main
    runs.flaky_at(3, trigger="baseline")
    runs.flaky_at(6.5)  # outside the window
    runs.flaky_at(-1)  # after now
    settings = settings_for(db_url)
    with factory() as s:
        assert evaluate(s, settings, client, now=NOW).disabled == []
    assert records(factory) == [] and fake.issues == {}
    runs.flaky_at(2, event="push")  # a push delivery's run counts
    with factory() as s:
        assert [p.test_id for p in evaluate(s, settings, client, now=NOW).disabled] == [T]


def test_without_a_repo_only_the_record_is_written_and_the_issue_follows_later(db_url, factory,
                                                                                github):
    fake, client = github
    Runs(factory).flaky_at(5, 3, 1)
    with factory() as s:
        [p] = evaluate(s, settings_for(db_url, quarantine_repo=None), client, now=NOW).disabled
    assert p.issue_url is None and "RELAY_QUARANTINE_REPO is not set" in p.reason
    assert fake.seen == []
    with factory() as s:  # configured later: the missing issue is filed once
        report = evaluate(s, settings_for(db_url), client, now=NOW + timedelta(minutes=10))
    [rec] = records(factory)
    assert report.disabled == [] and rec.issue_number == 1 and "not set" not in rec.reason
    assert [i["title"] for i in fake.issues[REPO]] == [TITLE]


def test_a_github_failure_is_reported_and_retried_by_a_later_evaluation(db_url, factory, github):
    fake, client = github
    Runs(factory).flaky_at(5, 3, 1)
    fake.fail_with = [502, 502]  # both tries of the title lookup
    settings = settings_for(db_url)
    with factory() as s:
        report = evaluate(s, settings, client, now=NOW)
    assert report.disabled[0].issue_url is None and "502" in report.errors[0]
    assert records(factory)[0].state == "disabled"  # quarantined all the same
    with factory() as s:  # too soon: left to the evaluation that claimed it
        assert evaluate(s, settings, client, now=NOW + timedelta(minutes=1)).errors == []
    assert REPO not in fake.issues
    with factory() as s:
        evaluate(s, settings, client, now=NOW + timedelta(minutes=6))
    assert [i["title"] for i in fake.issues[REPO]] == [TITLE]
    assert records(factory)[0].issue_number == 1


def test_thresholds_come_from_settings(db_url, factory, github, monkeypatch):
    fake, client = github
    runs = Runs(factory)
    runs.flaky_at(5, 1)
    with factory() as s:
        assert evaluate(s, settings_for(db_url), client, now=NOW).disabled == []
    monkeypatch.setenv("RELAY_QUARANTINE_FLAKY_RUNS", "1")
    with factory() as s:
        assert evaluate(s, settings_for(db_url, quarantine_window_h=2), client,
                        now=NOW).disabled == []  # only one of them within 2 h
    with factory() as s:
        report = evaluate(s, settings_for(db_url), client, now=NOW)
    assert report.flaky_runs_threshold == 1 and [p.test_id for p in report.disabled] == [T]
    runs.greens(10, NOW, timedelta(days=1))
    later = NOW + timedelta(days=2)

    def reenabled(greens: int, days: float) -> list[Any]:
        settings = settings_for(db_url, quarantine_reenable_greens=greens,
                                quarantine_reenable_days=days)
        with factory() as s:
            return evaluate(s, settings, client, now=later).reenabled

    assert reenabled(11, 1) == [] and reenabled(10, 1.5) == []  # 10 greens over 1 day
    [p] = reenabled(10, 1)
    assert p.greens == 10


def test_a_quarantined_failing_test_is_flaky_not_new_and_the_run_succeeds(db_url, factory, github):
    from relay.domain.verdicts import conclusion
    from relay.pipeline.baseline import verdicts_for
    from relay.store.run_store import SqlRunStore

    fake, client = github
    Runs(factory).flaky_at(5, 3, 1)
    settings = settings_for(db_url)
    with factory() as s:
        [p] = evaluate(s, settings, client, now=NOW).disabled
    head = [TestResult(id=T, upstream="u", outcome="failed", message="boom"),
            TestResult(id="other", upstream="u", outcome="passed")]
    base = {r.id: TestResult(id=r.id, upstream="u", outcome="passed") for r in head}
    store = SqlRunStore(factory)
    where = {"backend": "spyre-sim", "env_name": "current", "head_sha": "f" * 40}
    verdicts = verdicts_for(head, base, store, **where)
    assert verdicts[0].verdict == "FLAKY" and verdicts[1].verdict == "OK"
    assert TITLE in verdicts[0].reason and p.issue_url in verdicts[0].reason
    assert verdicts[0].evidence == ["r0001", "r0002", "r0003"] and "r0001, r0002, r0003" in verdicts[0].reason
    assert conclusion(verdicts) == "success"
    unknown = [TestResult(id="not-quarantined", upstream="u", outcome="failed")]
    assert verdicts_for(unknown, base, store, **where)[0].verdict == "NEW"


def test_a_create_answered_5xx_is_not_filed_twice():
    issues: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json=issues)
        issues.append({"number": 1, "title": json.loads(request.content)["title"],
                       "html_url": "https://github.com/o/r/issues/1"})
        return httpx.Response(502, json={"message": "created, but the proxy timed out"})

    with GitHubClient("https://gh.test", attempts=3, wait=wait_none(),
                      transport=httpx.MockTransport(handler)) as gh:
        issue, created = gh.ensure_issue("o/r", TITLE, "body")
    assert (issue["number"], created, len(issues)) == (1, False, 1)


def test_process_delivery_evaluates_after_a_webhook_run_and_never_loses_it(db_url, factory,
                                                                          monkeypatch, caplog):
    import relay.quarantine.policy
    from relay.store import insert_delivery
    from relay.worker.job import DeliveryJob
    from relay.worker.processing import process_delivery

    now = datetime.now(UTC)  # process_delivery evaluates at the wall clock
    Runs(factory, now).flaky_at(5, 3)
    settings = settings_for(db_url, quarantine_repo=None)

    def processor(delivery, _settings, _sink) -> Run:
        results = [TestResult(id=T, upstream="u", outcome="flaky")]
        return Run(id=f"run-{delivery.id}", base="b" * 40, head="c" * 40, trigger="webhook",
                   ref=MAIN, delivery_id=delivery.id, started_at=now, finished_at=now,
                   conclusion="success", results=results, counts=Run.count_outcomes(results))

    from tests.fakes.github import push_payload

    body = json.dumps(push_payload())  # a usable push: processing validates the payload first
    with factory() as s:
        insert_delivery(s, delivery_id="d1", event="push", payload=body)
        insert_delivery(s, delivery_id="d2", event="push", payload=body)
    assert process_delivery("d1", DeliveryJob(session_factory=factory, settings=settings,
                            processor=processor)) == "processed"
    [rec] = records(factory)
    assert (rec.test_id, rec.flaky_runs, rec.issue_number) == (T, 3, None)

    def broken(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("quarantine exploded")

    monkeypatch.setattr(relay.quarantine.policy, "evaluate", broken)
    assert process_delivery("d2", DeliveryJob(session_factory=factory, settings=settings,
                            processor=processor)) == "processed"
    assert "quarantine evaluation failed" in caplog.text
    with factory() as s:
        d2 = s.scalar(select(DeliveryRecord).where(DeliveryRecord.delivery_id == "d2"))
        assert d2 is not None and (d2.status, d2.error) == ("processed", None)


def test_cli_and_dashboard_show_the_quarantine(db_url, factory, github, monkeypatch,
                                               live_server, tmp_path):
    from typer.testing import CliRunner

    from relay.cli import app as cli_app
    from relay.service import create_app

    fake, client = github
    runs = Runs(factory, datetime.now(UTC))  # the CLI evaluates at the real clock
    runs.flaky_at(5, 3, 1, test="recent")
    odd = "spec::T::test_b[/foo]"  # brackets in an id are text, not rich markup
    runs.flaky_at(5, 3, 1, test=odd)
    monkeypatch.setenv("RELAY_DATABASE_URL", db_url)
    monkeypatch.setenv("RELAY_GITHUB_API_URL", str(client._http.base_url))
    monkeypatch.setenv("RELAY_QUARANTINE_REPO", REPO)
    result = CliRunner().invoke(cli_app, ["quarantine", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [p["test_id"] for p in report["disabled"]] == ["recent", odd]
    assert report["disabled"][0]["issue_url"] == f"https://github.com/{REPO}/issues/1"
    assert "test_b[" in result.stderr  # printed as text: no MarkupError, nothing dropped
    again = CliRunner().invoke(cli_app, ["quarantine"])
    assert again.exit_code == 0 and again.stdout == "" and "no new proposals" in again.stderr
    monkeypatch.setenv("RELAY_QUARANTINE_FLAKY_RUNS", "-1")
    bad = CliRunner().invoke(cli_app, ["quarantine"])
    assert bad.exit_code == 2 and "RELAY_QUARANTINE_FLAKY_RUNS" in bad.stderr
    monkeypatch.delenv("RELAY_QUARANTINE_FLAKY_RUNS")

    settings = Settings(webhook_secret="a-real-secret-0123456789", database_url=db_url,
                        state_dir=tmp_path)
    url = live_server(create_app(settings, processor=lambda d, s, sink: None, report=False)).url
    row, _ = httpx.get(url + "/api/v1/quarantine").json()["quarantine"]
    assert (row["test_id"], row["state"], row["issue_number"]) == ("recent", "disabled", 1)
    flaky = {f["test_id"]: f for f in httpx.get(url + "/api/v1/flaky").json()["flaky"]}
    assert flaky["recent"]["quarantine"]["issue_url"] == row["issue_url"]


