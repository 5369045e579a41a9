"""Per-repo callback rate limit (CRCR: 100 callbacks per minute per downstream repo).

A moving window of ``limit`` hits per ``window_s`` per key, kept by the ``limits`` library in
the storage named by ``storage_uri``: ``memory://`` for a single ``relay serve`` process, or
``redis://host:port/db`` so that every relay process behind a load balancer (the compose
stack's, or ``uvicorn --workers N``) shares one count per repo.  ``relay.service.factory`` picks
Redis when ``RELAY_RATE_LIMIT_STORAGE`` says so or the broker is Redis.

``check`` is called once per authenticated callback and raises ``CallbackRateLimited`` with the
seconds until a slot frees (the ``Retry-After`` of the 429).  If the shared storage is
unreachable the limiter fails open (logs, accepts): a rate limit must not drop results.
"""

from __future__ import annotations

import logging
import math
import time

from limits import RateLimitItemPerSecond
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from relay.errors import CallbackRateLimited

__all__ = ["RateLimiter", "storage_uri_for"]

log = logging.getLogger(__name__)


def storage_uri_for(explicit: str | None, broker_url: str | None) -> str:
    """The limiter storage: ``explicit`` if set, else the broker when it is Redis, else memory."""
    if explicit:
        return explicit
    if broker_url and broker_url.startswith(("redis://", "rediss://")):
        return broker_url
    return "memory://"


class RateLimiter:
    """At most ``limit`` ``check`` calls per key in any ``window_s``-second window.

    Raises ``ValueError`` for an unknown storage scheme (``limits`` names the supported ones).
    """

    def __init__(self, limit: int = 100, window_s: float = 60.0,
                 storage_uri: str = "memory://") -> None:
        self.limit = limit
        self.window_s = window_s
        self.storage_uri = storage_uri
        self._item = RateLimitItemPerSecond(limit, max(1, int(window_s)))
        self._limiter = MovingWindowRateLimiter(storage_from_string(storage_uri))

    def check(self, key: str) -> None:
        """Count one hit for ``key``; raises ``CallbackRateLimited(message, retry_after_s)``."""
        try:
            allowed = self._limiter.hit(self._item, "crcr-callback", key)
            if allowed:
                return
            reset = self._limiter.get_window_stats(self._item, "crcr-callback", key).reset_time
        except CallbackRateLimited:
            raise
        except Exception:  # noqa: BLE001 - storage down: fail open, keep the result
            log.warning("rate-limit storage %s unreachable; callback from %s let through",
                        self.storage_uri.split("@")[-1], key, exc_info=True)
            return
        wait = max(1, math.ceil(reset - time.time()))
        raise CallbackRateLimited(
            f"{key}: more than {self.limit} callbacks in {self.window_s:.0f} s", wait)
