"""Flaky-test quarantine: re-enable proposals after long green streaks, and release when the
DISABLED issue is closed (SQLite and PostgreSQL, fake GitHub over loopback HTTP)."""

from __future__ import annotations

from datetime import timedelta

from relay.quarantine.policy import REENABLE_MARKER, evaluate
from tests.regression.quarantine_support import NOW, REPO, Runs, T, disable_then_green, posts, records, settings_for


def test_150_greens_over_8_days_propose_reenabling_once(db_url, factory, github):
    fake, client = github
    runs, settings = disable_then_green(factory, client, db_url, 150, timedelta(days=8))
    with factory() as s:
        report = evaluate(s, settings, client, now=NOW)
    [p] = report.reenabled
    assert (p.test_id, p.greens, p.issue_number) == (T, 150, 1) and p.green_days == 8.0
    [comment] = fake.comments[(REPO, 1)]
    assert REENABLE_MARKER in comment["body"] and "150 consecutive green runs" in comment["body"]
    [rec] = records(factory)
    assert rec.state == "reenable_proposed" and rec.reenable_proposed_at is not None
    runs.greens(5, NOW, timedelta(hours=1))
    with factory() as s:
        assert evaluate(s, settings, client, now=NOW + timedelta(hours=2)).reenabled == []
    assert len(fake.comments[(REPO, 1)]) == 1 and posts(fake, "/comments") == 1


def test_150_greens_within_3_days_are_not_enough(db_url, factory, github):
    fake, client = github
    _, settings = disable_then_green(factory, client, db_url, 150, timedelta(days=3))
    with factory() as s:
        assert evaluate(s, settings, client, now=NOW).reenabled == []
    [rec] = records(factory)
    assert (rec.state, rec.greens) == ("disabled", 150) and fake.comments == {}


def test_a_failure_restarts_the_green_count(db_url, factory, github):
    fake, client = github
    runs, settings = disable_then_green(factory, client, db_url, 150, timedelta(days=8))
    runs.add(NOW - timedelta(minutes=30), {T: "failed"})
    runs.add(NOW - timedelta(minutes=20), {T: "skipped"})  # neither counts nor breaks
    runs.add(NOW - timedelta(minutes=10), {T: "passed"})
    with factory() as s:
        assert evaluate(s, settings, client, now=NOW).reenabled == []
    assert records(factory)[0].greens == 1 and fake.comments == {}


def test_closing_the_disabled_issue_releases_the_test(db_url, factory, github):
    fake, client = github
    runs = Runs(factory)
    runs.flaky_at(5, 3, 1)
    settings = settings_for(db_url, str(client._http.base_url))
    with factory() as s:
        first = evaluate(s, settings, client, now=NOW)
    [p] = first.disabled
    with factory() as s:
        assert evaluate(s, settings, client, now=NOW).released == []  # still open: kept
    fake.issues[REPO][0]["state"] = "closed"  # a maintainer closes DISABLED <test id>
    with factory() as s:
        report = evaluate(s, settings, client, now=NOW + timedelta(hours=7))
    assert report.released == [T] and report.quarantined == 0 and records(factory) == []
    runs.flaky_at(-8, -9, -10)  # flaky again later: a new issue is filed
    with factory() as s:
        again = evaluate(s, settings, client, now=NOW + timedelta(hours=11))
    assert [q.test_id for q in again.disabled] == [T]
    assert again.disabled[0].issue_number != p.issue_number
    assert [i["state"] for i in fake.issues[REPO]] == ["closed", "open"]
