"""Measured test durations from the relay database, for selection's budget stage.

Selection knows no database: ``selection.budget.apply_budget`` takes the durations as an
argument; this module reads them from the ``test_results`` table the relay stores runs in.
"""

from __future__ import annotations

import logging
import statistics

from selection.budget import DEFAULT_SECONDS

log = logging.getLogger(__name__)


def durations_from_db(database_url: str) -> dict[str, float]:
    """Median measured seconds per test id from the relay DB's ``test_results`` table.

    Fail soft: a missing database, table or driver gives ``{}`` (every test then costs
    ``DEFAULT_SECONDS``) and a warning; never raises.
    """
    if database_url.startswith("sqlite:///"):
        from pathlib import Path

        if not Path(database_url[len("sqlite:///"):]).is_file():  # do not create an empty DB
            log.info("no relay database at %s; using %.1f s per test", database_url, DEFAULT_SECONDS)
            return {}
    try:
        from sqlalchemy import create_engine, text

        engine = create_engine(database_url)
        try:
            with engine.connect() as conn:
                rows = conn.execute(text("SELECT test_id, duration_ms FROM test_results "
                                         "WHERE duration_ms > 0")).all()
        finally:
            engine.dispose()
    except Exception as exc:  # noqa: BLE001 — no history means default durations
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        log.warning("no stored test durations (%s); using %.1f s per test", first, DEFAULT_SECONDS)
        return {}
    samples: dict[str, list[float]] = {}
    for test_id, ms in rows:
        samples.setdefault(test_id, []).append(float(ms) / 1000.0)
    return {k: statistics.median(v) for k, v in samples.items()}
