"""Group commit for webhook intake: one writer thread inserts deliveries in batches.

``DeliveryWriter.insert(**row)`` is awaited once per delivery by ``WebhookIntake``; it resolves
to ``True`` (new) or ``False`` (duplicate) only after the transaction holding the row has
committed, so "committed before the 2xx" still holds.  The thread takes whatever is queued
(up to ``max_batch`` rows) into one transaction: under load many deliveries share one commit,
and there is a single writer, so concurrent requests never wait in SQLite's lock/busy-sleep
loop (on the bench machine: ~1 ms per commit alone, 9–16 ms mean with 16 threads contending).
A failing batch (e.g. the database is down) fails each of its awaiting requests with the
error, which the handler turns into a 503 so GitHub's delivery shows as failed.

The thread keeps one Core ``Connection`` open between batches (an ORM ``Session`` per batch
cost ~3× the insert itself: ~320 vs ~85–130 µs per single-row batch of a 25 KB body, and capped
the intake at ~0.65× the minimal durable receiver of ``bench/intake.py``).  It is opened from the
current session factory's engine, opened again when that factory is replaced
(``app.state.session_factory``) and after any failed batch; a batch that fails because the
connection itself died (PostgreSQL restarted: ``connection_invalidated``) is tried once more
on a fresh connection before its requests see the error.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from relay.store import insert_deliveries

__all__ = ["DeliveryWriter"]

log = logging.getLogger(__name__)
_STOP = object()


class DeliveryWriter:
    """``factory()`` gives the session factory to write with (looked up per batch, so a replaced
    factory takes effect); ``max_batch`` rows at most per transaction."""

    def __init__(self, factory: Callable[[], Callable[[], Session]], *, max_batch: int = 64) -> None:
        self._factory = factory
        self._max_batch = max_batch
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._conn: Connection | None = None  # the writer thread's own
        self._conn_of: object = None  # the session factory it was opened from

    async def insert(self, **row: Any) -> bool:
        """Insert one delivery (``insert_delivery`` keywords); ``True`` if new."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        self._ensure_started()
        self._queue.put((row, future, loop))
        return await future

    def _ensure_started(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="relay-intake-writer",
                                                    daemon=True)
                    self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                self._disconnect()
                return
            batch = [first]
            while len(batch) < self._max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    self._queue.put(_STOP)
                    break
                batch.append(item)
            results = self._write([b[0] for b in batch])
            for (_row, future, loop), result in zip(batch, results, strict=True):
                loop.call_soon_threadsafe(_settle, future, result)

    def _write(self, rows: list[dict[str, Any]]) -> list[Any]:
        """``insert_deliveries`` of ``rows`` on the thread's connection: per row ``True``/``False``,
        or the exception for every row when the batch failed."""
        for attempt in (1, 2):
            try:
                return insert_deliveries(self._connection(), rows)
            except Exception as exc:  # noqa: BLE001 - reported to every waiting request
                self._disconnect()
                if attempt == 1 and isinstance(exc, DBAPIError) and exc.connection_invalidated:
                    continue  # the server dropped the connection: once more on a fresh one
                log.exception("inserting %d deliveries failed", len(rows))
                return [exc] * len(rows)
        raise AssertionError("unreachable")

    def _connection(self) -> Connection:
        factory = self._factory()
        if self._conn is None or self._conn_of is not factory:
            self._disconnect()
            with factory() as session:
                engine = session.get_bind()
            self._conn, self._conn_of = engine.connect(), factory
        return self._conn

    def _disconnect(self) -> None:
        conn, self._conn, self._conn_of = self._conn, None, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a dead connection: nothing left to close
                log.debug("closing the intake writer's connection failed", exc_info=True)


def _settle(future: asyncio.Future[bool], result: Any) -> None:
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(bool(result))
