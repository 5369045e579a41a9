"""The CRCR allowlist: which downstream repos get which upstream events, at which level.

Grammar (CRCR ``utils/allowlist.py`` and ``tests/test_allowlist.py``; design §6)::

    L1: [<entry>, ...]          # events dispatched, nothing reported upstream
    L2: [<entry>, ...]          # + results on the dashboard (HUD)
    L3:                         # + check runs while the PR has ciflow/crcr/<device>
      <device>: {<org/repo>: <meta>, ...}
    L4: [<entry>, ...]          # + check runs always
    <any other key>: ...        # ignored (CRCR: silently; here with a warning)

``<entry>`` is ``org/repo`` or a single-key mapping ``{org/repo: <meta>}``; ``<meta>`` is null,
``"oncall1, oncall2"``, ``[oncall, ...]`` or ``{oncalls: <string or list>, events: [pull_request
| nightly, ...]}`` (events default to both; a ``nightly``-only entry gets no PR/push dispatches).
Names are ``str(x).strip().strip("/")``; a repo needs a ``/``.  A repo sits at one level only.

Deliberate differences (``relay/crcr/README.md``): a bare name without ``/`` is accepted only
when it is this relay's own backend (``RELAY_BACKEND``, e.g. ``spyre-sim``: run by the relay
itself); any other bare name (a typo of ``org/repo``) is an error, as every bare name is in CRCR;
``L4`` written as a mapping (this
relay's older form) is still read, with a warning; and every problem is collected and raised at
once as ``AllowlistError`` instead of the first one only.

``AllowlistSource`` keeps the allowlist of a file path or URL current (``relay.crcr.yamlsource``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from relay.crcr.yamlsource import YamlSource, load_yaml_text
from relay.errors import AllowlistError
from relay.github.constants import CRCR_LABEL_PREFIX

__all__ = ["AllowEntry", "Allowlist", "AllowlistProvider", "AllowlistSource", "FixedAllowlist",
           "parse_allowlist", "LEVELS", "SUPPORTED_EVENTS", "DEFAULT_EVENTS", "allowlist_source"]

log = logging.getLogger(__name__)

LEVELS = ("L1", "L2", "L3", "L4")
#: events an entry may subscribe to (CRCR ``SUPPORTED_CRCR_EVENTS``)
SUPPORTED_EVENTS = frozenset({"pull_request", "nightly"})
#: an entry without ``events`` metadata (CRCR: legacy entries get both)
DEFAULT_EVENTS = SUPPORTED_EVENTS
_META_KEYS = frozenset({"oncalls", "events"})


@dataclass(frozen=True)
class AllowEntry:
    """One allowlisted target: ``name`` (``org/repo`` or a local backend), its ``level``,
    the ``device`` (L3 only), the ``oncalls`` to page and the ``events`` it takes."""

    name: str
    level: str
    device: str | None = None
    oncalls: tuple[str, ...] = ()
    events: frozenset[str] = DEFAULT_EVENTS

    @property
    def local(self) -> bool:
        """True for a local backend (no slash): run in-process, never dispatched."""
        return "/" not in self.name

    @property
    def checks_label(self) -> str | None:
        """The PR label that enables check runs for an L3 entry (``ciflow/crcr/<device>``)."""
        return f"{CRCR_LABEL_PREFIX}{self.device}" if self.level == "L3" and self.device else None


@dataclass(frozen=True)
class Allowlist:
    """Parsed allowlist; ``entries`` maps name → ``AllowEntry``; ``warnings`` lists what was
    read but ignored (unknown keys, the older L4 mapping form)."""

    entries: dict[str, AllowEntry] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def get(self, name: str) -> AllowEntry | None:
        return self.entries.get(name)

    def level_of(self, name: str) -> str | None:
        entry = self.entries.get(name)
        return entry.level if entry is not None else None

    def external(self, event: str | None = None) -> list[AllowEntry]:
        """Downstream repos (sorted by name: a deterministic fan-out order), optionally only
        those subscribed to ``event`` (``pull_request`` or ``nightly``)."""
        return sorted((e for e in self.entries.values()
                       if not e.local and (event is None or event in e.events)),
                      key=lambda e: e.name)

    def at_or_above(self, level: str) -> list[AllowEntry]:
        """Downstream repos at ``level`` or higher, sorted by name."""
        return [e for e in self.external() if e.level >= level]

    @classmethod
    def local_only(cls, backend: str, level: str = "L2") -> Allowlist:
        """The allowlist used when none is configured: the local backend alone."""
        return cls({backend: AllowEntry(backend, level)})


class _Parse:
    """One parse: entries found and every error, each message naming where it is."""

    def __init__(self, backend: str | None = None) -> None:
        self.backend = backend
        self.found: list[AllowEntry] = []
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def name(self, raw: Any, where: str) -> str | None:
        text = str(raw).strip().strip("/")
        if not text:
            self.errors.append(f"{where}: empty repo name")
        elif "/" not in text and text != self.backend:
            own = (f" (a bare name is allowed only for this relay's own backend, RELAY_BACKEND="
                   f"{self.backend!r})" if self.backend else "")
            self.errors.append(f"{where}: {raw!r} must be in owner/repo format{own}")
        else:
            return text
        return None

    def oncalls(self, value: Any, where: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            return tuple(p.strip() for p in value.split(",") if p.strip())
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(v.strip() for v in value if v.strip())
        self.errors.append(f"{where}: oncalls must be a list of names or a comma-separated string")
        return ()

    def events(self, value: Any, where: str) -> frozenset[str]:
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            self.errors.append(f"{where}: events must be a non-empty list of event names")
            return DEFAULT_EVENTS
        if len(set(value)) != len(value):
            self.errors.append(f"{where}: events lists an event twice")
        bad = sorted(set(value) - SUPPORTED_EVENTS)
        if bad:
            self.errors.append(f"{where}: unsupported event {', '.join(map(repr, bad))} "
                               f"(supported: {', '.join(sorted(SUPPORTED_EVENTS))})")
        return frozenset(value) & SUPPORTED_EVENTS or DEFAULT_EVENTS

    def meta(self, value: Any, where: str) -> tuple[tuple[str, ...], frozenset[str]]:
        """``(oncalls, events)`` of an entry's value."""
        if not isinstance(value, dict):
            return self.oncalls(value, where), DEFAULT_EVENTS
        unknown = sorted(set(map(str, value)) - _META_KEYS)
        if unknown:
            self.errors.append(f"{where}: unsupported metadata {', '.join(map(repr, unknown))} "
                               "(expected oncalls, events)")
        events = self.events(value["events"], where) if "events" in value else DEFAULT_EVENTS
        return self.oncalls(value.get("oncalls"), where), events

    def add(self, raw_name: Any, meta: Any, level: str, where: str, device: str | None = None) -> None:
        name = self.name(raw_name, where)
        if name is not None:
            oncalls, events = self.meta(meta, f"{where} {name}")
            self.found.append(AllowEntry(name, level, device, oncalls, events))

    def entry_list(self, value: Any, level: str) -> None:
        if value is None:
            return
        if level == "L4" and isinstance(value, dict):  # this relay's older form
            self.warnings.append("L4 written as a mapping; CRCR expects a list like L1/L2")
            for name, meta in value.items():
                self.add(name, meta, level, level)
            return
        if not isinstance(value, list):
            self.errors.append(f"{level}: must be a list of entries, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            where = f"{level}[{i}]"
            if isinstance(item, str):
                self.add(item, None, level, where)
            elif isinstance(item, dict) and len(item) == 1:
                ((name, meta),) = item.items()
                self.add(name, meta, level, where)
            elif isinstance(item, dict):
                self.errors.append(f"{where}: a mapping entry must have exactly one key "
                                   f"(org/repo), got {len(item)}")
            else:
                self.errors.append(f"{where}: entry {item!r} is neither org/repo nor "
                                   "{org/repo: oncalls}")

    def devices(self, value: Any) -> None:
        if value is None:
            return
        if not isinstance(value, dict):
            self.errors.append("L3: must be a device mapping {device: {org/repo: [oncall, ...]}}")
            return
        for raw_device, repos in value.items():
            device = str(raw_device).strip() if raw_device is not None else ""
            if not device:
                self.errors.append("L3: device name must not be empty")
                continue
            if repos is None:
                continue
            if not isinstance(repos, dict):
                self.errors.append(f"L3.{device}: must be a mapping {{org/repo: [oncall, ...]}}")
                continue
            for name, meta in repos.items():
                self.add(name, meta, "L3", f"L3.{device}", device)


def parse_allowlist(data: Any, source: str = "<allowlist>", *,
                    backend: str | None = None) -> Allowlist:
    """Validate loaded YAML ``data`` (grammar in the module docstring); raises
    ``AllowlistError`` listing every problem.  Unknown top-level keys are logged and ignored.
    ``backend``: this relay's own backend (``RELAY_BACKEND``), the one bare name accepted;
    ``None`` accepts none (CRCR's rule)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise AllowlistError(source, [f"expected a mapping with L1-L4 keys, got {type(data).__name__}"])
    p = _Parse(backend)
    for key in data:
        if key not in LEVELS:
            p.warnings.append(f"unknown top-level key {key!r} ignored")
    for level in ("L1", "L2", "L4"):
        p.entry_list(data.get(level), level)
    p.devices(data.get("L3"))
    entries: dict[str, AllowEntry] = {}
    for entry in p.found:
        if entry.name in entries:
            first = entries[entry.name]
            where = "twice at " + entry.level if first.level == entry.level else \
                f"at {first.level} and {entry.level}"
            p.errors.append(f"duplicate repo {entry.name!r}: listed {where}; a repo sits at one "
                            "level only")
            continue
        entries[entry.name] = entry
    if p.errors:
        raise AllowlistError(source, p.errors)
    for warning in p.warnings:
        log.warning("allowlist %s: %s", source, warning)
    return Allowlist(entries, tuple(p.warnings))


class AllowlistSource(YamlSource[Allowlist]):
    """The current allowlist of ``location`` (path or URL), reloaded when it changes
    (``relay.crcr.yamlsource.YamlSource``); ``backend`` as in ``parse_allowlist``.  Raises
    ``AllowlistError`` when the first load fails."""

    def __init__(self, location: str, *, backend: str | None = None, refresh_s: float = 5.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        def parse(text: str, source: str) -> Allowlist:
            return parse_allowlist(load_yaml_text(text, source, AllowlistError), source,
                                   backend=backend)

        super().__init__(location, parse, error=AllowlistError, refresh_s=refresh_s,
                         transport=transport)


class AllowlistProvider(Protocol):
    """Where the current allowlist comes from: ``get()`` is called per delivery or callback
    (cheap; a file or URL is re-checked at most every few seconds), ``refresh()`` re-reads it now
    and raises ``ConfigError`` on failure (the previous one is kept) — the demotion reconcile
    calls it before ending a demotion (``relay.crcr.demotion``)."""

    def get(self) -> Allowlist: ...

    def refresh(self) -> Allowlist: ...


@dataclass(frozen=True)
class FixedAllowlist:
    """An allowlist that never changes (``RELAY_ALLOWLIST`` unset): ``refresh`` returns it."""

    allowlist: Allowlist

    def get(self) -> Allowlist:
        return self.allowlist

    def refresh(self) -> Allowlist:
        return self.allowlist


def allowlist_source(location: str | None, backend: str, *, refresh_s: float = 5.0) -> AllowlistProvider:
    """The allowlist of ``RELAY_ALLOWLIST`` (``location``): a reloading ``AllowlistSource``, or —
    unset — a ``FixedAllowlist`` of the local ``backend`` alone at L2 (results on the dashboard,
    nothing dispatched); ``backend`` is the one bare name the file may list.  Raises
    ``AllowlistError`` when the first load fails."""
    if not location:
        return FixedAllowlist(Allowlist.local_only(backend, "L2"))
    return AllowlistSource(location, backend=backend, refresh_s=refresh_s)
