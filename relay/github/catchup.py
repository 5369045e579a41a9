"""Catch up on webhook deliveries that GitHub could not hand to the relay while it was down.

GitHub does not retry a failed delivery by itself; it keeps every attempt listed for 3 days and
redelivers one on request (GitHub docs, "Handling failed webhook deliveries"; design §6).  A
relay that was down (connection refused, timeouts) or answered errors (5xx) therefore asks:

1. the window: from the newest delivery stored for the hook (``deliveries.received_at``) less
   ``CATCHUP_MARGIN``, or from 3 days ago (``DELIVERY_WINDOW``) — whichever is later; an
   explicit ``since`` replaces the stored time (still no earlier than 3 days ago);
2. every attempt of the hook in that window (``relay.github.hook_deliveries``), grouped by
   ``guid`` (= ``X-GitHub-Delivery``, shared by an event's redeliveries);
3. per guid: already stored by the relay → skipped (the relay's UNIQUE ``delivery_id`` would
   answer "duplicate" anyway); newest attempt answered 2xx but not stored here (another relay
   instance, a database since replaced) → skipped and reported; newest attempt failed
   (``status_code`` not 2xx, 0 for no answer) → redelivered exactly once, oldest event first
   so a pull request's events arrive in their order.

A redelivery comes back through ``POST /webhooks/github`` like any delivery, so it is stored,
deduplicated and processed once by the normal intake.  The margin covers clock skew between
GitHub's ``delivered_at`` and the relay's ``received_at`` and attempts that failed while later
ones were stored; a failure older than the margin before a stored delivery is outside the
window (run ``relay catch-up --since`` to look further back).

``relay serve`` runs one catch-up in a background thread at startup when
``RELAY_CATCHUP_HOOK_ID`` is set (``startup_catch_up``); ``relay catch-up`` runs one on demand.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, computed_field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.errors import ConfigError, GitHubAPIError
from relay.github.client import GitHubClient
from relay.github.hook_deliveries import (
    DELIVERY_WINDOW,
    HookDelivery,
    check_repo,
    list_hook_deliveries,
    redeliver,
)
from relay.settings import Settings
from relay.store.tables import DeliveryRecord

__all__ = [
    "CATCHUP_MARGIN",
    "STARTUP_DELAY_S",
    "CatchUpFailure",
    "CatchUpReport",
    "catch_up",
    "catch_up_from_settings",
    "parse_since",
    "startup_catch_up",
    "StartupCatchUp",
    "window_start",
]

log = logging.getLogger(__name__)

#: Looked back before the newest stored delivery of the hook (clock skew, racing failures).
CATCHUP_MARGIN = timedelta(minutes=10)
#: Seconds ``relay serve`` waits after startup before its catch-up, so that the server is
#: accepting connections when GitHub sends the redeliveries.
STARTUP_DELAY_S = 1.0
_IN_CHUNK = 500  # guids per SQL IN (...) list

SessionFactory = Callable[[], Session]


class CatchUpFailure(BaseModel):
    """A redelivery GitHub refused: the event ``guid``, the attempt ``delivery_id`` asked for,
    and the error text."""

    model_config = ConfigDict(frozen=True)

    guid: str
    delivery_id: int
    error: str


class CatchUpReport(BaseModel):
    """What one catch-up saw and did.  ``since``/``until``: the window (UTC); ``listed``:
    attempts listed in it; guid lists, oldest event first: ``redelivered`` (asked again),
    ``stored`` (already stored here: skipped), ``delivered`` (newest attempt answered 2xx yet
    not stored here: skipped), ``failed`` (GitHub refused the redelivery)."""

    model_config = ConfigDict(frozen=True)

    repo: str
    hook_id: int
    since: datetime
    until: datetime
    listed: int
    redelivered: list[str]
    stored: list[str]
    delivered: list[str]
    failed: list[CatchUpFailure]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def counts(self) -> dict[str, int]:
        """``{"listed", "guids", "redelivered", "stored", "delivered", "failed"}`` counts."""
        groups = (self.redelivered, self.stored, self.delivered, self.failed)
        return {"listed": self.listed, "guids": sum(len(g) for g in groups),
                "redelivered": len(self.redelivered), "stored": len(self.stored),
                "delivered": len(self.delivered), "failed": len(self.failed)}


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def parse_since(text: str) -> datetime:
    """An ISO 8601 time (``2024-05-01T12:00:00Z``, ``2024-05-01``; naive = UTC) as an aware
    datetime; raises ``ValueError`` with a readable message."""
    try:
        return _utc(datetime.fromisoformat(text.strip().replace("Z", "+00:00")))
    except ValueError:
        raise ValueError(f"--since must be an ISO 8601 time such as 2024-05-01T12:00:00Z, "
                         f"not {text!r}") from None


def window_start(session: Session, hook_id: int, now: datetime, since: datetime | None = None,
                 margin: timedelta = CATCHUP_MARGIN) -> datetime:
    """The window's start: ``since`` if given, else the newest ``received_at`` stored for
    ``hook_id`` less ``margin`` (no stored delivery: no lower bound) — never earlier than
    ``now`` − 3 days, the oldest GitHub can redeliver."""
    floor = now - DELIVERY_WINDOW
    if since is None:
        newest = session.scalar(select(func.max(DeliveryRecord.received_at))
                                .where(DeliveryRecord.hook_id == str(hook_id)))
        if newest is None:
            return floor
        since = _utc(newest) - margin
    return max(floor, _utc(since))


def _stored(session: Session, guids: list[str]) -> set[str]:
    found: set[str] = set()
    for i in range(0, len(guids), _IN_CHUNK):
        chunk = guids[i:i + _IN_CHUNK]
        found.update(session.scalars(select(DeliveryRecord.delivery_id)
                                     .where(DeliveryRecord.delivery_id.in_(chunk))))
    return found


def catch_up(session_factory: SessionFactory, github: GitHubClient, repo: str, hook_id: int,
             since: datetime | None = None, now: datetime | None = None, *,
             margin: timedelta = CATCHUP_MARGIN) -> CatchUpReport:
    """Redeliver, once each, the deliveries of hook ``hook_id`` on ``repo`` that the relay
    missed (see the module docstring for the window and the rules).

    ``session_factory`` opens sessions on the relay's store; ``now`` defaults to the current
    UTC time (naive datetimes are UTC).  Raises ``ValueError`` for a malformed ``repo``,
    ``HookNotFound`` (a ``GitHubAPIError``, 404) for an unknown or hidden hook and
    ``GitHubAPIError`` when listing fails after the client's retries; a refused redelivery is
    reported in ``failed`` and does not stop the others.
    """
    check_repo(repo)
    now = _utc(now or datetime.now(UTC))
    with session_factory() as session:
        start = window_start(session, hook_id, now, since, margin)
    attempts = list_hook_deliveries(github, repo, hook_id, since=start, now=now)
    groups: dict[str, list[HookDelivery]] = {}
    for attempt in attempts:
        groups.setdefault(attempt.guid, []).append(attempt)
    # oldest event first: redeliveries then reach the relay in the order GitHub first sent them
    order = sorted(groups, key=lambda g: min((a.delivered_at, a.id) for a in groups[g]))
    with session_factory() as session:
        stored = _stored(session, order)
    redelivered: list[str] = []
    delivered: list[str] = []
    failed: list[CatchUpFailure] = []
    for guid in order:
        if guid in stored:
            continue
        newest = max(groups[guid], key=lambda a: (a.delivered_at, a.id))
        if newest.succeeded:
            delivered.append(guid)
            continue
        try:
            redeliver(github, repo, hook_id, newest.id)
        except GitHubAPIError as exc:
            log.warning("catch-up: redelivery of %s (attempt %d) refused: %s", guid, newest.id, exc)
            failed.append(CatchUpFailure(guid=guid, delivery_id=newest.id, error=str(exc)))
            continue
        redelivered.append(guid)
    report = CatchUpReport(repo=repo, hook_id=hook_id, since=start, until=now,
                           listed=len(attempts), redelivered=redelivered,
                           stored=[g for g in order if g in stored], delivered=delivered,
                           failed=failed)
    log.info("catch-up of hook %d on %s since %s: %s", hook_id, repo,
             start.isoformat(timespec="seconds"), report.counts)
    return report


def catch_up_from_settings(session_factory: SessionFactory, settings: Settings, *,
                           repo: str | None = None, hook_id: int | None = None,
                           since: datetime | None = None,
                           github: GitHubClient | None = None) -> CatchUpReport:
    """``catch_up`` for ``repo`` (default ``settings.upstream_repo``) and ``hook_id`` (default
    ``settings.catchup_hook_id``) with a ``GitHubClient.from_settings`` client (closed after)
    unless ``github`` is given.  Raises ``ConfigError`` when no hook id is known, else as
    ``catch_up``."""
    hook = hook_id if hook_id is not None else settings.catchup_hook_id
    if hook is None:
        raise ConfigError("no webhook id: pass --hook-id or set RELAY_CATCHUP_HOOK_ID")
    target = repo or settings.upstream_repo
    if github is not None:
        return catch_up(session_factory, github, target, hook, since)
    with GitHubClient.from_settings(settings) as client:
        return catch_up(session_factory, client, target, hook, since)


class StartupCatchUp(threading.Thread):
    """The startup catch-up of ``relay serve``: a daemon thread that waits ``delay_s`` seconds
    (``cancel()`` ends the wait), runs ``catch_up_from_settings`` once, and keeps ``report``
    or ``error``; failures are logged, never raised.  ``join()`` waits for it."""

    def __init__(self, session_factory: SessionFactory, settings: Settings,
                 delay_s: float = STARTUP_DELAY_S) -> None:
        super().__init__(name="relay-catch-up", daemon=True)
        self._session_factory = session_factory
        self._settings = settings
        self._delay_s = delay_s
        self._cancelled = threading.Event()
        self.report: CatchUpReport | None = None
        self.error: BaseException | None = None

    def cancel(self) -> None:
        """Skip the catch-up if it has not begun (one in progress runs to its end)."""
        self._cancelled.set()

    def run(self) -> None:
        if self._cancelled.wait(self._delay_s):
            return
        try:
            self.report = catch_up_from_settings(self._session_factory, self._settings)
        except Exception as exc:  # noqa: BLE001 - a failed catch-up must not touch serving
            self.error = exc
            log.error("startup catch-up of webhook %s on %s failed: %s",
                      self._settings.catchup_hook_id, self._settings.upstream_repo, exc)


def startup_catch_up(session_factory: SessionFactory, settings: Settings,
                     delay_s: float = STARTUP_DELAY_S) -> StartupCatchUp | None:
    """A ``StartupCatchUp``, not started yet (the app's startup starts it), when
    ``settings.catchup_hook_id`` is set; else ``None``."""
    if settings.catchup_hook_id is None:
        return None
    return StartupCatchUp(session_factory, settings, delay_s)
