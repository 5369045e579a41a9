"""One upstream commit (``GET /api/v1/commits/{sha}`` and ``GET /commits/{sha}``): the runs whose
head or base it is, the runs whose bisection blamed it, the downstream jobs on it.  ``sha`` is a
full commit id or a prefix of at least 7 hex characters (``relay.service.queries.common.SHA``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from relay.service.queries.common import github_links
from relay.service.queries.runs import LISTED
from relay.store.culprits import runs_blaming
from relay.store.history import jobs_for_commit, runs_for_commit
from relay.store.runs import load_runs

__all__ = ["job_json", "commit_view", "commit_json"]


def job_json(job: Any, dispatch: Any) -> dict[str, Any]:
    """A downstream job (CRCR callbacks) with its dispatch's level, head and PR."""
    return {"repo": job.repo, "level": dispatch.level, "delivery_id": job.delivery_id,
            "run_id": job.run_id, "run_attempt": job.run_attempt, "job_name": job.job_name,
            "workflow": job.workflow_name, "state": job.state, "conclusion": job.conclusion,
            "queue_ms": job.queue_ms, "exec_ms": job.exec_ms, "test_results": job.test_results,
            "head_sha": dispatch.head_sha, "pr_number": dispatch.pr_number,
            "triage_verdict": job.triage_verdict}


def commit_view(session: Session, sha: str, upstream: str = "pytorch/pytorch") -> dict[str, Any]:
    """``{"sha", "runs": [Run], "blamed_in": [Run], "jobs": [job], "links"}`` (runs without
    results), ``sha`` lower-cased; the caller has checked its form."""
    sha = sha.lower()
    runs = load_runs(session, runs_for_commit(session, sha))
    blamed = load_runs(session, runs_blaming(session, sha))
    jobs = [job_json(j, d) for j, d in jobs_for_commit(session, sha)]
    return {"sha": sha, "runs": runs, "blamed_in": blamed, "jobs": jobs,
            "links": github_links(upstream, sha if len(sha) >= 40 else None)}


def commit_json(session: Session, sha: str) -> dict[str, Any]:
    """``commit_view`` as JSON: ``{"sha", "runs", "blamed_in", "jobs"}`` (runs without results,
    verdicts and selection)."""
    view = commit_view(session, sha)
    return {"sha": view["sha"], "runs": [r.model_dump(mode="json", exclude=LISTED) for r in view["runs"]],
            "blamed_in": [r.model_dump(mode="json", exclude=LISTED) for r in view["blamed_in"]],
            "jobs": view["jobs"]}
