"""Backend readiness: the numbers behind promotion from L2 to L3 — and demotion back (CRCR).

L3 needs (design §6, the ratified criteria): ≥ 1 month at L2, weekly job success rate > 90 %,
end-to-end P50 < 3 h, < 1 % of jobs over 3 h in the last 14 days, queue time (P50) < 30 min.
``readiness`` is called once per ``GET /api/v1/backends/{name}/readiness`` and per dashboard
page render; ``weekly`` gives the same numbers per week (the page's trend charts, ``"weekly"``
in the JSON).

Sources: a downstream repo's ``jobs`` (queue = dispatch sent → its run's first job in progress,
counted on that first job — CRCR measures it per workflow run; execution = in_progress →
completed; end-to-end = the sum; TIMED_OUT counts as a failed job over 3 h), or the local
backend's ``runs`` (queue = delivery received → run start, when known).  "Time at L2" is
approximated by the days since the first recorded job.  Times are in milliseconds.

Local runs are the main runs (triggers ``webhook``, ``replay``): a computed baseline or a
bisection round is a side run of a job, not a job.  ``declared`` (local backends) is the newest
run's items measured against what the spec declares (``relay.domain.declared``: an ``xfail`` or
``skip`` item doing what its spec says is ready; only an item declared to pass and failing is not).

``proposal`` says what the numbers suggest: ``promote`` to L3 for an L1/L2 backend meeting every
criterion; ``demote`` to L2 for an L3/L4 one that has failed an operational criterion (success,
P50 end-to-end, share over 3 h, P50 queue — each measured on its own window ending that day) on
*every* day of the grace period (``DEMOTION_GRACE_DAYS``; a criterion without data never counts
as failing); failing for a shorter time gives ``null`` with the days failed so far, so one bad
day never demotes.  CRCR's own demotion (an open ``crcr-demotion/<org>/<repo>`` PR,
``relay.crcr.demotion``) is shown as ``demotion``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.domain.declared import declared_readiness
from relay.service.detection import detection
from relay.store.demotions import demoted_since
from relay.store.history import local_runs_since
from relay.store.jobs import list_jobs
from relay.store.regression import MAIN_TRIGGERS
from relay.store.tables import DeliveryRecord, JobRecord, RunRecord, TestResultRecord
from test_specs.values.results import TestResult

__all__ = ["readiness", "weekly", "L3_CRITERIA", "DEMOTION_GRACE_DAYS", "OPERATIONAL", "WEEKS"]

H3_MS = 3 * 3600 * 1000.0
#: weeks the trend covers
WEEKS = 8
L3_CRITERIA = {"days_at_l2": 30, "success_rate_7d": 0.90, "p50_e2e_ms": H3_MS,
               "share_over_3h_14d": 0.01, "p50_queue_ms": 30 * 60 * 1000.0}
#: days an L3/L4 backend must keep failing before its demotion is proposed
DEMOTION_GRACE_DAYS = 7
#: the criteria that can demote (time at L2 cannot)
OPERATIONAL = ("success_rate_7d", "p50_e2e_ms", "share_over_3h_14d", "p50_queue_ms")


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
    first = session.scalar(select(RunRecord.started_at).where(RunRecord.backend == name,
                                                              RunRecord.trigger.in_(MAIN_TRIGGERS))
                           .order_by(RunRecord.started_at).limit(1))
    out = []
    for r in local_runs_since(session, name, since):
        if r.trigger not in MAIN_TRIGGERS:  # a baseline or bisection round is no job of its own
            continue
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


def _measure(samples: list[dict], at: datetime) -> dict[str, Any]:
    """The numbers on the windows ending at ``at``: 7 days for success, 14 for the rest."""
    window = [s for s in samples if at - timedelta(days=14) <= s["at"] <= at]
    week = [s for s in window if s["at"] >= at - timedelta(days=7)]
    return {"jobs_14d": len(window), "jobs_7d": len(week),
            "success_rate_7d": sum(s["ok"] for s in week) / len(week) if week else None,
            "p50_e2e_ms": _p50([s["e2e_ms"] for s in window if s["e2e_ms"] is not None]),
            "share_over_3h_14d": sum(s["over_3h"] for s in window) / len(window) if window else None,
            "p50_queue_ms": _p50([s["queue_ms"] for s in window if s["queue_ms"] is not None])}


def _failing(m: dict[str, Any]) -> list[str]:
    """Operational criteria ``m`` fails with data (``None`` never fails)."""
    c = L3_CRITERIA
    bad = {"success_rate_7d": lambda v: v <= c["success_rate_7d"],
           "p50_e2e_ms": lambda v: v >= c["p50_e2e_ms"],
           "share_over_3h_14d": lambda v: v >= c["share_over_3h_14d"],
           "p50_queue_ms": lambda v: v >= c["p50_queue_ms"]}
    return [n for n in OPERATIONAL if m[n] is not None and bad[n](m[n])]


def _criteria(m: dict[str, Any], level: str | None, days: float) -> list[dict[str, Any]]:
    c = L3_CRITERIA
    failing = _failing(m)
    rows = [{"name": "days_at_l2", "value": round(days, 2), "threshold": f">= {c['days_at_l2']}",
             "ok": level in ("L2", "L3", "L4") and days >= c["days_at_l2"]}]
    thresholds = {"success_rate_7d": "> 0.90", "p50_e2e_ms": f"< {H3_MS:.0f}",
                  "share_over_3h_14d": "< 0.01", "p50_queue_ms": f"< {c['p50_queue_ms']:.0f}"}
    rows += [{"name": n, "value": m[n], "threshold": thresholds[n],
              "ok": m[n] is not None and n not in failing} for n in OPERATIONAL]
    return rows


def _proposal(samples: list[dict], level: str | None, criteria: list[dict], now: datetime,
              grace_days: int) -> dict[str, Any] | None:
    if level in ("L1", "L2") and all(x["ok"] for x in criteria):
        return {"action": "promote", "to": "L3", "failing": []}
    if level not in ("L3", "L4"):
        return None
    failed_days = 0
    for day in range(grace_days + 1):
        if not _failing(_measure(samples, now - timedelta(days=day))):
            break
        failed_days = day + 1
    failing = _failing(_measure(samples, now))
    if failed_days > grace_days:
        return {"action": "demote", "to": "L2", "failing": failing, "failed_days": failed_days - 1}
    return {"action": None, "failing": failing, "failed_days": max(0, failed_days - 1),
            "grace_days": grace_days} if failing else None


def _declared(session: Session, name: str) -> dict[str, Any] | None:
    """``relay.domain.declared.declared_readiness`` of the newest run of local backend ``name``."""
    run_id = session.scalar(select(RunRecord.id).where(RunRecord.backend == name,
                                                       RunRecord.trigger.in_(MAIN_TRIGGERS))
                            .order_by(RunRecord.started_at.desc(), RunRecord.id.desc()).limit(1))
    if run_id is None:
        return None
    rows = session.scalars(select(TestResultRecord).where(TestResultRecord.run_id == run_id))
    return declared_readiness((TestResult(id=r.test_id, upstream=r.upstream, mode=r.mode,
                                          outcome=r.outcome)  # type: ignore[arg-type]
                               for r in rows), run_id=run_id)


def readiness(session: Session, name: str, level: str | None, *, local: bool,
              now: datetime | None = None, grace_days: int = DEMOTION_GRACE_DAYS) -> dict[str, Any]:
    """The readiness JSON of backend/repo ``name`` currently at ``level`` (``None``: not
    listed); see the module docstring for ``proposal`` and ``demotion``; ``detection``: the
    local backend's detection time per upstream commit and day (``relay.service.detection``),
    ``None`` for a downstream repo (its jobs carry queue and execution only)."""
    now = now or datetime.now(UTC)
    since = now - timedelta(days=14 + grace_days)
    samples, first = (_samples_runs if local else _samples_jobs)(session, name, since)
    m = _measure(samples, now)
    days = (now - first).total_seconds() / 86400 if first else 0.0
    criteria = _criteria(m, level, days)
    proposal = _proposal(samples, level, criteria, now, grace_days)
    demoted = None if local else demoted_since(session, name)
    return {"backend": name, "level": level, "local": local, **m,
            "days_observed": round(days, 2), "criteria": criteria,
            "qualifies_for": proposal["to"] if proposal and proposal["action"] else level,
            "proposal": proposal,
            "declared": _declared(session, name) if local else None,
            "demotion": {"open_pr": demoted is not None,
                         "since": demoted.isoformat() if demoted else None},
            "weekly": weekly(session, name, local=local, now=now),
            "detection": detection(session, name, now=now) if local else None}


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
