"""Bursts (issue 31): ``relay serve`` under 20/s, then a burst (100/s for 60 s), then 20/s again,
with the real webhook payload shapes of ``../shared/fixtures/github-webhooks`` (as
``bench/soak.py``: each delivery unique, the handled ones processed for real — filter, typed
payload check, CRCR fan-out to the fake GitHub).

    .venv/bin/python bench/faults.py --burst                       # SQLite, one relay
    .venv/bin/python bench/faults.py --burst --relays 2 --pg       # two relays on PostgreSQL
    .venv/bin/python bench/faults.py --burst --compare             # 1 vs 2 relays on PostgreSQL
    .venv/bin/python bench/faults.py --burst --relays 2 --pg --kill-at 20   # one killed -9

Every 5 s it prints the backlog (stored, not final), the relay processes' summed RSS and the
database size (SQLite file + WAL, or ``pg_database_size``).  At the end: the backlog when the
burst ended and how long it took to drain (to the backlog of the steady 20/s phase before it,
or 20, whichever is larger) — the goal is 60 s —, the database bytes per delivery of the
burst against the 20/s phase before it (goal ≤ 2×), RSS before the burst and after the drain,
deliveries processed per second during the burst; and the accounting of several processes
sharing one database: every acked delivery final exactly once, dispatches per delivery at the
fake GitHub (each sent at least once, counted), runs stored twice (0).  ``--compare`` runs one
relay and then two on the same offered load and prints the ratio of processed/s in the burst.
"""

from __future__ import annotations

import itertools
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.fault_kit import FINAL, Load, Proc, final_states, relay_env, runs_twice  # noqa: E402
from bench.soak import _payloads, _unique  # noqa: E402

PHASES = ("before", "burst", "after")


@dataclass
class Sample:
    t: float
    phase: str
    backlog: int
    processed: int
    rss_mb: float
    db_bytes: int


@dataclass
class Burst:
    """One run's settings and what it measured."""

    relays: int = 1
    pg_url: str | None = None
    base_rate: float = 20.0
    base_s: float = 60.0
    burst_rate: float = 100.0
    burst_s: float = 60.0
    after_s: float = 60.0
    #: seconds into the burst at which the first relay is killed -9 (``None``: never); the
    #: load then goes to the others (a refused request counts as not acked, as at GitHub)
    kill_at_s: float | None = None
    samples: list[Sample] = field(default_factory=list)
    acked: dict[str, int] = field(default_factory=dict)  # per phase


def _rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def _numbered(shapes: list[tuple[str, dict]], k: int) -> tuple[str, dict]:
    """Shape ``k`` (cycling) numbered ``k`` over the whole run: every body differs (the relay
    answers a byte-identical body under a new delivery id as a duplicate)."""
    return _unique(shapes[k % len(shapes)], k)


def _kill_first(relays: list[Proc], alive: list[Proc], pids: list[int]) -> None:
    victim = relays[0]
    alive.remove(victim)
    if victim.proc is not None:
        pids.remove(victim.proc.pid)
    victim.kill9()
    print("       relay 0 killed -9", flush=True)


def _counts(engine, sqlite_db: Path | None) -> tuple[int, int, int]:
    """(backlog, processed-or-final, database bytes)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        backlog = conn.execute(text("SELECT count(*) FROM deliveries WHERE status IN "
                                    "('received', 'processing')")).scalar() or 0
        done = conn.execute(text("SELECT count(*) FROM deliveries WHERE status IN "
                                 "('processed', 'ignored', 'failed')")).scalar() or 0
        if sqlite_db is None:
            size = conn.execute(text("SELECT pg_database_size(current_database())")).scalar() or 0
        else:
            size = sum(p.stat().st_size for p in (sqlite_db, Path(f"{sqlite_db}-wal")) if p.exists())
    return int(backlog), int(done), int(size)


def run(b: Burst, work: Path) -> dict[str, float]:
    """Serve ``b.relays`` relays, send the three phases, drain, print; returns the figures."""
    from sqlalchemy import create_engine

    from tests.fakes.github import FakeGitHub
    from tests.fakes.live import LiveServer

    shapes = _payloads()
    fake = FakeGitHub()
    gh = LiveServer(fake.app()).start()
    sqlite_db = None if b.pg_url else work / "relay.db"
    url = b.pg_url or f"sqlite:///{sqlite_db}"
    env = relay_env(work, url, gh.url, RELAY_UPSTREAM_REPO="Codertocat/Hello-World")
    relays = [Proc(["serve"], env, work / f"relay-{i}.log").start() for i in range(b.relays)]
    pids = [r.proc.pid for r in relays if r.proc is not None]
    alive = list(relays)
    turn = itertools.count()

    def target() -> str:
        live = list(alive)
        return live[next(turn) % len(live)].url
    engine = create_engine(url)
    phase = {"name": "before"}
    stop = threading.Event()
    t0 = time.monotonic()

    def sample() -> None:
        while not stop.wait(5.0):
            backlog, done, size = _counts(engine, sqlite_db)
            s = Sample(time.monotonic() - t0, phase["name"], backlog, done, _rss_mb(pids), size)
            b.samples.append(s)
            print(f"{s.t:6.0f} {s.phase:>6} {backlog:8d} {done:8d} {s.rss_mb:8.1f} "
                  f"{size / 2**20:8.1f}", flush=True)

    print(f"{'s':>6} {'phase':>6} {'backlog':>8} {'final':>8} {'rss_mb':>8} {'db_mb':>8}")
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    loads: dict[str, Load] = {}
    seq = itertools.count()
    marks: dict[str, tuple[float, int, int]] = {}
    try:
        for name, rate, secs in (("before", b.base_rate, b.base_s), ("burst", b.burst_rate, b.burst_s),
                                 ("after", b.base_rate, b.after_s)):
            phase["name"] = name
            marks[name] = (time.monotonic() - t0, *_counts(engine, sqlite_db)[1:])
            if name == "burst" and b.kill_at_s is not None:
                threading.Timer(b.kill_at_s, _kill_first, args=(relays, alive, pids)).start()
            loads[name] = Load(target, rate, secs,
                               body=lambda _n: _numbered(shapes, next(seq))).start()
            loads[name].join()
        marks["drain"] = (time.monotonic() - t0, *_counts(engine, sqlite_db)[1:])
        phase["name"] = "drain"
        acked = [d for ld in loads.values() for d, c in ld.codes.items() if 200 <= c < 300]
        deadline = time.monotonic() + 300
        while _counts(engine, sqlite_db)[0] and time.monotonic() < deadline:
            time.sleep(1)
        time.sleep(6)  # one more sample after the drain
        states = final_states(url, acked)
        figures = _report(b, marks, loads, states, acked, fake, url)
    finally:
        stop.set()
        for r in relays:
            r.stop()
        gh.stop()
        engine.dispose()
    return figures


def _report(b: Burst, marks: dict, loads: dict[str, Load], states: dict[str, str],
            acked: list[str], fake, url: str) -> dict[str, float]:
    burst_end = marks["after"][0]
    before = [s for s in b.samples if s.phase == "before"]
    steady = max([s.backlog for s in before[len(before) // 2:]] or [0])
    threshold = max(20, steady)
    at_end = next((s.backlog for s in b.samples if s.t >= burst_end), 0)
    drained_at = next((s.t for s in b.samples if s.t >= burst_end and s.backlog <= threshold), None)
    drain_s = (drained_at - burst_end) if drained_at is not None else float("inf")
    sent = {p: len(ld.codes) for p, ld in loads.items()}
    ok = {p: sum(1 for c in ld.codes.values() if 200 <= c < 300) for p, ld in loads.items()}
    size_before = (marks["burst"][2] - marks["before"][2]) / max(1, ok["before"])
    size_burst = (marks["drain"][2] - marks["burst"][2]) / max(1, ok["burst"] + ok["after"])
    rss_before = before[-1].rss_mb if before else 0.0
    rss_after = b.samples[-1].rss_mb if b.samples else 0.0
    processed_burst = (marks["after"][1] - marks["burst"][1]) / b.burst_s
    sent_to = Counter(p["client_payload"]["delivery_id"] for _, p in fake.dispatches)
    not_final = sum(1 for d in acked if states.get(d) not in FINAL)
    lost = sum(1 for d in acked if d not in states)
    print(f"sent {sent}, acked {ok}; lost (acked, not stored) {lost}; "
          f"stuck (stored, not final after the drain) {not_final - lost}")
    print(f"backlog at the burst's end {at_end}; drained to ≤ {threshold} in "
          f"{drain_s:.0f} s after it (goal ≤ 60 s)")
    print(f"processed during the burst: {processed_burst:.1f}/s (offered {b.burst_rate:g}/s)")
    print(f"database: {size_before / 1024:.1f} KB/delivery at {b.base_rate:g}/s, "
          f"{size_burst / 1024:.1f} KB/delivery in the burst and after "
          f"({size_burst / max(1.0, size_before):.2f}×, goal ≤ 2×)")
    print(f"RSS (all relays): {rss_before:.1f} MB before the burst, {rss_after:.1f} MB after the drain")
    print(f"dispatches: {sum(sent_to.values())} to {len(sent_to)} deliveries, "
          f"{sum(c - 1 for c in sent_to.values() if c > 1)} sent more than once; "
          f"runs stored twice: {runs_twice(url)}")
    return {"drain_s": drain_s, "processed_burst": processed_burst, "not_final": not_final,
            "lost": lost,
            "size_ratio": size_burst / max(1.0, size_before)}


def burst(relays: int, pg_url_for, *, compare: bool = False, keep: bool = False,
          **times: float) -> int:
    """The ``--burst`` entry of ``bench/faults.py``: ``pg_url_for(name)`` gives a fresh
    PostgreSQL database and its drop (``None``: SQLite); returns 0 when every acked delivery
    ended final."""
    bad = 0
    results = {}
    for n in ((1, 2) if compare else (relays,)):
        work = Path(tempfile.mkdtemp(prefix=f"burst-{n}-"))
        url, drop = pg_url_for(f"burst{n}") if pg_url_for else (None, lambda: None)
        print(f"== {n} relay process(es) on {'PostgreSQL' if url else 'SQLite'}", flush=True)
        try:
            results[n] = run(Burst(relays=n, pg_url=url, **times), work)
            bad += results[n]["not_final"] > 0
        finally:
            drop()
            if not keep:
                shutil.rmtree(work, ignore_errors=True)
    if compare:
        print(f"2 vs 1 relay processes, processed/s in the burst: "
              f"{results[2]['processed_burst']:.1f} / {results[1]['processed_burst']:.1f} = "
              f"{results[2]['processed_burst'] / max(0.1, results[1]['processed_burst']):.2f}×")
    return 0 if not bad else 1
