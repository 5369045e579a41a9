"""A YAML document read from a file path or an ``http(s)://`` URL and reloaded when it changes.

Used for the CRCR allowlist (``relay.crcr.allowlist``) and the CI-provider map
(``relay.crcr.providers``), both of which CRCR fetches at run time so that edits take effect
without a redeploy.  The file's mtime, or the URL's ``ETag`` / ``Last-Modified`` (conditional
GET), is checked at most every ``refresh_s`` seconds.  A broken *reload* keeps the previous
value and logs the error (fail soft: a typo must not stop CI); a broken *first* load raises.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import httpx
import yaml

from relay.errors import ConfigError

__all__ = ["YamlSource", "load_yaml_text"]

log = logging.getLogger(__name__)
T = TypeVar("T")


def load_yaml_text(text: str, source: str, error: Callable[[str, list[str]], ConfigError]) -> Any:
    """``yaml.safe_load(text)``; a YAML syntax error raises ``error(source, [message])``."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(source, [f"not valid YAML: {exc}"]) from None


class YamlSource(Generic[T]):
    """The current value of ``parse(text, location)`` for ``location`` (path or URL).

    ``get()`` is called per delivery or callback; it stats the file (or sends a conditional GET
    with ``If-None-Match`` / ``If-Modified-Since``) at most every ``refresh_s`` seconds.
    ``refresh()`` re-reads now, whatever the timers say, and raises on failure (the caller
    decides; the value is kept).  ``reloads`` counts successful (re)loads.  ``error(location,
    messages)`` builds the ``ConfigError`` raised for unreadable sources.
    """

    def __init__(self, location: str, parse: Callable[[str, str], T], *,
                 error: Callable[[str, list[str]], ConfigError], refresh_s: float = 5.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.location = location
        self.refresh_s = refresh_s
        self.reloads = 0
        self._parse = parse
        self._error = error
        self._is_url = location.startswith(("http://", "https://"))
        self._transport = transport
        self._lock = threading.Lock()
        self._version: Any = None
        self._checked = time.monotonic()
        loaded = self._load(force=True)
        assert loaded is not None  # a forced load returns a value or raises
        self._current: T = loaded

    def get(self) -> T:
        with self._lock:
            now = time.monotonic()
            if now - self._checked >= self.refresh_s:
                self._checked = now
                try:
                    fresh = self._load(force=False)
                except Exception as exc:  # noqa: BLE001 - fail soft on reload
                    log.error("reload of %s failed, keeping the previous one: %s", self.location, exc)
                    fresh = None
                if fresh is not None:
                    self._current = fresh
            return self._current

    def refresh(self) -> T:
        """Load ``location`` again now (unconditionally); raises ``ConfigError`` (kept value)."""
        with self._lock:
            fresh = self._load(force=True)
            assert fresh is not None
            self._current = fresh
            self._checked = time.monotonic()
            return fresh

    def _load(self, *, force: bool) -> T | None:
        if self._is_url:
            return self._load_url(force)
        path = Path(self.location)
        try:
            stamp = path.stat().st_mtime_ns
            if not force and stamp == self._version:
                return None
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise self._error(self.location, [f"cannot read: {exc.strerror}"]) from None
        parsed = self._parse(text, self.location)
        self._version = stamp
        self.reloads += 1
        return parsed

    def _load_url(self, force: bool) -> T | None:
        headers = self._version if not force and isinstance(self._version, dict) else {}
        with httpx.Client(timeout=10.0, transport=self._transport) as client:
            try:
                resp = client.get(self.location, headers=headers)
            except httpx.HTTPError as exc:
                raise self._error(self.location, [f"fetch failed: {exc}"]) from None
        if resp.status_code == 304:
            return None
        if resp.status_code != 200:
            raise self._error(self.location, [f"fetch answered HTTP {resp.status_code}"])
        parsed = self._parse(resp.text, self.location)
        version = {}
        if etag := resp.headers.get("etag"):
            version["If-None-Match"] = etag
        if modified := resp.headers.get("last-modified"):
            version["If-Modified-Since"] = modified
        self._version = version
        self.reloads += 1
        return parsed
