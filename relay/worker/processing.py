"""Processing one stored delivery after the webhook was acknowledged.

``process_delivery`` is what a task queue calls, once per submission:

1. claim the row (``received`` → ``processing``; a delivery already claimed is skipped, so a
   duplicate submission runs once); when ``ignore(delivery)`` gives a reason (another repository
   than the upstream, an action CRCR does not act on — checked again here for deliveries stored
   before a settings change), it ends ``ignored`` with that reason and nothing else runs;
2. fan out (``fanout``: CRCR's repository_dispatch to the allowlisted downstreams); its failure
   is recorded on the dispatch rows and in the delivery's error, and the local backend still
   runs;
3. call the *processor* with a ``DeliverySink``; the pipeline hands it the finished run, which
   it stores together with the run's HUD outbox row (``report``) and the delivery's final state
   ``processed`` in ONE transaction.  A processor that returns a run it did not give to the sink
   has it stored the same way; one that returns ``None`` ran nothing; one that returns
   ``DEFERRED`` handed the run to other tasks (Celery shards), which finish the delivery — it
   stays ``processing`` until then;
4. on a processor error: a network-kind failure (GitHub unreachable, 5xx, 429 — see
   ``transient``) goes back to ``received`` and ``retry(delivery_id, delay_s)`` schedules it per
   ``relay.retrying.DELIVERY`` (5 attempts, 30 s doubling); anything else, or the last attempt,
   ends ``failed`` with the error — never lost;
5. after a webhook run, flaky-test quarantine is evaluated (``relay.quarantine.policy``; errors
   logged, never raised) and ``on_finished(delivery, status)`` is called (metrics).

Every log line carries the delivery id (``relay.logs``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

import httpx
from sqlalchemy.orm import Session, sessionmaker

from relay.domain.delivery import Delivery
from relay.domain.run import Run
from relay.errors import GitHubAPIError
from relay.logs import delivery_log
from relay.pipeline.ports import ResultSink
from relay.quarantine.policy import evaluate_safely
from relay.retrying import DELIVERY
from relay.settings import Settings
from relay.store.db import retry_locked
from relay.store.deliveries import claim_and_load, mark_delivery
from relay.store.runs import run_for_delivery, save_run
from relay.store.tables import utcnow

__all__ = ["Processor", "DeliverySink", "process_delivery", "transient", "retry_delay_s",
           "MAX_ATTEMPTS", "DEFERRED"]

log = logging.getLogger(__name__)

#: ``processor(delivery, settings, sink)`` runs the delivery's work; returns the run, ``None``
#: (nothing ran) or ``DEFERRED``.
Processor = Callable[[Delivery, Settings, ResultSink], object]
#: ``report(session, run, delivery)`` writes the run's HUD outbox row in the run's transaction.
Report = Callable[[Session, Run, Delivery], object]
#: what a processor returns when other tasks finish the delivery's run (it stays ``processing``)
DEFERRED = object()
#: processing attempts of one delivery before a transient failure becomes ``failed``
MAX_ATTEMPTS = DELIVERY.attempts


def transient(exc: BaseException) -> bool:
    """A failure worth another attempt later: GitHub not answering (status 0), 429, or 5xx
    (the GitHub client has already retried those within the attempt), or a transport error."""
    if isinstance(exc, GitHubAPIError):
        return exc.status_code in (0, 429) or exc.status_code >= 500
    return isinstance(exc, httpx.TransportError)


def retry_delay_s(attempts: int) -> float:
    """Seconds before attempt ``attempts + 1``: 30 s, 1 min, 2 min, 4 min, … at most 15 min."""
    return DELIVERY.delay(attempts)


class DeliverySink:
    """The ``ResultSink`` of a webhook run: the run, its report and the delivery's final state
    ``processed`` (with ``note``, e.g. a fan-out error) in one transaction; a second ``accept``
    of the same delivery is ignored (the run is stored once)."""

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

        def write() -> None:
            with self._sf() as session:
                save_run(session, run, commit=False)
                if self._report is not None:
                    self._report(session, run, self.delivery)
                mark_delivery(session, self.delivery.id, "processed", self.note)

        retry_locked(write)
        self.accepted = run
        return None


def _claim(session_factory: Callable[[], Session], delivery_id: str) -> Delivery | None:
    with session_factory() as session:
        return claim_and_load(session, delivery_id)


def _failure(exc: Exception, delivery: Delivery, retry: Callable[[str, float], None] | None
             ) -> tuple[str, str]:
    """``(status, error)`` after a processing error: ``received`` (retried later) or ``failed``."""
    error = f"{type(exc).__name__}: {exc}"[:10_000]
    if retry is not None and transient(exc) and delivery.attempts < MAX_ATTEMPTS:
        delay = retry_delay_s(delivery.attempts)
        return "received", (f"attempt {delivery.attempts} of {MAX_ATTEMPTS} failed, retried in "
                            f"{delay:g} s: {error}")
    if transient(exc):
        error = f"failed after {delivery.attempts} attempts: {error}"
    return "failed", error


def process_delivery(
    delivery_id: str,
    *,
    session_factory: sessionmaker[Session],
    settings: Settings,
    processor: Processor,
    report: Report | None = None,
    fanout: Callable[[Delivery], None] | None = None,
    retry: Callable[[str, float], None] | None = None,
    on_finished: Callable[[Delivery, str], None] | None = None,
    ignore: Callable[[Delivery], str | None] | None = None,
) -> str | None:
    """Process one stored delivery (see the module docstring); returns the final status
    (``received`` when a transient failure was handed to ``retry``), or ``None`` if it was not
    claimable (unknown id or already claimed).  Never raises for a processor error."""
    dlog = delivery_log(log, delivery_id)
    delivery = _claim(session_factory, delivery_id)
    if delivery is None:
        dlog.info("not claimable (unknown or already taken)")
        return None
    reason = ignore(delivery) if ignore is not None else None
    if reason is not None:
        retry_locked(lambda: _mark(session_factory, delivery_id, "ignored", reason))
        dlog.info("ignored: %s", reason)
        if on_finished is not None:
            on_finished(delivery, "ignored")
        return "ignored"
    note = fan_out_safely(delivery, fanout)
    sink = DeliverySink(delivery, session_factory, report, note)
    run: Run | None = None
    dlog.info("%s: processing (attempt %d)", delivery.event, delivery.attempts)
    try:
        result = _stored_run(session_factory, delivery_id) or processor(delivery, settings, sink)
        if result is DEFERRED:
            dlog.info("run continues in other tasks; the delivery stays processing")
            return "processing"
        run = result
        if run is not None:
            sink.accept(run)  # ignored when the pipeline gave it to the sink already
        status, error = "processed", note
    except Exception as exc:  # noqa: BLE001 - a failing processor must not lose the delivery
        status, error = _failure(exc, delivery, retry)
        if sink.accepted is not None:  # the run is stored: an error after that changes nothing
            dlog.exception("error after the run was stored")
            status, error = "processed", note
        elif status == "received":
            dlog.warning("%s", error.splitlines()[0])
        else:
            dlog.exception("failed")
    due = retry_delay_s(delivery.attempts) if status == "received" and retry is not None else None
    if sink.accepted is None:
        retry_locked(lambda: _mark(session_factory, delivery_id, status, error, due))
    if due is not None:
        retry(delivery_id, due)
    dlog.info("%s%s", status, f" (run {run.id}: {run.conclusion})" if run is not None else
              f": {error.splitlines()[0]}" if error else "")
    if run is not None and status == "processed" and run.trigger == "webhook":
        evaluate_safely(session_factory, settings)  # HUD-style quarantine; logs, never raises
    if on_finished is not None:
        on_finished(delivery, status)
    return status


def _stored_run(session_factory: Callable[[], Session], delivery_id: str) -> Run | None:
    """The run already stored for ``delivery_id`` (a delivery reset to ``received`` by hand or
    by an older relay after its run was saved): finished with it, never run twice."""
    with session_factory() as session:
        run = run_for_delivery(session, delivery_id)
    if run is not None:
        delivery_log(log, delivery_id).info("finishing with its stored run %s", run.id)
    return run


def _mark(session_factory: Callable[[], Session], delivery_id: str, status: str,
          error: str | None, retry_in_s: float | None = None) -> None:
    """Record the final (or, with ``retry_in_s``, the retried) state; the retry's due time is
    stored for the deliveries page."""
    due = utcnow() + timedelta(seconds=retry_in_s) if retry_in_s is not None else None
    with session_factory() as session:
        mark_delivery(session, delivery_id, status, error, next_attempt_at=due)


def fan_out_safely(delivery: Delivery, fanout: Callable[[Delivery], None] | None) -> str | None:
    """Run ``fanout(delivery)``; its failure is returned as the delivery's note, never raised
    (the local backend still runs)."""
    if fanout is None:
        return None
    try:
        fanout(delivery)
    except Exception as exc:  # noqa: BLE001 - the local backend still runs
        delivery_log(log, delivery.id).exception("fan-out failed")
        return f"fan-out: {type(exc).__name__}: {exc}"[:5_000]
    return None
