"""The HUD-style grid (``GET /`` and ``GET /api/v1/grid``): one row per upstream commit, newest
first; one column per backend (the whole run) and per spec group under it (HUD's jobs of a
workflow), then one per downstream job (``repo / workflow/job``, CRCR callbacks); a cell is the
conclusion of the newest run of that commit there, linked to the run.

Work still in flight is a row too: a delivery ``received`` (queued, or waiting for a retry) or
``processing`` shows its head commit with a pending cell under the local backend — the grid is
where a PR waiting behind a long push run is seen.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.domain.outcomes import BAD_OUTCOMES
from relay.github.events import commit_title
from relay.service.queries.common import CONCLUSION_CHAR, cell_conclusion, github_links, is_sha, pr_number
from relay.store.grid import first_failures, group_counts, group_verdicts, inflight_deliveries, recent_run_rows
from relay.store.progress import progress_for
from relay.store.tables import DispatchRecord, JobRecord, as_utc

__all__ = ["grid_json", "delivery_head", "RUNS_PER_COMMIT", "SIDE_TRIGGERS"]

#: runs read per grid row asked for (a commit has a run, maybe a baseline and bisection rounds)
RUNS_PER_COMMIT = 6
#: runs made for another run (``relay.domain.run.Trigger``): shown only where a commit has no own run
SIDE_TRIGGERS = ("baseline", "bisect")


def delivery_head(event: str, payload_text: str) -> dict[str, Any] | None:
    """``{head, title, ref}`` of a ``pull_request`` or ``push`` delivery's payload (GitHub's
    shapes: ``pull_request.head.sha`` / ``after``), ``None`` for other events or a payload
    without them."""
    try:
        payload = json.loads(payload_text)
        if event == "pull_request":
            pr = payload["pull_request"]
            return {"head": pr["head"]["sha"], "title": pr.get("title") or "",
                    "ref": f"refs/pull/{payload['number']}/head"}
        if event == "push":
            message = str((payload.get("head_commit") or {}).get("message") or "")
            return {"head": payload["after"], "title": commit_title(message) or f"push to {payload.get('ref')}",
                    "ref": payload.get("ref")}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return None


def _row(head: str, title: str, ref: str | None, base: str | None, at: datetime, upstream: str) -> dict[str, Any]:
    return {"head": head, "title": title, "ref": ref, "pr_number": pr_number(ref), "time": as_utc(at).isoformat(),
            "is_sha": is_sha(head), "links": github_links(upstream, head, ref, base), "cells": {},
            "runs": 0, "pending": None}


def _cell(conclusion: str, **extra: Any) -> dict[str, Any]:
    return {"conclusion": conclusion, "char": CONCLUSION_CHAR.get(conclusion, "U"), **extra}


def _first_failure(conclusion: str, found: Any) -> str | None:
    """A failed cell's tooltip line: ``test id: first message line`` of the first of ``found``
    (``(test id, line)`` or ``None`` items, by test id); ``None`` for a cell that did not fail
    (a failure judged flaky or known leaves its cell green) or has no failed result."""
    if conclusion != "failure":
        return None
    pairs = sorted(p for p in found if p)
    return f"{pairs[0][0]}: {pairs[0][1]}" if pairs else None


def _add_runs(session: Session, rows: dict[str, dict], columns: dict[str, dict], limit: int,
              upstream: str) -> None:
    records = recent_run_rows(session, limit)
    ids = [r.id for r in records]
    outcomes, verdicts = group_counts(session, ids), group_verdicts(session, ids)
    firsts = first_failures(session, ids, sorted(BAD_OUTCOMES))
    # a commit's own runs first, newest first, then the side runs made for other runs
    # (baselines, bisection rounds): the first run seen in a cell is the one it shows
    records.sort(key=lambda r: r.trigger in SIDE_TRIGGERS)
    for r in records:
        row = rows.setdefault(r.head, _row(r.head, r.title, r.ref, r.base, r.started_at, upstream))
        row["runs"] += 1
        whole = {"flaky": (r.counts or {}).get("flaky", 0)}
        conclusion = "flaky" if r.conclusion == "success" and whole["flaky"] else r.conclusion
        columns.setdefault(r.backend, {"key": r.backend, "backend": r.backend, "group": None, "kind": "run"})
        first = _first_failure(conclusion, firsts.get(r.id, {}).values())
        row["cells"].setdefault(r.backend, _cell(conclusion, run_id=r.id, tests=r.selected, trigger=r.trigger,
                                                 first_failure=first))
        for group, counts in sorted(outcomes.get(r.id, {}).items()):
            key = f"{r.backend}/{group}"
            columns.setdefault(key, {"key": key, "backend": r.backend, "group": group, "kind": "group"})
            judged = cell_conclusion(counts, verdicts.get(r.id, {}).get(group))
            row["cells"].setdefault(key, _cell(judged, run_id=r.id, tests=sum(counts.values()), counts=counts,
                                               trigger=r.trigger,
                                               first_failure=_first_failure(judged, [firsts.get(r.id, {}).get(group)])))


def _add_pending(session: Session, rows: dict[str, dict], backend: str, upstream: str) -> None:
    deliveries = inflight_deliveries(session)
    progress = progress_for(session, [d.delivery_id for d in deliveries if d.status == "processing"])
    for d in reversed(deliveries):  # oldest first: the newest in-flight delivery wins the cell
        found = delivery_head(d.event, d.payload)
        if found is None:
            continue
        row = rows.get(found["head"])
        if row is None:
            row = rows[found["head"]] = _row(found["head"], found["title"], found["ref"], None,
                                             d.received_at, upstream)
        state = ("pending" if d.status == "processing" else "retrying" if d.next_attempt_at else "queued")
        row["pending"] = _cell(state, delivery_id=d.delivery_id, backend=backend,
                               progress=progress.get(d.delivery_id),
                               next_attempt_at=as_utc(d.next_attempt_at).isoformat() if d.next_attempt_at else None)
        row["time"] = max(row["time"], as_utc(d.received_at).isoformat())


def _add_job_rows(session: Session, rows: dict[str, dict], limit: int, upstream: str) -> None:
    """Rows for the commits downstream jobs reported on lately (a relay may only dispatch)."""
    newest = func.max(JobRecord.started_at)
    found = session.execute(select(DispatchRecord.head_sha, newest)
                            .join(JobRecord, JobRecord.dispatch_id == DispatchRecord.id)
                            .where(DispatchRecord.head_sha.is_not(None))
                            .group_by(DispatchRecord.head_sha).order_by(newest.desc()).limit(limit))
    for head, at in found:
        if head not in rows:
            rows[head] = _row(head, "", None, None, at, upstream)


def _add_jobs(session: Session, rows: dict[str, dict], columns: dict[str, dict]) -> None:
    heads = [h for h, row in rows.items() if row["is_sha"]]
    if not heads:
        return
    found = session.execute(select(JobRecord, DispatchRecord)
                            .join(DispatchRecord, JobRecord.dispatch_id == DispatchRecord.id)
                            .where(DispatchRecord.head_sha.in_(heads)).order_by(JobRecord.id.desc()))
    for job, dispatch in found:
        key = f"{job.repo} / {job.workflow_name}/{job.job_name}".rstrip("/")
        columns.setdefault(key, {"key": key, "backend": job.repo, "group": f"{job.workflow_name}/{job.job_name}",
                                 "kind": "job", "level": dispatch.level})
        state = job.conclusion or ("timed_out" if job.state == "TIMED_OUT" else "pending")
        rows[dispatch.head_sha]["cells"].setdefault(key, _cell(state, job_run_id=job.run_id,
                                                               attempt=job.run_attempt))


def grid_json(session: Session, *, commits: int = 30, backend: str = "spyre-sim",
              upstream: str = "pytorch/pytorch") -> dict[str, Any]:
    """``{"columns": [{key, backend, group, kind}], "rows": [{head, title, ref, pr_number, time,
    is_sha, links, runs, pending, cells: {column key: {conclusion, char, run_id, tests, …}}}]}``
    for the ``commits`` newest commits (rows by their newest run or delivery, newest first)."""
    rows: dict[str, dict[str, Any]] = {}
    columns: dict[str, dict[str, Any]] = {}
    _add_runs(session, rows, columns, commits * RUNS_PER_COMMIT, upstream)
    _add_pending(session, rows, backend, upstream)
    _add_job_rows(session, rows, commits, upstream)
    ordered = sorted(rows.values(), key=lambda r: r["time"], reverse=True)[:commits]
    kept = {r["head"]: r for r in ordered}
    _add_jobs(session, kept, columns)
    if any(r["pending"] for r in ordered):
        columns.setdefault(backend, {"key": backend, "backend": backend, "group": None, "kind": "run"})
    local = sorted((c for c in columns.values() if c["kind"] != "job"),
                   key=lambda c: (c["backend"] != backend, c["backend"], c["group"] is not None, c["group"] or ""))
    jobs = sorted((c for c in columns.values() if c["kind"] == "job"), key=lambda c: c["key"])
    used = {k for r in ordered for k in r["cells"]} | {backend for r in ordered if r["pending"]}
    return {"columns": [c for c in local + jobs if c["key"] in used], "rows": ordered}
