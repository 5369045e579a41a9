"""What processing a delivery means for this relay, in one place for every worker kind.

``DeliveryWork`` puts together, around ``relay.worker.processing.process_deliveries``:

* the filter (``ignored``: only the upstream repository's events that CRCR acts on;
  ``relay.github.webhooks.ignored_reason``);
* the parts of the delivery's entry in the one handler table (``relay.worker.handlers.HANDLERS``),
  each given the typed event ``relay.worker.processing`` parsed once: the CRCR fan-out
  (``fanout``: repository_dispatch to the allowlisted downstreams, or the L3 check runs a
  ``ciflow/crcr/<device>`` label starts); a rerequested crcr check run / suite re-runs the
  downstream run as the delivery's work (``rerun``); the local backend's run (``request``: the
  ``RunRequest`` a delivery asks for, when the local backend is on the allowlist;
  ``processor``: that request through ``run_change`` in this process);
* its report (``report``: the HUD outbox row, written in the run's transaction when the local
  backend's level reports to the dashboard — L2–L4, as CRCR).

The in-process queue (``relay.service.factory``) calls ``process``; the Celery tasks
(``relay.worker.celery.tasks``) use the same pieces around a chord of shards.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from relay.changes.inputs import spec_files
from relay.crcr.allowlist import AllowlistProvider, allowlist_source
from relay.crcr.fanout import FanoutContext
from relay.domain.delivery import Delivery, DeliveryStatus
from relay.domain.run import Run
from relay.envs.commits import resolver_for
from relay.github.client import GitHubClient
from relay.github.events import ParsedDelivery
from relay.github.webhooks import ignored_reason
from relay.logs import delivery_log
from relay.pipeline.local import LocalExecutors
from relay.pipeline.ports import ExecutorFactory, Ports, Progress, ResultSink
from relay.pipeline.request import RunConfig, RunRequest
from relay.pipeline.run import run_change
from relay.pipeline.specs import default_specs
from relay.reporting.outbox import enqueue_result
from relay.settings import Settings
from relay.store.deliveries import events_of
from relay.store.durations import durations_from_db
from relay.store.run_store import SqlRunStore
from relay.store.supersede import newer_head
from relay.worker.handlers import HANDLERS, EventHandler
from relay.worker.job import AttemptResult, DeliveryJob, Outcome, Processor, Retry
from relay.worker.processing import DeliverySink, process_deliveries
from relay.worker.progress import DeliveryProgress

__all__ = ["DeliveryWork", "run_config"]

log = logging.getLogger(__name__)


def run_config(settings: Settings) -> RunConfig:
    """How a webhook run executes: the specs of ``RELAY_SPECS`` (default the bundled ones), this
    relay's backend and state dir, every core (``RunConfig.shards``), the tests longest first by
    the stored durations.  Raises ``InputError`` for a spec path that does not exist."""
    specs = (spec_files([Path(p.strip()) for p in settings.specs.split(",") if p.strip()])
             if settings.specs else default_specs())
    return RunConfig(spec_paths=tuple(specs), state_dir=settings.state_dir, backend=settings.backend,
                     durations=lambda: durations_from_db(settings.database_url))


def _handler(delivery: ParsedDelivery) -> EventHandler[Any] | None:
    """The ``HANDLERS`` entry of a typed delivery (``None``: no entry, or no typed event)."""
    return HANDLERS.get(delivery.event) if delivery.typed is not None else None


class DeliveryWork:
    """The fan-out, local run and report of deliveries for ``settings`` (see the module
    docstring).  ``processor`` replaces the local run (tests); ``allowlist`` (its source:
    ``get``, ``refresh``) defaults to ``RELAY_ALLOWLIST``'s; ``on_outbox`` is called after a
    transaction wrote outbox rows (wakes the deliverer).  Raises ``AllowlistError`` when the
    allowlist cannot be loaded."""

    def __init__(self, settings: Settings, session_factory: sessionmaker[Session], *,
                 processor: Processor | None = None,
                 allowlist: AllowlistProvider | None = None,
                 on_outbox: Callable[[], None] | None = None) -> None:
        self.settings = settings
        self.sf = session_factory
        self.allowlist = allowlist or allowlist_source(settings.allowlist, settings.backend,
                                                       refresh_s=settings.allowlist_refresh_s)
        self._processor = processor
        self._on_outbox = on_outbox or (lambda: None)
        self._fanout_ctx = FanoutContext(session_factory, settings, self.allowlist.get,
                                         lambda: GitHubClient.from_settings(settings))

    def level(self) -> str | None:
        """The local backend's allowlist level (``None``: not listed, nothing runs locally)."""
        entry = self.allowlist.get().get(self.settings.backend)
        return entry.level if entry is not None else None

    def ignored(self, delivery: Delivery) -> str | None:
        """Why ``delivery`` is not processed (another repository, an action CRCR ignores)."""
        return ignored_reason(delivery.event, delivery.payload, self.settings.upstream_repo)

    def fanout(self, delivery: ParsedDelivery) -> None:
        """CRCR fan-out of ``delivery`` and the L3 checks a label starts (its handler's
        ``fanout``); wakes the outbox deliverer when checks were queued."""
        handler = _handler(delivery)
        if handler is None or handler.fanout is None:
            return
        if handler.fanout(delivery.typed, delivery, self._fanout_ctx).checks_queued:
            self._on_outbox()

    def report(self, session: Session, run: Run, delivery: Delivery) -> bool:
        """The run's HUD outbox row in ``session`` (the run's transaction); whether one was written."""
        return enqueue_result(session, run, delivery, self.settings, self.level())

    def request(self, delivery: ParsedDelivery) -> RunRequest | None:
        """The local run ``delivery`` asks for (its handler's ``run``), or ``None`` (not
        allowlisted, nothing to run).  Raises ``GitHubAPIError`` and ``CommitEnvError``."""
        handler = _handler(delivery)
        if self.level() is None or handler is None or handler.run is None:
            return None
        return handler.run(delivery.typed, delivery.id, self.settings)

    def ports(self, sink: ResultSink, executors: ExecutorFactory, progress: Progress | None = None) -> Ports:
        """The pipeline's ports for one webhook run (``progress``: default none reported)."""
        resolver = resolver_for(self.settings.commit_env)
        store = SqlRunStore(self.sf, main_ref=self.settings.quarantine_main_ref)
        return Ports(executors=executors, store=store, sink=sink, progress=progress or Progress(),
                     commit_env=resolver.resolve if resolver is not None else None)

    def run_locally(self, delivery: ParsedDelivery, settings: Settings, sink: ResultSink) -> Run | None:
        """The default processor: the delivery's run through the whole pipeline, in this process
        (a relay with a broker sends deliveries to Celery workers instead)."""
        request = self.request(delivery)
        if request is None:
            return None
        config = run_config(settings)
        progress = DeliveryProgress(self.sf, delivery.id)  # the deliveries page shows it
        return run_change(request, config, self.ports(sink, LocalExecutors.for_config(config), progress)).run

    def rerun(self, delivery: ParsedDelivery) -> bool:
        """For a rerequested check run / suite (its handler's ``rerun``): re-run the downstream
        runs it names (CRCR) and ``True`` (nothing runs locally); ``False`` for other events.
        Raises ``GitHubAPIError``."""
        handler = _handler(delivery)
        if handler is None or handler.rerun is None:
            return False
        handler.rerun(delivery.typed, self._fanout_ctx)
        return True

    def superseded(self, delivery: Delivery, sink: ResultSink) -> bool:
        """Whether a later delivery asks for a newer head of ``delivery``'s PR
        (``relay.store.supersede``): then its local run is skipped, and the note on the
        delivery (``sink.note``) names the newer head."""
        with self.sf() as session:
            newer = newer_head(session, delivery.id)
        if newer is None:
            return False
        note = f"superseded: local run skipped, head {newer[0]} is newer (delivery {newer[1]})"
        if isinstance(sink, DeliverySink):
            sink.note = note
        delivery_log(log, delivery.id).info("%s", note)
        return True

    def _local(self, delivery: ParsedDelivery, settings: Settings, sink: ResultSink
               ) -> Run | AttemptResult | None:
        if self.rerun(delivery) or self.superseded(delivery, sink):
            return None
        if self._processor is None:
            return self.run_locally(delivery, settings, sink)
        return self._processor(delivery, settings, sink) if self.level() is not None else None

    def long_running(self, event: str) -> bool:
        """Whether a delivery of ``event`` may keep its worker for long: a local pipeline run
        (minutes), a fan-out to downstreams (GitHub calls) or a CRCR re-run.  A batch runs at
        most one such delivery, after its quick ones (``process_many``)."""
        handler = HANDLERS.get(event)
        runs_here = handler is not None and (
            handler.rerun is not None or (handler.run is not None and self.level() is not None))
        return runs_here or bool(self.allowlist.get().external())

    def process(self, delivery_id: str, *, retry: Retry | None = None, report: bool = True,
                on_finished: Callable[[Delivery, DeliveryStatus], None] | None = None) -> Outcome:
        """``process_many`` of one delivery; returns its outcome."""
        return self.process_many([delivery_id], retry=retry, report=report,
                                 on_finished=on_finished)[delivery_id]

    def process_many(self, ids: list[str], *, retry: Retry | None = None, report: bool = True,
                     on_finished: Callable[[Delivery, DeliveryStatus], None] | None = None,
                     give_back: Callable[[list[str]], None] | None = None) -> dict[str, Outcome]:
        """``process_deliveries`` with this relay's pieces (a ``DeliveryJob``): the quick
        deliveries of ``ids`` (one claim and one final-state transaction for all of them), then at
        most one that may run long (``long_running``) — so that no delivery waits behind another's
        pipeline run.  The other ones go to ``give_back`` (unclaimed, for another worker) before
        any work starts.  ``retry`` schedules a transient failure's next attempt; ``report``:
        write each run's HUD outbox row.  Returns each processed id's outcome.  When a run's
        transaction wrote an outbox row, ``on_outbox`` is called after it committed."""
        if len(ids) > 1 and give_back is not None:
            with self.sf() as session:
                events = events_of(session, ids)
            slow = [i for i in ids if i in events and self.long_running(events[i])]
            ids = [i for i in ids if i not in slow] + slow[:1]
            give_back(slow[1:])
        wrote: list[bool] = []

        def report_and_note(session: Session, run: Run, delivery: Delivery) -> None:
            wrote.append(self.report(session, run, delivery))

        outcomes = process_deliveries(ids, DeliveryJob(
            session_factory=self.sf, settings=self.settings, processor=self._local,
            report=report_and_note if report else None, fanout=self.fanout, retry=retry,
            ignore=self.ignored, long_running=lambda delivery: self.long_running(delivery.event),
            on_finished=on_finished))
        if any(wrote):
            self._on_outbox()
        return outcomes
