"""Backend readiness: the numbers behind promotion from L2 to L3 (CRCR, ratified criteria).

L3 needs (design §6): ≥ 1 month at L2, weekly job success rate > 90 %, end-to-end P50 < 3 h,
< 1 % of jobs over 3 h in the last 14 days, queue time (P50) < 30 min.  ``readiness`` is called
once per ``GET /api/v1/backends/{name}/readiness`` and per readiness page render; ``weekly``
gives the same numbers per week (the page's trend charts, ``"weekly"`` in the JSON).

Sources: a downstream repo's ``jobs`` (queue = dispatch sent → in_progress, execution =
in_progress → completed, end-to-end = the sum; TIMED_OUT counts as a failed job over 3 h), or
the local backend's ``runs`` (queue = delivery received → run start, when known).  "Time at
L2" is approximated by the days since the backend's first recorded job (the relay does not
yet keep a history of allowlist changes).  Times are in milliseconds.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.store.history import local_runs_since
from relay.store.jobs import list_jobs
from relay.store.tables import DeliveryRecord, JobRecord, RunRecord

__all__ = ["readiness", "weekly", "L3_CRITERIA", "WEEKS"]

H3_MS = 3 * 3600 * 1000.0
#: weeks the trend covers
WEEKS = 8
L3_CRITERIA = {"days_at_l2": 30, "success_rate_7d": 0.90, "p50_e2e_ms": H3_MS,
               "share_over_3h_14d": 0.01, "p50_queue_ms": 30 * 60 * 1000.0}


def _utc(t: datetime | None) -> datetime | None:
    return t.replace(tzinfo=UTC) if t is not None and t.tzinfo is None else t


def _p50(values: list[float]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def _samples_jobs(session: Session, name: str, since: datetime) -> tuple[list[dict], datetime | None]:
    first = session.scalar(select(JobRecord.started_at).where(JobRecord.repo == name)
                           .order_by(JobRecord.started_at).limit(1))
    out = []
    for j in list_jobs(session, name, since):
        if j.state not in ("COMPLETED", "TIMED_OUT"):
            continue
        e2e = None if j.state == "TIMED_OUT" else (j.queue_ms or 0.0) + (j.exec_ms or 0.0)
        out.append({"at": _utc(j.started_at), "ok": j.conclusion == "success",
                    "e2e_ms": e2e, "over_3h": j.state == "TIMED_OUT" or (e2e or 0) > H3_MS,
                    "queue_ms": j.queue_ms})
    return out, _utc(first)


def _samples_runs(session: Session, name: str, since: datetime) -> tuple[list[dict], datetime | None]:
    first = session.scalar(select(RunRecord.started_at).where(RunRecord.backend == name)
                           .order_by(RunRecord.started_at).limit(1))
    out = []
    for r in local_runs_since(session, name, since):
        received = None
        if r.delivery_id:
            received = session.scalar(select(DeliveryRecord.received_at)
                                      .where(DeliveryRecord.delivery_id == r.delivery_id))
        start, end = _utc(r.started_at), _utc(r.finished_at)
        queue = max(0.0, (start - _utc(received)).total_seconds() * 1000) if received else 0.0
        e2e = queue + max(0.0, (end - start).total_seconds() * 1000)
        out.append({"at": start, "ok": r.conclusion != "failure", "e2e_ms": e2e,
                    "over_3h": e2e > H3_MS, "queue_ms": queue})
    return out, _utc(first)


def readiness(session: Session, name: str, level: str | None, *, local: bool,
              now: datetime | None = None) -> dict[str, Any]:
    """The readiness JSON of backend/repo ``name`` currently at ``level`` (``None``: not listed)."""
    now = now or datetime.now(UTC)
    since14 = now - timedelta(days=14)
    samples, first = (_samples_runs if local else _samples_jobs)(session, name, since14)
    week = [s for s in samples if s["at"] >= now - timedelta(days=7)]
    success = sum(s["ok"] for s in week) / len(week) if week else None
    e2e = _p50([s["e2e_ms"] for s in samples if s["e2e_ms"] is not None])
    over = sum(s["over_3h"] for s in samples) / len(samples) if samples else None
    queue = _p50([s["queue_ms"] for s in samples if s["queue_ms"] is not None])
    days = (now - first).total_seconds() / 86400 if first else 0.0
    c = L3_CRITERIA
    criteria = [
        {"name": "days_at_l2", "value": round(days, 2), "threshold": f">= {c['days_at_l2']}",
         "ok": level in ("L2", "L3", "L4") and days >= c["days_at_l2"]},
        {"name": "success_rate_7d", "value": success, "threshold": "> 0.90",
         "ok": success is not None and success > c["success_rate_7d"]},
        {"name": "p50_e2e_ms", "value": e2e, "threshold": f"< {H3_MS:.0f}",
         "ok": e2e is not None and e2e < c["p50_e2e_ms"]},
        {"name": "share_over_3h_14d", "value": over, "threshold": "< 0.01",
         "ok": over is not None and over < c["share_over_3h_14d"]},
        {"name": "p50_queue_ms", "value": queue, "threshold": f"< {c['p50_queue_ms']:.0f}",
         "ok": queue is not None and queue < c["p50_queue_ms"]},
    ]
    qualifies = level
    if level in ("L1", "L2") and all(x["ok"] for x in criteria):
        qualifies = "L3"
    return {"backend": name, "level": level, "local": local, "jobs_14d": len(samples),
            "jobs_7d": len(week), "success_rate_7d": success, "p50_e2e_ms": e2e,
            "share_over_3h_14d": over, "p50_queue_ms": queue, "days_observed": round(days, 2),
            "criteria": criteria, "qualifies_for": qualifies,
            "weekly": weekly(session, name, local=local, now=now)}


def weekly(session: Session, name: str, *, local: bool, weeks: int = WEEKS,
           now: datetime | None = None) -> list[dict[str, Any]]:
    """The criteria's numbers per week, oldest first, the last week ending ``now``:
    ``[{week_start (ISO), jobs, success_rate, p50_e2e_ms, over_3h, share_over_3h, p50_queue_ms}]``
    (``None`` for a week without jobs)."""
    now = now or datetime.now(UTC)
    start = now - timedelta(days=7 * weeks)
    samples, _first = (_samples_runs if local else _samples_jobs)(session, name, start)
    out = []
    for w in range(weeks):
        lo, hi = start + timedelta(days=7 * w), start + timedelta(days=7 * (w + 1))
        got = [x for x in samples if lo <= x["at"] < hi or (w == weeks - 1 and x["at"] == hi)]
        over = sum(x["over_3h"] for x in got)
        out.append({"week_start": lo.isoformat(), "jobs": len(got),
                    "success_rate": sum(x["ok"] for x in got) / len(got) if got else None,
                    "p50_e2e_ms": _p50([x["e2e_ms"] for x in got if x["e2e_ms"] is not None]),
                    "over_3h": over, "share_over_3h": over / len(got) if got else None,
                    "p50_queue_ms": _p50([x["queue_ms"] for x in got if x["queue_ms"] is not None])})
    return out
