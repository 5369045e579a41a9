"""Detection time: how long an upstream commit waits for this backend's verdict, stage by stage.

One sample per webhook run of the local backend whose verdict reached the dashboard: the
delivery's arrival (``deliveries.received_at``, stored before the 202) to its verdict posted (the
dashboard ingest's receipt of the run's HUD body, ``hud_results.received_at``), split at the
run's own marks into

* ``queue_ms``     arrival → run start (``runs.started_at``): waiting for a worker;
* ``selection_ms`` run start → selection done (``runs.selected_at``): specs, indexes, stages 1–3,
  environments;
* ``execution_ms`` selection done → run finished (``runs.finished_at``): the tests, stage 4's
  reruns, verdicts, bisection;
* ``reporting_ms`` run finished → verdict posted.

Each stage is rounded to whole milliseconds and ``total_ms`` is their sum, so a row adds up.
Per UTC day (of the arrival): the sample count and P50/P95 (nearest rank) of every stage and of
the total, next to CRCR's L3 thresholds (design §6: queue P50 < 30 min, end-to-end P50 < 3 h).
PyTorch's nightly RFC calls this "time to detection".  A run without ``selected_at`` (stored
before it was kept) or without a posted verdict is not a sample; ``unreported`` counts the latter.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.store.tables import DeliveryRecord, HudResultRecord, RunRecord, as_utc

__all__ = ["detection", "STAGES", "THRESHOLDS", "percentile"]

STAGES = ("queue_ms", "selection_ms", "execution_ms", "reporting_ms")
#: CRCR's L3 criteria on these times (design §6), milliseconds
THRESHOLDS = {"p50_queue_ms": 30 * 60 * 1000.0, "p50_total_ms": 3 * 3600 * 1000.0}


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile ``q`` in (0, 100] of ``values`` (``None`` when empty): a value
    that occurred, so a day of one sample shows that sample."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def _ms(a: datetime, b: datetime) -> int:
    return max(0, round((b - a).total_seconds() * 1000))


def _samples(session: Session, backend: str, since: datetime) -> tuple[list[dict[str, Any]], int]:
    posted = (select(HudResultRecord.run_id, func.min(HudResultRecord.received_at).label("at"))
              .where(HudResultRecord.status == "completed").group_by(HudResultRecord.run_id).subquery())
    rows = session.execute(
        select(RunRecord.id, RunRecord.head, RunRecord.delivery_id, DeliveryRecord.received_at,
               RunRecord.started_at, RunRecord.selected_at, RunRecord.finished_at, posted.c.at)
        .join(DeliveryRecord, DeliveryRecord.delivery_id == RunRecord.delivery_id)
        .outerjoin(posted, posted.c.run_id == RunRecord.id)
        .where(RunRecord.backend == backend, RunRecord.selected_at.is_not(None),
               DeliveryRecord.received_at >= since)
        .order_by(DeliveryRecord.received_at))
    out, unreported = [], 0
    for run_id, head, delivery_id, received, started, selected, finished, at in rows:
        if at is None:
            unreported += 1
            continue
        received, started, selected, finished, at = map(as_utc, (received, started, selected, finished, at))
        stages = {"queue_ms": _ms(received, started), "selection_ms": _ms(started, selected),
                  "execution_ms": _ms(selected, finished), "reporting_ms": _ms(finished, at)}
        out.append({"commit": head, "run_id": run_id, "delivery_id": delivery_id,
                    "received_at": received.isoformat(), "posted_at": at.isoformat(),
                    **stages, "total_ms": sum(stages.values())})
    return out, unreported


def detection(session: Session, backend: str, *, now: datetime | None = None, days: int = 14,
              recent: int = 20) -> dict[str, Any]:
    """The detection-time JSON of ``backend`` over the ``days`` days ending ``now``:
    ``{"thresholds", "stages", "days": [{day, commits, p50/p95 per stage and total}] (oldest
    first, days with samples only), "commits": [the latest ``recent`` samples, newest first],
    "unreported", "p50_total_ms", "p50_queue_ms", "meets_l3"}`` (times in ms)."""
    now = now or datetime.now(UTC)
    samples, unreported = _samples(session, backend, now - timedelta(days=days))
    by_day: dict[str, list[dict[str, Any]]] = {}
    for s in samples:
        by_day.setdefault(s["received_at"][:10], []).append(s)
    keys = (*STAGES, "total_ms")
    daily = [{"day": day, "commits": len(group),
              **{f"p{q}_{k}": percentile([s[k] for s in group], q) for k in keys for q in (50, 95)}}
             for day, group in sorted(by_day.items())]
    p50_total = percentile([s["total_ms"] for s in samples], 50)
    p50_queue = percentile([s["queue_ms"] for s in samples], 50)
    meets = None if p50_total is None else (p50_total < THRESHOLDS["p50_total_ms"]
                                            and p50_queue < THRESHOLDS["p50_queue_ms"])
    return {"thresholds": THRESHOLDS, "stages": list(STAGES), "days": daily,
            "commits": list(reversed(samples))[:recent], "unreported": unreported,
            "p50_total_ms": p50_total, "p50_queue_ms": p50_queue, "meets_l3": meets}
