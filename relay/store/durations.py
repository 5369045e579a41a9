"""Measured test durations: the median ``duration_ms`` of each test's stored results.

What ``selection.stages.budget.apply_budget`` cuts by (``relay replay`` / ``relay select
--budget-minutes``).  Fail soft: no database, table or driver means no durations (every test
then costs ``selection.stages.budget.DEFAULT_SECONDS``) and a warning; never raises.
"""

from __future__ import annotations

import logging
import statistics
from pathlib import Path

from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from relay.store.tables import TestResultRecord

__all__ = ["test_durations", "durations_from_db"]

log = logging.getLogger(__name__)


def test_durations(session: Session) -> dict[str, float]:
    """Median measured seconds per test id over every stored result with a duration."""
    rows = session.execute(select(TestResultRecord.test_id, TestResultRecord.duration_ms)
                           .where(TestResultRecord.duration_ms > 0))
    samples: dict[str, list[float]] = {}
    for test_id, ms in rows:
        samples.setdefault(test_id, []).append(float(ms) / 1000.0)
    return {k: statistics.median(v) for k, v in samples.items()}


test_durations.__test__ = False  # not a pytest test


def durations_from_db(database_url: str) -> dict[str, float]:
    """``test_durations`` of the database at ``database_url``; ``{}`` (with a log line) when it
    does not exist or cannot be read.  A missing SQLite file is not created."""
    if database_url.startswith("sqlite:///") and not Path(database_url[len("sqlite:///"):]).is_file():
        log.info("no relay database at %s; unmeasured tests use the default duration", database_url)
        return {}
    try:
        engine = create_engine(database_url)
        try:
            with Session(engine) as session:
                return test_durations(session)
        finally:
            engine.dispose()
    except Exception as exc:  # noqa: BLE001 — no history means default durations
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        log.warning("no stored test durations (%s); unmeasured tests use the default duration", first)
        return {}
