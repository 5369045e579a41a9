"""``DeliveryJob``: what processing a batch of stored deliveries needs, as one value, and
``AttemptResult``: what an attempt can come to besides a stored ``DeliveryStatus``.

Built by the code that submits work (``relay.worker.delivery.DeliveryWork`` for the in-process
queue, ``relay.worker.celery.runs.start`` for a Celery worker) and passed whole down
``relay.worker.processing`` (``process_deliveries`` → ``_attempt`` → ``_process_claimed`` →
``_run``); nothing in it changes while a batch is processed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy.orm import Session, sessionmaker

from relay.domain.delivery import Delivery, DeliveryStatus
from relay.domain.run import Run
from relay.github.events import ParsedDelivery
from relay.pipeline.ports import ResultSink
from relay.settings import Settings

__all__ = ["AttemptResult", "DeliveryJob", "Processor", "Report", "Retry", "Outcome"]


class AttemptResult(StrEnum):
    """What an attempt came to when it is not (only) a state to store — never stored.

    ``DONE``: the run and the delivery's final state ``processed`` are stored already (one
    transaction, ``DeliverySink``).  ``DEFERRED``: the processor handed the run to other tasks
    (Celery shards), which finish the delivery; it stays ``processing`` until then.
    ``INTERRUPTED``: the database went away under the attempt; the row may still be
    ``processing`` and recovery (or the Celery task's retry) runs it again."""

    DONE = "done"
    DEFERRED = "deferred"
    INTERRUPTED = "interrupted"


#: ``processor(delivery, settings, sink)`` runs the delivery's work: returns the run, ``None``
#: (nothing ran) or ``AttemptResult.DEFERRED``
Processor = Callable[[ParsedDelivery, Settings, ResultSink], "Run | AttemptResult | None"]
#: ``report(session, run, delivery)`` writes the run's HUD outbox row in the run's transaction
Report = Callable[[Session, Run, Delivery], object]
#: ``retry(delivery_id, delay_s)`` submits the delivery again after ``delay_s`` seconds
Retry = Callable[[str, float], None]
#: what ``process_deliveries`` reports per id: the state the attempt left (``received`` when a
#: retry is scheduled, ``processing`` when deferred), ``INTERRUPTED``, or ``None`` (not claimable)
Outcome = DeliveryStatus | AttemptResult | None


@dataclass(frozen=True)
class DeliveryJob:
    """What processing deliveries needs (``relay.worker.processing``'s steps):

    ``session_factory`` the store; ``settings`` the relay's (first retry delay, quarantine);
    ``processor`` the delivery's work (step 3); ``report`` the run's HUD outbox row, in the run's
    transaction (``None``: none); ``fanout`` CRCR's fan-out before the work (step 2; ``None``:
    none); ``retry`` schedules a transient failure's next attempt (``None``: it ends ``failed``);
    ``ignore(delivery)`` → why it is not processed, or ``None``; ``long_running(delivery)`` →
    whether it may keep the worker for long (the final states collected so far are written
    before it starts); ``on_finished(delivery, status)`` is called once its final state is
    stored (metrics)."""

    session_factory: sessionmaker[Session]
    settings: Settings
    processor: Processor
    report: Report | None = None
    fanout: Callable[[ParsedDelivery], None] | None = None
    retry: Retry | None = None
    ignore: Callable[[Delivery], str | None] | None = None
    long_running: Callable[[Delivery], bool] | None = None
    on_finished: Callable[[Delivery, DeliveryStatus], None] | None = None
