"""The outbox deliverer: a background thread that delivers pending outbox rows with retries,
and runs the zombie sweeper.

Started once per app (``relay.service.factory``), it wakes every ``poll_s`` seconds (or at once
after ``kick()``), takes due rows oldest first — FIFO per kind: a row that must wait holds
back the newer rows of its kind — and hands each to the handler for its kind:

* ``hud``: POST the body to ``{dashboard}/api/crcr/results`` (this relay in-process when
  ``RELAY_DASHBOARD_URL`` is unset); 2xx → delivered, 409 (HUD: that record is already final,
  CRCR's ``duplicate``) → delivered, 5xx / transport error → retried after
  ``backoff_s · 2^attempts`` (≤ 300 s) for as long as the dashboard is down — and on 401, 403,
  408 and 429 too (a token being rotated or a rate limit: fixable, so results are kept waiting,
  in order, rather than dropped); other 4xx (the body itself refused) → ``dead`` with the answer
  kept;
* ``check`` / ``comment``: ``relay.crcr.checks.sync_check`` / ``sync_comment`` against GitHub
  (``GitHubAPIError`` 5xx/429/0 → retried, other 4xx → dead).

Every ``sweep_interval_s`` it also runs the sweep it was given (``relay.crcr.sweeper``: no
completion after the job timeout → ``timed_out``; L3 demotions reconciled).  One thread: rows
are handled one at a time, in id order.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
from sqlalchemy.orm import Session, sessionmaker

from relay.crcr.checks import sync_check, sync_comment
from relay.errors import GitHubAPIError
from relay.github.client import GitHubClient
from relay.retrying import Backoff
from relay.store.outbox import dead, delivered, due, retry_later

__all__ = ["Deliverer", "Retry", "hud_handler"]

log = logging.getLogger(__name__)

#: dashboard answers that say "not now" rather than "never": retried like a 5xx
RETRIED_4XX = frozenset({401, 403, 408, 429})

#: the longest wait between two tries of an outbox row (seconds)
OUTBOX_MAX_WAIT_S = 300.0


class Retry(Exception):
    """A handler's transient failure: the row is retried later."""


Handler = Callable[[Session, dict[str, Any]], None]


def hud_handler(send: Callable[[bytes], httpx.Response]) -> Handler:
    """A ``hud`` handler posting bodies with ``send`` (``relay.reporting.sender.make_sender``)."""

    def handle(_session: Session, body: dict[str, Any]) -> None:
        data = json.dumps(body, separators=(",", ":")).encode("utf-8")
        try:
            resp = send(data)
        except httpx.TransportError as exc:
            raise Retry(f"{type(exc).__name__}: {exc}") from None
        if resp.status_code >= 500 or resp.status_code in RETRIED_4XX:
            raise Retry(f"dashboard answered {resp.status_code}: {resp.text[:200]}")
        if resp.status_code == 409:
            log.info("dashboard already holds that record final (409): duplicate")
            return
        if resp.status_code >= 400:
            raise ValueError(f"dashboard refused the body: {resp.status_code} {resp.text[:500]}")

    return handle


def github_handler(github: Callable[[], GitHubClient], kind: str) -> Handler:
    sync = sync_check if kind == "check" else sync_comment

    def handle(session: Session, body: dict[str, Any]) -> None:
        try:
            with github() as gh:
                sync(session, gh, int(body["job_id"]))
        except GitHubAPIError as exc:
            if exc.status_code in (0, 429) or exc.status_code >= 500:
                raise Retry(str(exc)) from None
            raise

    return handle


class Deliverer:
    """Background deliverer; ``start()``, ``kick()``, ``stop()``; ``run_once()`` for tests."""

    def __init__(self, session_factory: sessionmaker[Session], handlers: dict[str, Handler], *,
                 poll_s: float = 1.0, backoff_s: float = 1.0,
                 sweep: Callable[[], Any] | None = None, sweep_interval_s: float = 60.0) -> None:
        self._sf = session_factory
        self._handlers = handlers
        self.poll_s = poll_s
        #: no attempt limit: a row waits until it is delivered or refused
        self.backoff = Backoff(attempts=None, first_s=backoff_s, max_s=OUTBOX_MAX_WAIT_S)
        self._sweep = sweep
        self._sweep_interval_s = sweep_interval_s
        self._last_sweep: float | None = None  # None: sweep at the first pass
        #: sweeps finished so far (the first runs at the first pass)
        self.sweeps = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Deliverer:
        self._thread = threading.Thread(target=self._loop, name="relay-outbox", daemon=True)
        self._thread.start()
        return self

    def kick(self) -> None:
        """Deliver now (called after a transaction that wrote outbox rows)."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # noqa: BLE001 - the deliverer must outlive any bug or DB blip
                log.exception("outbox pass failed")
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def run_once(self) -> int:
        """One pass: sweep if due, then every due row; returns rows delivered."""
        if self._sweep is not None and (self._last_sweep is None
                                        or time.monotonic() - self._last_sweep >= self._sweep_interval_s):
            self._last_sweep = time.monotonic()
            self._sweep()
            self.sweeps += 1
        done = 0
        with self._sf() as session:
            rows = due(session)
        failed_kinds: set[str] = set()
        for row in rows:
            if self._stop.is_set():
                break
            if row.kind in failed_kinds:  # keep FIFO per kind: wait for the failed one
                continue
            handler = self._handlers.get(row.kind)
            with self._sf() as session:
                try:
                    if handler is None:
                        raise ValueError(f"no handler for outbox kind {row.kind!r}")
                    handler(session, row.body)
                except Retry as exc:
                    failed_kinds.add(row.kind)
                    delay = retry_later(session, row, str(exc), self.backoff)
                    log.warning("outbox %s #%d: %s; retrying in %.1f s", row.kind, row.id, exc, delay)
                    continue
                except Exception as exc:  # noqa: BLE001 - a permanent failure is kept, not lost
                    session.rollback()
                    dead(session, row.id, f"{type(exc).__name__}: {exc}")
                    log.error("outbox %s #%d failed permanently: %s", row.kind, row.id, exc)
                    continue
                delivered(session, row.id)
                done += 1
        return done
