"""Fault harness (issue 17): the real relay under load while a part under it fails.

    .venv/bin/python bench/faults.py                      # every scenario, then the table
    .venv/bin/python bench/faults.py --only pg,github --github-down-s 10
    .venv/bin/python bench/faults.py --soak --soak-minutes 10 --soak-rate 20

Each scenario starts real processes — ``relay serve`` (and ``relay worker`` for the Celery ones)
on their own PostgreSQL database ``faults_<id>`` (dropped afterwards), the fake GitHub of
``tests.fakes.github`` on loopback — sends a paced load of signed push deliveries, does its
fault in the middle, and counts (``bench.fault_kit``): sent, acked (2xx), lost (acked, not
stored: must be 0), stuck (acked, not final when the drain gave up: must be 0), failed,
side effects done twice, seconds to drain after the fault.

==============  ===========================================================================
``baseline``    no fault, in-process (and ``baseline-celery``: one Celery worker): the drain
                time the fault rows compare against
``pg``          PostgreSQL restarted mid-load (``--pg-restart``, default ``pg_ctlcluster
                --skip-systemctl-redirect <ver> main restart``); in-process relay
``redis``       Redis restarted mid-load (``redis-cli shutdown nosave``, then ``redis-server``
                as the machine runs it); relay + one Celery worker on a private queue
``kill9``       the relay, then the worker, killed -9 mid-load while the real pipeline runs a
                small spec (8 op_db tests) for each push; both restarted
``github``      the fake GitHub answers 502 / 429 to every dispatch for ``--github-down-s``
                (default 60)
``readonly``    the state directory (a tmpfs holding the relay's SQLite database) remounted
                read-only for ``--outage-s`` — or, as Linux refuses that while SQLite holds a
                file open for writing, filled up (ENOSPC) for that moment (needs mount rights)
==============  ===========================================================================

PostgreSQL and Redis are SHARED with other engineers' tests: the outages here are a few seconds
and only happen when this script is run on purpose; the pytest suite (``tests/faults``) uses a
cut-able TCP proxy and a private redis-server instead.  ``--soak`` runs ``bench.soak``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.fault_kit import (  # noqa: E402
    Load,
    Proc,
    Row,
    account,
    exit_on_sigterm,
    print_table,
    push_body,
    relay_env,
)

PG_ADMIN = os.environ.get("RELAY_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("RELAY_TEST_REDIS_URL", "redis://127.0.0.1:6379") + "/12"
UNARY = ["aten/src/ATen/native/UnaryOps.cpp"]


def pg_restart_cmd() -> list[str]:
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    return ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"]


def redis_restart() -> None:
    subprocess.run(["redis-cli", "shutdown", "nosave"], check=False, capture_output=True)
    time.sleep(1.0)
    subprocess.run(["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1",
                    "--port", "6379", "--save", "", "--appendonly", "no", "--dir",
                    "/var/lib/redis", "--logfile", "/var/log/redis/ci.log"], check=True)


@dataclass
class Ctx:
    """What a scenario runs against; the test suite replaces the shared-service pieces."""

    work: Path
    github: object  # tests.fakes.github.FakeGitHub
    github_url: str
    pg_admin: str = PG_ADMIN
    pg_url_for: Callable[[str], str] | None = None  # database name → the URL the relay uses
    pg_fault: Callable[[], None] = lambda: subprocess.run(pg_restart_cmd(), check=True)
    redis_url: str = REDIS_URL
    redis_fault: Callable[[], None] = redis_restart
    rate: float = 8.0
    load_s: float = 20.0
    fault_at_s: float = 6.0
    outage_s: float = 3.0
    github_down_s: float = 60.0
    drain_s: float = 300.0
    rows: list[Row] = field(default_factory=list)


def _database(ctx: Ctx, name: str) -> tuple[str, Callable[[], None]]:
    """A fresh PostgreSQL database for one scenario and its drop."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    db = f"faults_{name}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(ctx.pg_admin, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{db}"'))
    url = ctx.pg_url_for(db) if ctx.pg_url_for else str(
        make_url(ctx.pg_admin).set(database=db).render_as_string(hide_password=False))

    def drop() -> None:
        for _ in range(10):
            try:
                with admin.connect() as conn:
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'))
                break
            except Exception:  # noqa: BLE001 - the server may be restarting
                time.sleep(1)
        admin.dispose()

    return url, drop


def scenario(ctx: Ctx, name: str, fault: Callable[[dict[str, Proc]], str], *,
             database_url: str | None = None, worker: bool = False,
             env: dict[str, str] | None = None, files: list[str] | None = None,
             rate: float | None = None, load_s: float | None = None,
             drain_s: float | None = None) -> Row:
    """Serve, load, ``fault(procs)`` at ``fault_at_s`` (returns a note), drain, count."""
    state = ctx.work / name
    state.mkdir(parents=True, exist_ok=True)
    drop: Callable[[], None] = lambda: None  # noqa: E731
    if database_url is None:
        database_url, drop = _database(ctx, name)
    extra = {"RELAY_CELERY_QUEUE": f"faults-{uuid.uuid4().hex[:8]}", **(env or {})}
    if worker:
        extra["RELAY_BROKER_URL"] = ctx.redis_url
    environ = relay_env(state, database_url, ctx.github_url, **extra)
    procs = {"relay": Proc(["serve"], environ, state / "relay.log")}
    if worker:
        procs["worker"] = Proc(["worker", "-c", "1"], environ, state / "worker.log")
    ctx.github.dispatches.clear()  # type: ignore[attr-defined]
    try:
        for p in procs.values():
            p.start()
        load = Load(lambda: procs["relay"].url, rate or ctx.rate, load_s or ctx.load_s,
                    body=lambda n: ("push", push_body(n, files))).start()
        time.sleep(ctx.fault_at_s)
        note = fault(procs)
        fault_end = time.monotonic()
        load.join()
        row = account(name, load, database_url, ctx.github.dispatches,  # type: ignore[attr-defined]
                      max(fault_end, time.monotonic()), drain_s or ctx.drain_s, note)
    finally:
        for p in procs.values():
            p.stop()
        drop()
    ctx.rows.append(row)
    return row


def baseline(ctx: Ctx) -> Row:
    """No fault: the drain time of the same load (what the fault rows compare against)."""
    return scenario(ctx, "baseline", lambda _: "no fault (in-process)")


def baseline_celery(ctx: Ctx) -> Row:
    return scenario(ctx, "baseline-celery", lambda _: "no fault (Celery, 1 worker)", worker=True)


def pg(ctx: Ctx) -> Row:
    def fault(_: dict[str, Proc]) -> str:
        t0 = time.monotonic()
        ctx.pg_fault()
        return f"PostgreSQL down/restarting {time.monotonic() - t0:.1f} s"
    return scenario(ctx, "pg", fault)


def redis(ctx: Ctx) -> Row:
    def fault(_: dict[str, Proc]) -> str:
        t0 = time.monotonic()
        ctx.redis_fault()
        return f"Redis restarted (nosave) in {time.monotonic() - t0:.1f} s"
    return scenario(ctx, "redis", fault, worker=True)


def kill9(ctx: Ctx, *, worker: bool = True) -> Row:
    spec = ctx.work / "tiny.yaml"
    ops = ", ".join(f"{{name: {o}}}" for o in ("abs", "cos", "exp", "neg", "sin"))
    spec.write_text("test_suite_config:\n  files:\n    - source: op_db\n      unlisted_test_mode: "
                    "skip\n      tests:\n        - names: [TestCommon::test_compare_cpu]\n"
                    f"          edits:\n            ops:\n              include: [{ops}]\n"
                    "  global:\n    supported_dtypes: [float16]\n")
    state = ctx.work / "kill9"
    state.mkdir(parents=True, exist_ok=True)
    (state / "allowlist.yaml").write_text("L2: [acme/l2-ci, spyre-sim]\n")

    def fault(procs: dict[str, Proc]) -> str:
        procs["relay"].kill9()
        procs["relay"].start()
        if "worker" not in procs:
            return "relay killed -9 and restarted"
        time.sleep(ctx.outage_s)
        procs["worker"].kill9()
        procs["worker"].start()
        return "relay, then worker killed -9 mid-run and restarted"

    # a run is ~25 s of shards (a pytest process each) on one worker process: a slow, long load
    return scenario(ctx, "kill9", fault, worker=worker, files=UNARY, rate=min(ctx.rate, 0.15),
                    load_s=max(ctx.load_s, 60.0), drain_s=900.0,
                    env={"RELAY_SPECS": str(spec), "RELAY_SHARD_SIZE": "3"})


def github(ctx: Ctx) -> Row:
    fake = ctx.github

    def fault(_: dict[str, Proc]) -> str:
        fake.dispatch_fail = [(502, {}), (429, {"Retry-After": "1"})] * 100_000  # type: ignore[attr-defined]
        time.sleep(ctx.github_down_s)
        fake.dispatch_fail = []  # type: ignore[attr-defined]
        return f"GitHub 502/429 for {ctx.github_down_s:g} s"

    return scenario(ctx, "github", fault)


def _fill(directory: Path) -> Path:
    """Write zeros into ``directory`` until its filesystem is full; returns the file."""
    filler = directory / "filler.bin"
    chunk = b"\0" * (1 << 20)
    with filler.open("wb") as fh:
        try:
            while True:
                fh.write(chunk)
                fh.flush()
        except OSError:
            pass
    return filler


def readonly(ctx: Ctx) -> Row:
    """The relay's state directory — a private tmpfs holding its SQLite database — remounted
    read-only for ``outage_s``.  Linux refuses to remount a filesystem read-only while a file on
    it is open for writing (EBUSY: SQLite keeps its database open), so when that happens the
    same directory is made to refuse writes the other way: filled up (ENOSPC) for the moment."""
    mount = ctx.work / "ro-state"
    mount.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], check=True)
    try:
        def fault(_: dict[str, Proc]) -> str:
            ro = subprocess.run(["mount", "-o", "remount,ro", str(mount)], capture_output=True)
            if ro.returncode == 0:
                try:
                    time.sleep(ctx.outage_s)
                finally:
                    subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
                return f"state dir read-only {ctx.outage_s:g} s (SQLite in it)"
            filler = _fill(mount)
            try:
                time.sleep(ctx.outage_s)
            finally:
                filler.unlink()
            return (f"state dir full (ENOSPC) {ctx.outage_s:g} s: remount ro refused "
                    "while SQLite holds it open")

        return scenario(ctx, "readonly", fault, database_url=f"sqlite:///{mount / 'relay.db'}",
                        env={"RELAY_STATE_DIR": str(mount)})
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


SCENARIOS: dict[str, Callable[[Ctx], Row]] = {
    "baseline": baseline, "baseline-celery": baseline_celery, "pg": pg, "redis": redis,
    "kill9": kill9, "github": github, "readonly": readonly}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated scenarios")
    ap.add_argument("--rate", type=float, default=8.0, help="deliveries per second")
    ap.add_argument("--load-s", type=float, default=20.0)
    ap.add_argument("--outage-s", type=float, default=3.0)
    ap.add_argument("--github-down-s", type=float, default=60.0)
    ap.add_argument("--keep", action="store_true", help="keep the work dir (logs) and say where")
    ap.add_argument("--soak", action="store_true", help="run bench/soak.py instead")
    ap.add_argument("--soak-minutes", type=float, default=10.0)
    ap.add_argument("--soak-rate", type=float, default=20.0)
    ap.add_argument("--burst", action="store_true", help="run bench/burst.py instead")
    ap.add_argument("--relays", type=int, default=1, help="--burst: relay processes")
    ap.add_argument("--pg", action="store_true", help="--burst: on PostgreSQL (else SQLite)")
    ap.add_argument("--compare", action="store_true", help="--burst: 1 vs 2 relays on PostgreSQL")
    ap.add_argument("--base-s", type=float, default=60.0, help="--burst: seconds at 20/s before")
    ap.add_argument("--burst-s", type=float, default=60.0)
    ap.add_argument("--burst-rate", type=float, default=100.0)
    ap.add_argument("--after-s", type=float, default=60.0)
    ap.add_argument("--kill-at", type=float, default=None,
                    help="--burst: kill -9 the first relay this many seconds into the burst")
    args = ap.parse_args(argv)
    if args.soak:
        from bench.soak import soak
        return soak(args.soak_minutes, args.soak_rate, keep=args.keep)
    if args.burst:
        from bench.burst import burst
        exit_on_sigterm()
        pg = args.pg or args.compare or args.relays > 1
        return burst(args.relays, (lambda name: _database(Ctx(Path(tempfile.gettempdir()), None, ""), name))
                     if pg else None, compare=args.compare, keep=args.keep, base_s=args.base_s,
                     burst_s=args.burst_s, burst_rate=args.burst_rate, after_s=args.after_s,
                     kill_at_s=args.kill_at)
    from tests.fakes.github import FakeGitHub
    from tests.fakes.live import LiveServer

    exit_on_sigterm()
    fake = FakeGitHub()
    server = LiveServer(fake.app()).start()
    work = tempfile.mkdtemp(prefix="faults-")
    try:
        ctx = Ctx(Path(work), fake, server.url, rate=args.rate, load_s=args.load_s,
                  outage_s=args.outage_s, github_down_s=args.github_down_s,
                  fault_at_s=min(6.0, args.load_s / 3))
        for name in args.only.split(","):
            print(f"scenario {name} ...", file=sys.stderr, flush=True)
            try:
                SCENARIOS[name](ctx)
            except Exception as exc:  # noqa: BLE001 - the other scenarios still run
                print(f"scenario {name} could not run: {type(exc).__name__}: {exc}",
                      file=sys.stderr)
                ctx.rows.append(Row(name, 0, 0, 0, 0, 0, 0, 0.0, 0, f"NOT RUN: {exc}"[:120]))
    finally:
        server.stop()
        if args.keep:
            print(f"work dir kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print_table(ctx.rows)
    bad = [r for r in ctx.rows if r.lost or r.stuck]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
