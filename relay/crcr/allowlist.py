"""The CRCR allowlist: which downstream repos get which upstream events, at which level.

Format (CRCR ``aws/lambda/cross_repo_ci_relay/``; design §6)::

    L1: [org/repo, ...]                       # events forwarded, nothing reported upstream
    L2: [org/repo, ...]                       # + results on the dashboard (HUD)
    L3: {device: {org/repo: [oncall, ...]}}   # + check runs when the PR has ciflow/crcr/<device>
    L4: {org/repo: "oncall1, oncall2"}        # + check runs always

A repo sits at one level only.  Besides ``org/repo`` names an entry may name a *local
backend* (a bare name such as ``spyre-sim``, no slash): it is not dispatched to but run by the
relay's own processor, and its level decides what is reported.  Every problem is collected
and raised at once as ``AllowlistError`` (messages name the level and entry).

``AllowlistSource`` loads from a file path or an ``http(s)://`` URL and reloads when the file's
mtime or the URL's ``ETag`` / ``Last-Modified`` changes (checked at most every
``refresh_s`` seconds).  A broken *reload* keeps the previous allowlist and logs the errors
(fail soft: a typo must not stop CI); a broken *first* load raises.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from relay.errors import AllowlistError

__all__ = ["AllowEntry", "Allowlist", "AllowlistSource", "parse_allowlist", "LEVELS"]

log = logging.getLogger(__name__)

LEVELS = ("L1", "L2", "L3", "L4")
_REPO = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")
_LOCAL = re.compile(r"[A-Za-z0-9_.-]{1,100}")
_DEVICE = re.compile(r"[A-Za-z0-9_.-]{1,50}")


@dataclass(frozen=True)
class AllowEntry:
    """One allowlisted target: ``name`` (``org/repo`` or a local backend), its ``level``,
    the ``device`` (L3 only) and the ``oncalls`` to page."""

    name: str
    level: str
    device: str | None = None
    oncalls: tuple[str, ...] = ()

    @property
    def local(self) -> bool:
        """True for a local backend (no slash): run in-process, never dispatched."""
        return "/" not in self.name

    @property
    def checks_label(self) -> str | None:
        """The PR label that enables check runs for an L3 entry (``ciflow/crcr/<device>``)."""
        return f"ciflow/crcr/{self.device}" if self.level == "L3" and self.device else None


@dataclass(frozen=True)
class Allowlist:
    """Parsed allowlist; ``entries`` maps name → ``AllowEntry``."""

    entries: dict[str, AllowEntry] = field(default_factory=dict)

    def get(self, name: str) -> AllowEntry | None:
        return self.entries.get(name)

    def external(self) -> list[AllowEntry]:
        """Downstream repos to dispatch to, sorted by name (deterministic fan-out order)."""
        return sorted((e for e in self.entries.values() if not e.local), key=lambda e: e.name)

    @classmethod
    def local_only(cls, backend: str, level: str = "L2") -> "Allowlist":
        """The allowlist used when none is configured: the local backend alone."""
        return cls({backend: AllowEntry(backend, level)})


def _names(value: Any, where: str, errors: list[str]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(f"{where}: expected a list of org/repo names, got {type(value).__name__}")
        return []
    out = []
    for item in value:
        if not isinstance(item, str):
            errors.append(f"{where}: entry {item!r} is not a string")
        else:
            out.append(item.strip())
    return out


def _oncalls(value: Any, where: str, errors: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    errors.append(f"{where}: oncalls must be a list of names or a comma-separated string")
    return ()


def parse_allowlist(data: Any, source: str = "<allowlist>") -> Allowlist:
    """Validate the loaded YAML ``data``; raises ``AllowlistError`` listing every problem."""
    errors: list[str] = []
    found: list[AllowEntry] = []
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise AllowlistError(source, [f"top level must be a mapping of L1..L4, got "
                                      f"{type(data).__name__}"])
    for key in data:
        if key not in LEVELS:
            errors.append(f"unknown key {key!r} (expected one of {', '.join(LEVELS)})")
    for level in ("L1", "L2"):
        found += [AllowEntry(n, level) for n in _names(data.get(level), level, errors)]
    l3 = data.get("L3") or {}
    if not isinstance(l3, dict):
        errors.append("L3: expected {device: {org/repo: [oncall, ...]}}")
    else:
        for device, repos in l3.items():
            if not isinstance(device, str) or not _DEVICE.fullmatch(device):
                errors.append(f"L3: invalid device name {device!r}")
                continue
            if not isinstance(repos, dict):
                errors.append(f"L3.{device}: expected {{org/repo: [oncall, ...]}}")
                continue
            for name, oncalls in repos.items():
                found.append(AllowEntry(str(name).strip(), "L3", device,
                                        _oncalls(oncalls, f"L3.{device}.{name}", errors)))
    l4 = data.get("L4") or {}
    if not isinstance(l4, dict):
        errors.append('L4: expected {org/repo: "oncall1, oncall2"}')
    else:
        for name, oncalls in l4.items():
            found.append(AllowEntry(str(name).strip(), "L4", None,
                                    _oncalls(oncalls, f"L4.{name}", errors)))
    entries: dict[str, AllowEntry] = {}
    for entry in found:
        if not (_REPO.fullmatch(entry.name) or _LOCAL.fullmatch(entry.name)):
            errors.append(f"{entry.level}: {entry.name!r} is not org/repo or a backend name")
            continue
        if entry.name in entries:
            first = entries[entry.name]
            where = "twice at " + entry.level if first.level == entry.level else \
                f"at {first.level} and {entry.level}"
            errors.append(f"{entry.name} is listed {where}; a repo sits at one level only")
            continue
        entries[entry.name] = entry
    if errors:
        raise AllowlistError(source, errors)
    return Allowlist(entries)


def _parse_text(text: str, source: str) -> Allowlist:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AllowlistError(source, [f"not valid YAML: {exc}"]) from None
    return parse_allowlist(data, source)


class AllowlistSource:
    """The current allowlist from ``location`` (path or URL), reloaded when it changes.

    ``get()`` is called once per delivery processed and per callback; it stats the file (or
    sends a conditional GET with ``If-None-Match`` / ``If-Modified-Since``) at most every
    ``refresh_s`` seconds.  ``reloads`` counts successful (re)loads.
    """

    def __init__(self, location: str, *, refresh_s: float = 5.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.location = location
        self.refresh_s = refresh_s
        self.reloads = 0
        self._is_url = location.startswith(("http://", "https://"))
        self._transport = transport
        self._lock = threading.Lock()
        self._version: Any = None
        self._checked = 0.0
        self._current = self._load(force=True)
        if self._current is None:  # pragma: no cover - _load(force=True) raises instead
            raise AllowlistError(location, ["could not be loaded"])

    def get(self) -> Allowlist:
        with self._lock:
            now = time.monotonic()
            if now - self._checked >= self.refresh_s:
                self._checked = now
                try:
                    fresh = self._load(force=False)
                except Exception as exc:  # noqa: BLE001 - fail soft on reload
                    log.error("allowlist reload from %s failed, keeping the old one: %s",
                              self.location, exc)
                    fresh = None
                if fresh is not None:
                    self._current = fresh
            return self._current

    def _load(self, *, force: bool) -> Allowlist | None:
        if self._is_url:
            return self._load_url(force)
        path = Path(self.location)
        try:
            stamp = path.stat().st_mtime_ns
        except OSError as exc:
            raise AllowlistError(self.location, [f"cannot read: {exc.strerror}"]) from None
        if not force and stamp == self._version:
            return None
        parsed = _parse_text(path.read_text(encoding="utf-8"), self.location)
        self._version = stamp
        self.reloads += 1
        return parsed

    def _load_url(self, force: bool) -> Allowlist | None:
        headers = {}
        if not force and isinstance(self._version, dict):
            headers = self._version
        with httpx.Client(timeout=10.0, transport=self._transport) as client:
            try:
                resp = client.get(self.location, headers=headers)
            except httpx.HTTPError as exc:
                raise AllowlistError(self.location, [f"fetch failed: {exc}"]) from None
        if resp.status_code == 304:
            return None
        if resp.status_code != 200:
            raise AllowlistError(self.location, [f"fetch answered HTTP {resp.status_code}"])
        parsed = _parse_text(resp.text, self.location)
        version = {}
        if etag := resp.headers.get("etag"):
            version["If-None-Match"] = etag
        if modified := resp.headers.get("last-modified"):
            version["If-Modified-Since"] = modified
        self._version = version
        self.reloads += 1
        return parsed


def allowlist_for(location: str | None, backend: str, *, refresh_s: float = 5.0) -> Callable[[], Allowlist]:
    """The current-allowlist callable for ``RELAY_ALLOWLIST`` (``location``): a reloading
    ``AllowlistSource``, or — unset — the local ``backend`` alone at L2 (results on the
    dashboard, nothing dispatched).  Raises ``AllowlistError`` when the first load fails."""
    if not location:
        fixed = Allowlist.local_only(backend, "L2")
        return lambda: fixed
    return AllowlistSource(location, refresh_s=refresh_s).get
