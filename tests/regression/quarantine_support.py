"""Helpers of the quarantine tests: constants, settings, and a ``Runs`` builder of main-branch
runs in the store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from relay.domain.run import Run
from relay.quarantine.policy import evaluate
from relay.settings import Settings
from relay.store import save_run
from relay.store.quarantine import QuarantineRecord
from relay.store.regression import VerdictRecord
from relay.store.tables import DeliveryRecord
from test_specs.values.results import TestResult
from tests.fakes.github import FakeGitHub

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
REPO = "acme/spyre-ci"
MAIN = "refs/heads/main"
T = "test/test_ops.py::TestCommonSPYRE::test_compare_cpu_softmax_spyre_float16"
TITLE = f"DISABLED {T}"


def settings_for(db_url: str, github_url: str = "http://127.0.0.1:9", **kw: Any) -> Settings:
    fields: dict[str, Any] = dict(database_url=db_url, github_api_url=github_url,
                                  quarantine_repo=REPO)
    fields.update(kw)
    return Settings(**fields)


class Runs:
    """Adds runs with one result per test to the store."""

    def __init__(self, factory: sessionmaker[Session], now: datetime = NOW) -> None:
        self.factory = factory
        self.now = now
        self.n = 0

    def add(self, at: datetime, outcomes: dict[str, str], *, ref: str | None = MAIN,
            trigger: str = "webhook", event: str | None = None,
            verdicts: dict[str, str] | None = None, flaky_by: str | None = "trunk_flips",
            session: Session | None = None) -> str:
        self.n += 1
        run_id = f"r{self.n:04d}"
        results = [TestResult(id=t, upstream="u", outcome=o)  # type: ignore[arg-type]
                   for t, o in outcomes.items()]
        delivery = None
        s = session or self.factory()
        if event is not None:
            delivery = f"d-{run_id}"
            s.add(DeliveryRecord(delivery_id=delivery, event=event))
        save_run(s, Run(id=run_id, base=f"{self.n - 1:040x}", head=f"{self.n:040x}",
                        trigger=trigger, ref=ref,  # type: ignore[arg-type]
                        delivery_id=delivery, started_at=at,
                        finished_at=at + timedelta(minutes=20),
                        conclusion=Run.conclude(results), results=results,
                        counts=Run.count_outcomes(results)), commit=False)
        s.add_all(VerdictRecord(run_id=run_id, test_id=t, verdict=v, head=outcomes[t], reason="r",
                                flaky_by=flaky_by if v == "FLAKY" else None)
                  for t, v in (verdicts or {}).items())
        if session is None:
            s.commit()
            s.close()
        return run_id

    def flaky_at(self, *hours_ago: float, test: str = T, **kw: Any) -> None:
        for h in hours_ago:
            self.add(self.now - timedelta(hours=h), {test: "flaky", "other": "passed"}, **kw)

    def greens(self, n: int, start: datetime, span: timedelta, test: str = T) -> None:
        with self.factory() as s:
            for i in range(n):
                self.add(start + span * i / (n - 1), {test: "passed"}, session=s)
            s.commit()


def records(factory: sessionmaker[Session]) -> list[QuarantineRecord]:
    with factory() as s:
        return list(s.scalars(select(QuarantineRecord).order_by(QuarantineRecord.id)))


def posts(fake: FakeGitHub, suffix: str) -> int:
    return sum(1 for seen in fake.seen if seen.method == "POST" and seen.path.endswith(suffix))



def disable_then_green(factory, client, db_url, n: int, span: timedelta, **kw: Any):
    runs = Runs(factory)
    start = NOW - span - timedelta(hours=1)
    runs.add(start - timedelta(hours=3), {T: "flaky"})
    runs.add(start - timedelta(hours=2), {T: "flaky"})
    runs.add(start - timedelta(hours=1), {T: "failed"}, verdicts={T: "FLAKY"})
    settings = settings_for(db_url, **kw)
    with factory() as s:
        assert len(evaluate(s, settings, client, now=start).disabled) == 1
    runs.greens(n, start, span)
    return runs, settings


