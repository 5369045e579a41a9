"""Is a commit on the upstream?  Nightly/periodic callbacks report a commit the relay never
dispatched, so it is checked (CRCR ``utils/sha_validator.py``, ``tests/test_sha_validator.py``).

``GET /repos/{upstream}/commits/{sha}`` (GitHub REST): found → known, cached 1 h; 404 or 422 (no
such commit, malformed) → unknown, cached 5 min; any other failure (5xx, 403 rate limit, GitHub
unreachable) → accepted and not cached (fail open: a GitHub outage must not lose nightly
results).  A value that is not 7–64 hex digits is unknown without asking.  One try per lookup
(no retries: the callback waits for it).  ``known`` is called once per nightly callback.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

from cachetools import TTLCache

from relay.errors import GitHubAPIError
from relay.github.client import GitHubClient

__all__ = ["UpstreamCommits", "POSITIVE_TTL_S", "NEGATIVE_TTL_S"]

log = logging.getLogger(__name__)
POSITIVE_TTL_S = 3600.0
NEGATIVE_TTL_S = 300.0
_SHA = re.compile(r"[0-9a-fA-F]{7,64}")


class UpstreamCommits:
    """Commit lookups on ``upstream`` through ``github()`` clients, with the caches above
    (``timer``: seconds, monotonic; tests pass a fake clock)."""

    def __init__(self, upstream: str, github: Callable[[], GitHubClient], *,
                 positive_ttl_s: float = POSITIVE_TTL_S, negative_ttl_s: float = NEGATIVE_TTL_S,
                 maxsize: int = 10_000, timer: Callable[[], float] = time.monotonic) -> None:
        self.upstream = upstream
        self._github = github
        self._known: TTLCache[str, bool] = TTLCache(maxsize, positive_ttl_s, timer)
        self._unknown: TTLCache[str, bool] = TTLCache(maxsize, negative_ttl_s, timer)
        self._lock = threading.Lock()

    def known(self, sha: str) -> bool:
        """Whether ``sha`` is a commit of the upstream (see the module docstring)."""
        sha = sha.lower()
        if not _SHA.fullmatch(sha):
            return False
        with self._lock:
            if sha in self._known:
                return True
            if sha in self._unknown:
                return False
        try:
            with self._github() as gh:
                gh.get(f"/repos/{self.upstream}/commits/{sha}")
        except GitHubAPIError as exc:
            if exc.status_code in (404, 422):
                with self._lock:
                    self._unknown[sha] = True
                return False
            log.warning("commit %s of %s not checked (%s): accepted", sha, self.upstream, exc)
            return True
        with self._lock:
            self._known[sha] = True
        return True
