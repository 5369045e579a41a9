"""Processing one stored delivery after the webhook was acknowledged.

The invariant (issue 17): every claimed delivery ends ``processed``, ``ignored`` or ``failed``
with its error — or goes back to ``received`` with a retry due — whatever its content; only a
database that is gone under the attempt leaves it ``processing``, for recovery
(``relay.service.recovery``) to run again once the database is back.

``process_delivery`` is what a task queue calls, once per submission (``process_deliveries``
for a batch of them: one claim transaction for the batch, the final states collected and written
together — ``relay.worker.marks``), with a ``relay.worker.job.DeliveryJob`` holding the pieces
named below.  States are ``relay.domain.delivery.DeliveryStatus``; what an attempt comes to
besides a state (``DONE``, ``DEFERRED``, ``INTERRUPTED``) is ``relay.worker.job.AttemptResult``:

1. claim the row (``received`` → ``processing``; a delivery already claimed is skipped, so a
   duplicate submission runs once); a stored payload that cannot be used (nested deeper than
   ``relay.domain.jsonlimits.MAX_DEPTH``, not an object) ends ``failed`` at once; when
   ``ignore(delivery)`` gives a reason (another repository than the upstream, an action CRCR
   does not act on — checked again here for deliveries stored before a settings change), it
   ends ``ignored`` with that reason and nothing else runs; then its payload is parsed, once,
   into its typed event (``relay.github.events.parse_delivery``) that every later step reads — a
   payload that is not the shape GitHub sends for its event (``labels: ["x"]``,
   ``number: 10**30``) ends ``failed`` with the fields named; permanent failures are never
   retried, and logged in one line, without a traceback;
2. fan out (``fanout``: CRCR's repository_dispatch to the allowlisted downstreams).  GitHub
   still down / rate-limiting after the client's retries (``DispatchPending``) is transient: the
   delivery goes back to ``received`` and is retried (sent rows are not sent again); any other
   fan-out error ends the delivery ``failed`` with ``fan-out: <error>``; the local backend
   runs only after a complete fan-out;
3. call the *processor* with a ``DeliverySink``; the pipeline hands it the finished run, which
   it stores together with the run's HUD outbox row (``report``) and the delivery's final state
   ``processed`` in ONE transaction.  A processor that returns a run it did not give to the sink
   has it stored the same way; one that returns ``None`` ran nothing; one that returns
   ``AttemptResult.DEFERRED`` handed the run to other tasks (Celery shards), which finish the
   delivery — it stays ``processing`` until then;
4. on a processor error: a network-kind failure (GitHub unreachable, 5xx, 429 — see
   ``transient``; the database dropping the connection — ``transient_db``) goes back to
   ``received`` and ``retry(delivery_id, delay_s)`` schedules it per ``relay.retrying.DELIVERY``
   (5 attempts, 30 s doubling; the first wait is ``RELAY_DELIVERY_RETRY_S``); anything else,
   or the last attempt, ends ``failed`` with the error — never lost;
5. a final state also ends the delivery's dispatch rows still ``pending`` (``failed``); after a
   webhook run, flaky-test quarantine is evaluated (``relay.quarantine.policy``; errors logged,
   never raised) and ``on_finished(delivery, status)`` is called (metrics).

Every log line carries the delivery id (``relay.logs``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

import httpx
from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError
from sqlalchemy.orm import Session

from relay.domain.delivery import Delivery, DeliveryStatus
from relay.domain.run import Run
from relay.errors import DatabaseFileGone, GitHubAPIError, PayloadInvalid
from relay.github.events import ParsedDelivery, parse_delivery
from relay.logs import delivery_log
from relay.quarantine.policy import evaluate_safely
from relay.retrying import DELIVERY
from relay.store.db import retry_locked
from relay.store.deliveries import claim_many, finish_processing, mark_delivery
from relay.store.runs import run_for_delivery, save_run
from relay.store.tables import utcnow
from relay.worker.job import AttemptResult, DeliveryJob, Outcome, Report, Retry
from relay.worker.lease import Heartbeat
from relay.worker.marks import Marks

__all__ = ["DeliverySink", "process_delivery", "process_deliveries", "transient", "transient_db",
           "retry_delay_s", "MAX_ATTEMPTS"]

log = logging.getLogger(__name__)

#: processing attempts of one delivery before a transient failure becomes ``failed``
MAX_ATTEMPTS = DELIVERY.attempts
#: what the processor's part of an attempt came to: stored already (``DONE``), left to other
#: tasks (``DEFERRED``), or a state still to record with its error
_RunResult = tuple[DeliveryStatus | AttemptResult, str | None]


def transient(exc: BaseException) -> bool:
    """A failure worth another attempt later: GitHub not answering (status 0), 429, or 5xx
    (the GitHub client has already retried those within the attempt), or a transport error."""
    if isinstance(exc, GitHubAPIError):
        return exc.transient
    return isinstance(exc, httpx.TransportError)


def retry_delay_s(attempts: int) -> float:
    """Seconds before attempt ``attempts + 1``: 30 s, 1 min, 2 min, 4 min, … at most 15 min."""
    return DELIVERY.delay(attempts)


def _delay_s(attempts: int, first_s: float | None) -> float:
    """``retry_delay_s`` with the first wait ``first_s`` (``RELAY_DELIVERY_RETRY_S``)."""
    if first_s is None or first_s == DELIVERY.first_s:
        return retry_delay_s(attempts)
    return float(min(first_s * 2 ** max(attempts - 1, 0), DELIVERY.max_s))


class DeliverySink:
    """The ``ResultSink`` of a webhook run: the run, its report and the delivery's final state
    ``processed`` (with ``note`` as its error text, if any) in one transaction; a second ``accept``
    of the same delivery is ignored, and so is a run of a delivery another attempt already
    finished (``finish_processing``) or whose run is stored already (the runs' unique key
    ``uq_runs_webhook_delivery``): the run is stored once."""

    def __init__(self, delivery: Delivery, session_factory: Callable[[], Session],
                 report: Report | None = None, note: str | None = None) -> None:
        self.delivery = delivery
        self._sf = session_factory
        self._report = report
        self.note = note
        self.accepted: Run | None = None

    def accept(self, run: Run) -> str | None:
        if self.accepted is not None:
            return None

        def write() -> bool:
            with self._sf() as session:
                if not finish_processing(session, self.delivery.id, DeliveryStatus.PROCESSED,
                                         self.note):
                    session.rollback()
                    return False
                try:
                    save_run(session, run, commit=False)
                except IntegrityError:  # the delivery's run is stored already (its key)
                    session.rollback()
                    return False
                if self._report is not None:
                    self._report(session, run, self.delivery)
                session.commit()
                return True

        if not retry_locked(write):
            delivery_log(log, self.delivery.id).warning(
                "already finished by another attempt; run %s is not stored again", run.id)
        self.accepted = run
        return None


def transient_db(exc: BaseException) -> bool:
    """The database went away under the attempt (PostgreSQL restarting, a dropped connection):
    worth another attempt once it is back."""
    return isinstance(exc, (OperationalError, InterfaceError, DatabaseFileGone))


def _failure(exc: Exception, delivery: Delivery, retry: Retry | None,
             first_s: float | None = None) -> tuple[DeliveryStatus, str]:
    """``(status, error)`` after a processing error: ``received`` (retried later) or ``failed``."""
    error = f"{type(exc).__name__}: {exc}"[:10_000]
    again = transient(exc) or transient_db(exc)
    if retry is not None and again and delivery.attempts < MAX_ATTEMPTS:
        delay = _delay_s(delivery.attempts, first_s)
        return DeliveryStatus.RECEIVED, (f"attempt {delivery.attempts} of {MAX_ATTEMPTS} failed, "
                                         f"retried in {delay:g} s: {error}")
    if again:
        error = f"failed after {delivery.attempts} attempts: {error}"
    return DeliveryStatus.FAILED, error


def _give_up(marks: Marks, delivery_id: str, error: str) -> DeliveryStatus:
    """End a claimed delivery ``failed`` with ``error`` (and its pending dispatches)."""
    marks.add(delivery_id, DeliveryStatus.FAILED, error)
    delivery_log(log, delivery_id).warning("failed: %s", error.splitlines()[0][:500])
    return DeliveryStatus.FAILED


def process_delivery(delivery_id: str, job: DeliveryJob) -> Outcome:
    """Process one stored delivery (see the module docstring): ``process_deliveries`` of
    ``[delivery_id]``; returns its status (``received`` when a transient failure was handed to
    ``job.retry``), ``AttemptResult.INTERRUPTED``, or ``None`` if it was not claimable (unknown
    id or already claimed)."""
    return process_deliveries([delivery_id], job)[delivery_id]


def process_deliveries(ids: list[str], job: DeliveryJob) -> dict[str, Outcome]:
    """Process stored deliveries, in order: ONE claim transaction for all of ``ids``
    (``claim_many``), then each claimed one as the module docstring says, their final states
    collected and written in one transaction (``relay.worker.marks``) — before any delivery
    ``job.long_running`` says will run long (a pipeline run), and at the end.  Returns each id's
    outcome as ``process_delivery`` does (``INTERRUPTED`` when the database went away before its
    state was written).  Never raises for a processor error; an unexpected error after the claim
    ends that delivery ``failed`` with it.  ``job.on_finished`` is called once its state is
    stored."""
    ids = list(dict.fromkeys(ids))  # a delivery submitted twice in one batch runs once
    lease_s = job.settings.lease_s
    with job.session_factory() as session:
        claimed = claim_many(session, ids, lease_s)
    with Heartbeat(job.session_factory, list(claimed), lease_s):  # keeps them ours while we work
        return _process_claimed_batch(ids, claimed, job)


def _process_claimed_batch(ids: list[str], claimed: dict[str, Delivery | PayloadInvalid],
                           job: DeliveryJob) -> dict[str, Outcome]:
    marks = Marks(job.session_factory)
    outcomes: dict[str, Outcome] = {}
    finished: list[tuple[Delivery, DeliveryStatus]] = []
    for delivery_id in ids:
        item = claimed.get(delivery_id)
        if item is None:
            delivery_log(log, delivery_id).info("not claimable (unknown or already taken)")
            outcomes[delivery_id] = None
            continue
        if isinstance(item, PayloadInvalid):
            outcomes[delivery_id] = _give_up(marks, delivery_id, f"PayloadInvalid: {item}")
            continue
        if len(marks) and job.long_running is not None and job.long_running(item):
            _flush(marks, outcomes)
        outcome = _attempt(item, marks, job)
        outcomes[delivery_id] = outcome
        if isinstance(outcome, DeliveryStatus) and outcome is not DeliveryStatus.PROCESSING:
            finished.append((item, outcome))  # processing (deferred): other tasks finish it
    _flush(marks, outcomes)
    for delivery, status in finished:
        if job.on_finished is not None and outcomes[delivery.id] is not AttemptResult.INTERRUPTED:
            job.on_finished(delivery, status)
    return outcomes


def _flush(marks: Marks, outcomes: dict[str, Outcome]) -> None:
    """Write the collected final states; when the database is gone, their deliveries are
    ``INTERRUPTED`` (still ``processing``: recovery runs them again)."""
    try:
        marks.flush()
    except Exception as exc:
        if not transient_db(exc):
            raise
        log.warning("database unavailable (%s) writing %d final states; recovery runs them "
                    "again", type(exc).__name__, len(marks))
        for delivery_id, _status, _error in marks.drop():
            outcomes[delivery_id] = AttemptResult.INTERRUPTED


def _attempt(delivery: Delivery, marks: Marks, job: DeliveryJob) -> DeliveryStatus | AttemptResult:
    """One claimed delivery; its status (``INTERRUPTED`` when the database went away)."""
    try:
        return _process_claimed(delivery, marks, job)
    except Exception as exc:  # noqa: BLE001 - a bug after the claim must not leave it processing
        dlog = delivery_log(log, delivery.id)
        if transient_db(exc):
            dlog.warning("database unavailable (%s); recovery runs it again", type(exc).__name__)
            return AttemptResult.INTERRUPTED
        dlog.exception("processing crashed")
        return _give_up(marks, delivery.id, f"internal error: {type(exc).__name__}: {exc}")


def _process_claimed(claimed: Delivery, marks: Marks, job: DeliveryJob) -> DeliveryStatus:
    delivery_id = claimed.id
    dlog = delivery_log(log, delivery_id)
    reason = job.ignore(claimed) if job.ignore is not None else None
    if reason is not None:
        marks.add(delivery_id, DeliveryStatus.IGNORED, reason)
        dlog.info("ignored: %s", reason)
        return DeliveryStatus.IGNORED
    try:
        delivery = parse_delivery(claimed)
    except PayloadInvalid as exc:  # the same bytes fail every attempt: failed now, never retried
        return _give_up(marks, delivery_id, f"PayloadInvalid: {exc}")
    first_s = job.settings.delivery_retry_s
    status: DeliveryStatus | AttemptResult
    try:
        if job.fanout is not None:
            job.fanout(delivery)
    except Exception as exc:  # noqa: BLE001 - recorded on the delivery, never lost
        status, error = _failure(exc, delivery, job.retry, first_s)
        error = f"fan-out: {error}"
        if isinstance(exc, GitHubAPIError) and not transient(exc):
            dlog.error("%s", error[:500])  # GitHub refused (4xx): the answer says it all
        elif not (transient(exc) or transient_db(exc)):
            dlog.exception("fan-out failed")  # a bug: its traceback helps
    else:
        status, error = _run(delivery, job, first_s)
        if status is AttemptResult.DONE:
            return DeliveryStatus.PROCESSED
        if status is AttemptResult.DEFERRED:
            return DeliveryStatus.PROCESSING
    assert isinstance(status, DeliveryStatus)
    if status is DeliveryStatus.RECEIVED and job.retry is not None:  # committed before it is due
        due = _delay_s(delivery.attempts, first_s)
        retry_locked(lambda: _mark_retry(job.session_factory, delivery_id, error or "", due))
        dlog.warning("%s", (error or "").splitlines()[0][:500])
        job.retry(delivery_id, due)
    else:
        marks.add(delivery_id, status, error)
    dlog.info("%s: %s", status, error.splitlines()[0][:500] if error else "")
    return status


def _run(delivery: ParsedDelivery, job: DeliveryJob, first_s: float) -> _RunResult:
    """The processor's part: ``(DONE, None)`` when the run and the delivery's final state are
    stored, ``(DEFERRED, None)`` when other tasks finish it, else ``(status, error)`` still to
    be recorded."""
    delivery_id = delivery.id
    dlog = delivery_log(log, delivery_id)
    sink = DeliverySink(delivery, job.session_factory, job.report)
    dlog.info("%s: processing (attempt %d)", delivery.event, delivery.attempts)
    try:
        # a stored run means an earlier claim of this delivery (claims count attempts and
        # nothing resets the count), so a first attempt need not look for one
        stored = _stored_run(job.session_factory, delivery_id) if delivery.attempts > 1 else None
        result = stored or job.processor(delivery, job.settings, sink)
        if result is AttemptResult.DEFERRED:
            dlog.info("run continues in other tasks; the delivery stays processing")
            return AttemptResult.DEFERRED, None
        if isinstance(result, Run):
            sink.accept(result)  # ignored when the pipeline gave it to the sink already
    except Exception as exc:  # noqa: BLE001 - a failing processor must not lose the delivery
        if sink.accepted is not None:  # the run is stored: an error after that changes nothing
            dlog.exception("error after the run was stored")
            return AttemptResult.DONE, None
        status, error = _failure(exc, delivery, job.retry, first_s)
        if status is DeliveryStatus.FAILED and not isinstance(exc, (PayloadInvalid, ValidationError)):
            dlog.exception("failed")
        return status, error
    if sink.accepted is None:  # no run; the processor may have said why (``sink.note``)
        return DeliveryStatus.PROCESSED, sink.note
    run = sink.accepted
    dlog.info("processed (run %s: %s)", run.id, run.conclusion)
    if run.trigger == "webhook":
        evaluate_safely(job.session_factory, job.settings)  # HUD-style quarantine; never raises
    return AttemptResult.DONE, None


def _stored_run(session_factory: Callable[[], Session], delivery_id: str) -> Run | None:
    """The run already stored for ``delivery_id`` (a delivery reset to ``received`` by hand or
    by an older relay after its run was saved): finished with it, never run twice."""
    with session_factory() as session:
        run = run_for_delivery(session, delivery_id)
    if run is not None:
        delivery_log(log, delivery_id).info("finishing with its stored run %s", run.id)
    return run


def _mark_retry(session_factory: Callable[[], Session], delivery_id: str, error: str,
                retry_in_s: float) -> None:
    """Put a claimed delivery back to ``received`` with ``error`` and the retry's due time (shown
    on the deliveries page); committed before the retry is scheduled.  Final states go through
    ``relay.worker.marks`` (which also ends the delivery's pending dispatch rows)."""
    with session_factory() as session:
        mark_delivery(session, delivery_id, DeliveryStatus.RECEIVED, error,
                      next_attempt_at=utcnow() + timedelta(seconds=retry_in_s))
