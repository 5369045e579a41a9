"""Webhook deliveries (``GET /api/v1/deliveries`` and ``GET /deliveries``): received, processing
(with the run's progress: phase, tests done of total, outcomes so far), waiting for a retry (with
the time it is due) and failed (with the error), each with the run it produced.

States (``relay.store.deliveries``): ``received`` is *queued* — or *retrying* when a transient
failure set ``next_attempt_at`` — ``processing``, then ``processed``, ``ignored`` or ``failed``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.store.deliveries import recent_deliveries
from relay.store.progress import progress_for
from relay.store.tables import RunRecord, as_utc

__all__ = ["deliveries_json", "deliveries_view", "SECTIONS"]

#: the page's sections, in order: (key, heading)
SECTIONS = (("processing", "Processing"), ("queued", "Queued"), ("retrying", "Retrying"),
            ("failed", "Failed"), ("done", "Processed and ignored"))


def _runs_of(session: Session, delivery_ids: list[str]) -> dict[str, str]:
    if not delivery_ids:
        return {}
    rows = session.execute(select(RunRecord.delivery_id, RunRecord.id)
                           .where(RunRecord.delivery_id.in_(delivery_ids), RunRecord.trigger == "webhook")
                           .order_by(RunRecord.started_at))
    return {d: r for d, r in rows}


def deliveries_json(session: Session, status: str | None, limit: int) -> dict[str, Any]:
    """``{"deliveries": [{delivery_id, event, action, status, error, received_at, processed_at,
    attempts, next_attempt_at, progress, run_id}]}``, newest first; ``progress`` (``{phase,
    total, done, counts, started_at, updated_at}``) while processing, ``run_id`` once a run was
    stored."""
    rows = recent_deliveries(session, status, limit)
    progress = progress_for(session, [d["delivery_id"] for d in rows if d["status"] == "processing"])
    runs = _runs_of(session, [d["delivery_id"] for d in rows])
    return {"deliveries": [{**d, "progress": progress.get(d["delivery_id"]), "run_id": runs.get(d["delivery_id"])}
                           for d in rows]}


def _section(d: dict[str, Any]) -> str:
    if d["status"] == "received":
        return "retrying" if d["next_attempt_at"] else "queued"
    return d["status"] if d["status"] in ("processing", "failed") else "done"


def deliveries_view(session: Session, *, limit: int = 200, now: datetime | None = None) -> dict[str, Any]:
    """The newest ``limit`` deliveries grouped by ``SECTIONS`` (retries with ``due_in_s``), and
    ``live``: whether anything is queued, retrying or processing (the page then refreshes)."""
    rows = deliveries_json(session, None, limit)["deliveries"]
    sections: dict[str, list[dict[str, Any]]] = {key: [] for key, _ in SECTIONS}
    for d in rows:
        if d["next_attempt_at"] and now is not None:
            due = datetime.fromisoformat(d["next_attempt_at"])
            d = {**d, "due_in_s": max(0.0, (as_utc(due) - now).total_seconds())}
        sections[_section(d)].append(d)
    live = any(sections[k] for k in ("processing", "queued", "retrying"))
    return {"sections": [(key, title, sections[key]) for key, title in SECTIONS], "live": live,
            "counts": {key: len(sections[key]) for key, _ in SECTIONS}}
