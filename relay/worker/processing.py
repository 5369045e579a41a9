"""Processing one stored delivery after the webhook was acknowledged.

``process_delivery`` is what the task queue calls, once per submission: it claims the row
(``received`` → ``processing``; a delivery already claimed is skipped, so duplicates run
once), runs the CRCR fan-out (``fanout``: repository_dispatch to the allowlisted downstream
repos; its failures are recorded on the dispatch rows and in the delivery's ``error`` but do
not stop the local backend), calls the injected *processor*, saves the ``Run`` it returns
together with its report (``report(session, run, delivery)`` writes the outbox row in the
same transaction), evaluates flaky-test quarantine after a webhook run
(``relay.quarantine.policy.evaluate_safely``: errors logged, never raised), and marks the delivery
``processed`` — or ``failed`` with the error text, never losing it.  A failure of the
network kind (``transient``: GitHub unreachable, 5xx or 429 after the client's own retries) is
given back to the queue: the row returns to ``received`` with the error and ``retry`` schedules
it again after ``retry_delay_s`` — up to ``MAX_ATTEMPTS`` attempts, then ``failed``.

A *processor* is ``Callable[[Delivery, Settings], Run | None]``; ``default_processor``
dispatches on the event name to small functions taking pydantic models (Zuul's
``GithubEventProcessor`` habit):

* ``pull_request`` (actions opened/reopened/synchronize): files from the PR files API
  (``settings.github_api_url``), then ``relay.pipeline.run.run_change``;
* ``push``: files from the payload's commits lists (branch deletions skipped);
* anything else: nothing to do (``None``).

With ``RELAY_COMMIT_ENV`` set (``relay.envs.commits``) both run as regression runs: head
environment = resolve(head / ``after``), base environment = resolve(base / ``before``), and
``Run.ref`` is the push's ``ref`` or ``refs/heads/<PR base ref>``.  A push's commits
(``push_commits``) go to the pipeline, which bisects them for a culprit when NEW failures
appear.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from relay.errors import GitHubError
from relay.github.client import GitHubClient
from relay.github.webhooks import (
    PR_RUN_ACTIONS,
    Delivery,
    PullRequestEvent,
    PushEvent,
    push_changeset,
)
from relay.domain.run import Run
from relay.settings import Settings
from relay.store import claim_delivery, load_delivery, mark_delivery, save_run
from relay.store.db import retry_locked
from relay.store.runs import run_for_delivery
from selection.models import ChangeSet

__all__ = ["Processor", "default_processor", "process_delivery", "on_pull_request", "on_push",
           "HANDLERS", "push_commits", "TIMELINE_COMMITS_CAP", "WEBHOOK_COMMITS_CAP"]

log = logging.getLogger(__name__)

Processor = Callable[[Delivery, Settings], "Run | None"]
_ZERO_SHA = "0" * 40
#: GitHub docs (push payload): ``commits[]`` "includes a maximum of 20 commits … applied to
#: timeline events only"; webhook deliveries list up to 2,048.  A list of exactly 20 or of
#: 2,048+ may be cut, so it is re-read from the compare API.
TIMELINE_COMMITS_CAP = 20
WEBHOOK_COMMITS_CAP = 2048
COMPARE_PER_PAGE = 100


def _compare_commits(repo: str, base: str, head: str, settings: Settings) -> list[str] | None:
    """Every commit sha of ``base...head`` from the compare API (oldest first; paged with
    ``per_page``/``page``), or ``None`` when GitHub cannot list them all."""
    shas: list[str] = []
    try:
        with GitHubClient.from_settings(settings) as github:
            for page in range(1, 1 + WEBHOOK_COMMITS_CAP // COMPARE_PER_PAGE + 1):
                body = github.get(f"/repos/{repo}/compare/{base}...{head}",
                                  {"per_page": COMPARE_PER_PAGE, "page": page}).json()
                batch = [c["sha"] for c in body.get("commits", []) if c.get("sha")]
                shas.extend(batch)
                total = int(body.get("total_commits", len(shas)))
                if len(shas) >= total or len(batch) < COMPARE_PER_PAGE:
                    break
    except (GitHubError, ValueError, KeyError, TypeError) as exc:
        log.warning("compare %s...%s in %s: %s", base, head, repo, exc)
        return None
    return shas if shas and len(shas) >= total else None


def push_commits(event: PushEvent, settings: Settings, *, forced: bool = False) -> list[str] | None:
    """The pushed commits' shas, oldest → newest, ending with ``after`` — or ``None`` when they
    cannot be bisected: a forced push (``before`` is not an ancestor), a list that does not end
    at ``after``, or a list that may be cut (see ``TIMELINE_COMMITS_CAP``) and that the compare
    API could not complete."""
    shas = [c.id for c in event.commits if c.id]
    if forced:
        return None
    if len(shas) == TIMELINE_COMMITS_CAP or len(shas) >= WEBHOOK_COMMITS_CAP:
        shas = _compare_commits(event.repository.full_name, event.before, event.after,
                                settings) or []
    if not shas or shas[-1] != event.after:
        return None
    return shas


def _run_change(changeset: ChangeSet, settings: Settings, delivery: Delivery, *,
                ref: str | None = None, commits: list[str] | None = None) -> Run:
    """``relay.pipeline.run.run_change`` with reporting left to ``process_delivery``; accepts a
    ``RunOutcome`` (its ``.run``) or a bare ``Run`` as the result.  With a commit → environment
    resolver configured (``RELAY_COMMIT_ENV``) head and base run in their commits'
    environments and ``commits`` may be bisected; raises ``CommitEnvError`` when a commit's
    environment cannot be resolved."""
    from relay.envs.commits import from_settings
    from relay.pipeline.run import run_change  # lazy: the pipeline is a separate, heavier module

    regression: dict[str, object] = {}
    resolver = from_settings(settings)
    if resolver is not None:
        regression = {"head_env": resolver.resolve(changeset.head),
                      "base_env": resolver.resolve(changeset.base),
                      "commits": commits, "commit_env": resolver.resolve}
    result = run_change(changeset, settings=settings, trigger="webhook", delivery_id=delivery.id,
                        report=False, ref=ref, **regression)  # type: ignore[arg-type]
    return getattr(result, "run", result)


def on_pull_request(delivery: Delivery, settings: Settings) -> Run | None:
    """Run the pipeline on a PR's new head; other actions (closed, edited, ...) do nothing."""
    event = PullRequestEvent.model_validate(delivery.payload)
    if event.action not in PR_RUN_ACTIONS:
        log.info("delivery %s: pull_request action %r ignored", delivery.id, event.action)
        return None
    pr = event.pull_request
    repo = event.repository.full_name
    with GitHubClient.from_settings(settings) as github:
        files = github.list_pr_files(repo, event.number)
    changeset = ChangeSet(upstream=repo, base=pr.base.sha, head=pr.head.sha, title=pr.title,
                          labels=[label.name for label in pr.labels], files=files)
    ref = pr.base.ref if not pr.base.ref or pr.base.ref.startswith("refs/") \
        else f"refs/heads/{pr.base.ref}"
    return _run_change(changeset, settings, delivery, ref=ref or None)


def on_push(delivery: Delivery, settings: Settings) -> Run | None:
    """Run the pipeline on ``before..after`` of a push; branch creations/deletions skipped."""
    event = PushEvent.model_validate(delivery.payload)
    if event.deleted or event.after == _ZERO_SHA or event.before == _ZERO_SHA:
        log.info("delivery %s: push creating/deleting %s ignored", delivery.id, event.ref)
        return None
    commits = (push_commits(event, settings, forced=bool(delivery.payload.get("forced")))
               if settings.commit_env else None)
    return _run_change(push_changeset(event), settings, delivery, ref=event.ref, commits=commits)


HANDLERS: dict[str, Processor] = {"pull_request": on_pull_request, "push": on_push}

#: processing attempts of one delivery before a transient failure becomes ``failed``
MAX_ATTEMPTS = 5


def transient(exc: BaseException) -> bool:
    """A failure worth another attempt later: GitHub not answering (status 0), 429, or 5xx
    (the GitHub client has already retried those within the attempt), or a transport error."""
    import httpx

    from relay.errors import GitHubAPIError

    if isinstance(exc, GitHubAPIError):
        return exc.status_code in (0, 429) or exc.status_code >= 500
    return isinstance(exc, httpx.TransportError)


def retry_delay_s(attempts: int) -> float:
    """Seconds before attempt ``attempts + 1``: 30 s, 1 min, 2 min, 4 min, … at most 15 min."""
    return float(min(30 * 2 ** max(attempts - 1, 0), 900))


def default_processor(delivery: Delivery, settings: Settings) -> Run | None:
    """Dispatch ``delivery`` to ``HANDLERS[delivery.event]``; ``None`` for other events."""
    handler = HANDLERS.get(delivery.event)
    return handler(delivery, settings) if handler is not None else None


def process_delivery(
    delivery_id: str,
    *,
    session_factory: sessionmaker[Session],
    settings: Settings,
    processor: Processor,
    metrics: Any = None,
    report: Callable[[Session, Run, Delivery], None] | None = None,
    fanout: Callable[[Delivery], None] | None = None,
    retry: Callable[[str, float], None] | None = None,
) -> str | None:
    """Process one stored delivery; returns the final status (``received`` when a transient
    failure was handed to ``retry(delivery_id, delay_s)``), or ``None`` if it was not claimable
    (unknown id or already claimed).  Never raises for a processor error."""
    with session_factory() as session:
        if not claim_delivery(session, delivery_id):
            log.info("delivery %s not claimable (unknown or already taken)", delivery_id)
            return None
        delivery = load_delivery(session, delivery_id)
    assert delivery is not None
    run: Run | None = None
    fanout_error: str | None = None
    if fanout is not None:
        try:
            fanout(delivery)
        except Exception as exc:  # noqa: BLE001 - the local backend still runs
            log.exception("fan-out of delivery %s failed", delivery_id)
            fanout_error = f"fan-out: {type(exc).__name__}: {exc}"[:5_000]
    try:
        with session_factory() as session:
            run = run_for_delivery(session, delivery_id)  # stored before an interruption
        if run is not None:
            log.info("delivery %s: finishing with its stored run %s", delivery_id, run.id)
        else:
            log.info("delivery %s (%s): processing", delivery_id, delivery.event)
            run = processor(delivery, settings)
        status, error = "processed", fanout_error
    except Exception as exc:  # noqa: BLE001 - a failing processor must not lose the delivery
        status, error = "failed", f"{type(exc).__name__}: {exc}"[:10_000]
        if retry is not None and transient(exc) and delivery.attempts < MAX_ATTEMPTS:
            delay = retry_delay_s(delivery.attempts)
            status = "received"
            error = f"attempt {delivery.attempts} of {MAX_ATTEMPTS} failed, retried in {delay:g} s: {error}"
            log.warning("delivery %s: %s", delivery_id, error.splitlines()[0])
        else:
            if transient(exc):
                error = f"failed after {delivery.attempts} attempts: {error}"
            log.exception("delivery %s failed", delivery_id)

    def finish() -> None:
        """The run, its report (outbox) and the delivery's final state in ONE transaction."""
        with session_factory() as session:
            if run is not None and status == "processed":
                save_run(session, run, commit=False)
                if report is not None:
                    report(session, run, delivery)
            mark_delivery(session, delivery_id, status, error)

    retry_locked(finish)
    if status == "received" and retry is not None:
        retry(delivery_id, retry_delay_s(delivery.attempts))
    log.info("delivery %s: %s%s", delivery_id, status,
             f" (run {run.id}: {run.conclusion})" if run is not None else
             f": {error.splitlines()[0]}" if error else "")
    if run is not None and status == "processed" and run.trigger == "webhook":
        from relay.quarantine.policy import evaluate_safely  # HUD-style; logs, never raises

        evaluate_safely(session_factory, settings)
    if metrics is not None:
        from relay.service.metrics import event_label

        metrics.processed.labels(event_label(delivery.event), status).inc()
    return status
