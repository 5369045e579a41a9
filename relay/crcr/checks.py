"""L3/L4 reporting on the upstream PR: one check run per downstream job, one comment per
failing repo.

Rules (CRCR ``utils/gh_helper.py``, ``callback/callback_handler.py``; design §6): check runs
go on the upstream head commit, named ``crcr/<owner>/<repo>/<workflow>/<job>``, ``external_id``
= ``<run_id>:<pr>``, ``details_url`` = ``https://github.com/<repo>/actions/runs/<run_id>``,
``output.title`` ``In progress`` | the conclusion capitalized (``Timed_out``) | ``Completed``,
``output.summary`` ``<repo> workflow: <details_url>`` (our test counts follow on a second
line).  Only with a PR: a pull request, or a push of ``refs/tags/ciflow/trunk/<pr>`` — other
pushes and deleted refs get none.  L4 repos always get them, L3 repos only while the PR
carries ``ciflow/crcr/<device>`` and the repo is not under demotion (``relay.crcr.demotion``; a
job started before the demotion still gets its check run finished).  Deliberately, one check
run per job is created and then edited (CRCR creates a new one per callback).  The label may
arrive before, during or after the run: ``on_labeled`` (called once per ``labeled``
delivery) queues a check sync for every L3 job of that device on the PR, so a late label
still produces the checks.  A failing L3/L4 job leaves one comment per repo on the PR, found
again by a hidden marker (``<!-- crcr-relay:<org/repo> -->``) and edited, never duplicated.

``sync_check`` and ``sync_comment`` are outbox handlers (called by the deliverer, possibly more
than once per job): each makes GitHub match the job's *current* state, so order and repeats
do not matter.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from relay.crcr.demotion import suppressed
from relay.github.checks import (
    CHECK_CONCLUSIONS,
    create_check_run,
    update_check_run,
    upsert_marked_comment,
)
from relay.github.client import GitHubClient
from relay.github.constants import CRCR_LABEL_PREFIX, FAILING_CONCLUSIONS
from relay.github.events import PullRequestEvent
from relay.store.dispatches import pr_labels, record_labels
from relay.store.jobs import jobs_for_pr
from relay.store.outbox import enqueue
from relay.store.tables import DispatchRecord, JobRecord

__all__ = ["check_name", "checks_enabled", "check_output", "details_url", "sync_check",
           "sync_comment", "on_labeled", "comment_marker"]

log = logging.getLogger(__name__)


def check_name(job: JobRecord) -> str:
    return f"crcr/{job.repo}/{job.workflow_name or 'workflow'}/{job.job_name or 'job'}"


def comment_marker(repo: str) -> str:
    return f"<!-- crcr-relay:{repo} -->"


def checks_enabled(session: Session, dispatch: DispatchRecord) -> bool:
    """A PR and a head commit, and L4, or L3 with the PR labelled (or its payload)
    ``ciflow/crcr/<device>``."""
    if not dispatch.head_sha or dispatch.pr_number is None:
        return False
    if dispatch.level == "L4":
        return True
    if dispatch.level != "L3" or not dispatch.device:
        return False
    label = f"{CRCR_LABEL_PREFIX}{dispatch.device}"
    if label in (dispatch.labels or []):
        return True
    return label in pr_labels(session, dispatch.upstream, dispatch.pr_number)


def details_url(repo: str, run_id: str) -> str:
    """The downstream run's page (CRCR: a GitHub Actions run URL)."""
    return f"https://github.com/{repo}/actions/runs/{run_id}"


def check_output(status: str, conclusion: str | None, repo: str, url: str,
                 counts: dict[str, int] | None = None) -> dict[str, str]:
    """``output`` of a check run: CRCR's title and summary, then our test counts."""
    title = "In progress" if status != "completed" else \
        (conclusion.capitalize() if conclusion else "Completed")
    summary = f"{repo} workflow: {url}"
    if counts:
        summary += "\n\nTests: " + ", ".join(f"{k} {v}" for k, v in counts.items())
    return {"title": title, "summary": summary}


def _fields(job: JobRecord, dispatch: DispatchRecord) -> dict[str, Any]:
    url = details_url(job.repo, job.run_id)
    fields: dict[str, Any] = {
        "name": check_name(job), "head_sha": dispatch.head_sha, "details_url": url,
        "external_id": f"{job.run_id}:{dispatch.pr_number}",
        "started_at": job.started_at.isoformat() if job.started_at else None,
    }
    if job.state == "IN_PROGRESS":
        fields["status"] = "in_progress"
        fields["output"] = check_output("in_progress", None, job.repo, url, job.test_results)
    else:
        conclusion = job.conclusion if job.conclusion in CHECK_CONCLUSIONS else "neutral"
        fields.update(status="completed", conclusion=conclusion,
                      completed_at=job.completed_at.isoformat() if job.completed_at else None,
                      output=check_output("completed", conclusion, job.repo, url, job.test_results))
    return {k: v for k, v in fields.items() if v is not None}


def _load(session: Session, job_id: int) -> tuple[JobRecord, DispatchRecord] | None:
    job = session.get(JobRecord, job_id)
    if job is None:
        return None
    dispatch = session.get(DispatchRecord, job.dispatch_id)
    return (job, dispatch) if dispatch is not None else None


def sync_check(session: Session, gh: GitHubClient, job_id: int) -> str:
    """Create or update the job's check run; returns what happened (for logs/tests)."""
    loaded = _load(session, job_id)
    if loaded is None:
        return "gone"
    job, dispatch = loaded
    if not checks_enabled(session, dispatch):
        return "not-enabled"
    fields = _fields(job, dispatch)
    if job.check_run_id is None:
        if suppressed(session, dispatch.level, job.repo, job.started_at):
            return "demoted"
        job.check_run_id = create_check_run(gh, dispatch.upstream, fields)
        session.commit()
        return "created"
    update_check_run(gh, dispatch.upstream, job.check_run_id, fields)
    return "updated"


def sync_comment(session: Session, gh: GitHubClient, job_id: int) -> str:
    """Write the repo's failing-jobs comment on the PR (edit the marked one if present)."""
    loaded = _load(session, job_id)
    if loaded is None:
        return "gone"
    job, dispatch = loaded
    if dispatch.pr_number is None or not checks_enabled(session, dispatch):
        return "not-enabled"
    if suppressed(session, dispatch.level, job.repo, job.started_at):
        return "demoted"
    failing = [j for j, d in jobs_for_pr(session, dispatch.upstream, dispatch.pr_number)
               if j.repo == dispatch.repo and d.head_sha == dispatch.head_sha
               and j.conclusion in FAILING_CONCLUSIONS]
    marker = comment_marker(dispatch.repo)
    lines = [marker, f"**{dispatch.repo}** ({dispatch.level}) reports failing jobs on "
             f"`{(dispatch.head_sha or '')[:12]}`:", ""]
    lines += [f"- `{check_name(j)}` run {j.run_id} attempt {j.run_attempt}: **{j.conclusion}**"
              + (f" ([artifacts]({j.artifact_url}))" if j.artifact_url else "") for j in failing]
    _, created = upsert_marked_comment(gh, dispatch.upstream, dispatch.pr_number, marker,
                                       "\n".join(lines))
    return "created" if created else "updated"


def on_labeled(event: PullRequestEvent, session_factory: sessionmaker[Session]) -> int:
    """For a ``pull_request`` ``labeled`` event with ``ciflow/crcr/<device>``: queue check
    syncs for that device's L3 jobs on the PR (label after or during the run); returns how many
    (0 for any other action or label)."""
    label = event.label.name if event.label is not None else ""
    if event.action != "labeled" or not label.startswith(CRCR_LABEL_PREFIX):
        return 0
    device = label.removeprefix(CRCR_LABEL_PREFIX)
    upstream, number = event.repository.full_name, event.number
    queued = 0
    with session_factory() as session:
        record_labels(session, upstream, number, [label])
        for job, dispatch in jobs_for_pr(session, upstream, number):
            if dispatch.level == "L3" and dispatch.device == device and \
                    (job.check_run_id is not None or not suppressed(session, "L3", job.repo)):
                enqueue(session, "check", {"job_id": job.id})
                if job.conclusion in FAILING_CONCLUSIONS:
                    enqueue(session, "comment", {"job_id": job.id})
                queued += 1
        session.commit()
    return queued
