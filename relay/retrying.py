"""The relay's one retry policy: exponential backoff, built on tenacity.

Every place that tries again — a GitHub or dashboard request, a write to a busy SQLite file, a
delivery whose processing met GitHub down, an outbox row, a Celery shard meeting a database blip
— uses a ``Backoff``: try at most ``attempts`` times; after the n-th failure wait
``first_s · 2^(n-1)`` seconds, at most ``max_s``.  In-call retries run through
``Backoff.retrying`` (a ``tenacity.Retrying``); retries scheduled for later (a timer, a Celery
countdown, an outbox row's ``next_attempt_at``) ask ``Backoff.delay``.

============== ======== ========= ======== =================================================
policy         attempts first wait max wait source of the numbers
============== ======== ========= ======== =================================================
``HTTP``       4        1 s       4 s      CRCR's HUD client: 5xx retried 3× after 1, 2, 4 s
``DB_LOCKED``  8        0.5 s     8 s      SQLite past its 5 s busy_timeout (another writer)
``DELIVERY``   5        30 s      15 min   GitHub down or rate-limited for a delivery
``SHARD_DB``   4        2 s       8 s      a worker's database blip while storing results
``STARTING``   8        0.5 s     4 s      ``relay send-webhook`` to a relay still starting (~20 s)
============== ======== ========= ======== =================================================

The outbox (``relay.crcr.outbox``) builds its own ``Backoff`` from ``RELAY_OUTBOX_BACKOFF_S``
with no attempt limit (rows wait until delivered or refused).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_never, wait_exponential
from tenacity.wait import wait_base

__all__ = ["Backoff", "HTTP", "DB_LOCKED", "DELIVERY", "SHARD_DB", "STARTING"]


@dataclass(frozen=True)
class Backoff:
    """At most ``attempts`` tries (``None``: no limit); after failure n wait
    ``min(first_s · 2^(n-1), max_s)`` seconds."""

    attempts: int | None
    first_s: float
    max_s: float

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` failures (≥ 1) before the next try."""
        return float(min(self.first_s * 2 ** max(failures - 1, 0), self.max_s))

    def exhausted(self, tries: int) -> bool:
        """Whether ``tries`` tries used up the policy (no try is left)."""
        return self.attempts is not None and tries >= self.attempts

    def wait(self) -> wait_base:
        """The tenacity wait strategy giving ``delay``."""
        return wait_exponential(multiplier=self.first_s, exp_base=2, max=self.max_s)

    def retrying(self, retry_on: Callable[[BaseException], bool], *,
                 wait: wait_base | None = None) -> Retrying:
        """A ``tenacity.Retrying`` that retries exceptions for which ``retry_on`` is true and
        re-raises the last one; ``wait`` replaces the policy's waits (tests: no sleeping;
        GitHub: its rate-limit headers first)."""
        return Retrying(
            stop=stop_after_attempt(self.attempts) if self.attempts is not None else stop_never,
            wait=wait if wait is not None else self.wait(),
            retry=retry_if_exception(retry_on), reraise=True)


HTTP = Backoff(attempts=4, first_s=1.0, max_s=4.0)
DB_LOCKED = Backoff(attempts=8, first_s=0.5, max_s=8.0)
DELIVERY = Backoff(attempts=5, first_s=30.0, max_s=900.0)
SHARD_DB = Backoff(attempts=4, first_s=2.0, max_s=8.0)
STARTING = Backoff(attempts=8, first_s=0.5, max_s=4.0)
