"""Per-repo callback rate limit (CRCR: 100 callbacks per minute per downstream repo).

A sliding window of the last ``limit`` accept times per key, in this process's memory
(``relay serve`` is one process; a multi-process deployment would move this to Redis).
``check`` is called once per authenticated callback and raises ``CallbackRateLimited`` with
the seconds until a slot frees (the ``Retry-After`` of the 429).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque

from relay.errors import CallbackRateLimited

__all__ = ["RateLimiter"]


class RateLimiter:
    def __init__(self, limit: int = 100, window_s: float = 60.0) -> None:
        self.limit = limit
        self.window_s = window_s
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def check(self, key: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            hits = self._hits.setdefault(key, deque())
            while hits and hits[0] <= now - self.window_s:
                hits.popleft()
            if len(hits) >= self.limit:
                wait = max(1, math.ceil(hits[0] + self.window_s - now))
                raise CallbackRateLimited(
                    f"{key}: more than {self.limit} callbacks in {self.window_s:.0f} s", wait)
            hits.append(now)
