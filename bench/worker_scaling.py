"""Wall time of one replay's test execution on 1 vs 2 Celery workers, measured in one run.

``python bench/worker_scaling.py [--items 96] [--shards 8] [--spec PATH] [--json]
[--database-url URL] [--broker-url URL]``

Takes the first ``--items`` ``mandatory_success``/``xfail`` item ids (sorted) of the packaged
``opinfo_core.yaml`` (or ``--spec``), then runs exactly those ids through ``CeleryExecutor``
(``--shards`` shards, reruns 0) twice: with one ``relay worker -c 1`` and with two.  Broker:
Redis (default ``redis://127.0.0.1:6379/12``, a unique queue); database: a fresh PostgreSQL
schema (default ``postgresql+psycopg://postgres@127.0.0.1:5432/test``), dropped afterwards.
Prints both wall times in seconds and the ratio ``t1 / t2`` (goal ≥ 1.6 on 2 free cores; each
shard pays a fixed pytest/torch start-up).  Outcome counts of both runs are printed and must be
equal.  Exit 1 if a run fails; 2 if Redis or PostgreSQL is unreachable.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from relay.settings import Settings as DistributedSettings  # noqa: E402
from relay.worker.celery.executor import CeleryExecutor  # noqa: E402


def _items(spec: Path, n: int) -> list[str]:
    from test_specs.expand.universe import expand

    ids = sorted(i.id for i in expand([spec]) if i.mode in ("mandatory_success", "xfail"))
    return ids[:n]


def _start(env: dict[str, str], name: str, logdir: Path) -> subprocess.Popen:
    log = logdir / f"{name}.log"
    proc = subprocess.Popen([str(Path(sys.executable).parent / "relay"), "worker", "-c", "1",
                             "-n", f"{name}@bench"], env={**os.environ, **env},
                            stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while "ready." not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"worker {name} did not start:\n{log.read_text()[-2000:]}")
        time.sleep(0.1)
    return proc


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def measure(workers: int, ids: list[str], spec: Path, env: dict[str, str], settings: DistributedSettings,
            logdir: Path) -> tuple[float, dict[str, int]]:
    """(wall seconds of the execution, outcome counts) with ``workers`` workers of 1 process."""
    procs = [_start(env, f"w{workers}-{k}", logdir) for k in range(workers)]
    try:
        execute = CeleryExecutor(settings, [spec], device="spyre", timeout_s=60, reruns=0,
                                 label=f"bench-{workers}")
        t0 = time.monotonic()
        results = execute(ids)
        return time.monotonic() - t0, dict(collections.Counter(r.outcome for r in results))
    finally:
        _stop(procs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=96)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--spec", type=Path, default=None)
    ap.add_argument("--database-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    ap.add_argument("--broker-url", default="redis://127.0.0.1:6379/12")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from importlib import resources

    import redis
    from sqlalchemy import create_engine, text

    spec = args.spec or Path(str(resources.files("test_specs") / "specs" / "opinfo_core.yaml"))
    schema = f"relay_bench_{uuid.uuid4().hex[:8]}"
    try:
        redis.Redis.from_url(args.broker_url, socket_connect_timeout=2).ping()
        admin = create_engine(args.database_url)
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:  # noqa: BLE001
        print(f"error: Redis or PostgreSQL not reachable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    db = f"{args.database_url}?options=-csearch_path%3D{schema}"
    ids = _items(spec, args.items)
    size = max(1, -(-len(ids) // args.shards))
    env = {"RELAY_DATABASE_URL": db, "RELAY_BROKER_URL": args.broker_url,
           "RELAY_CELERY_QUEUE": f"relay-bench-{uuid.uuid4().hex[:8]}", "RELAY_SHARD_SIZE": str(size)}
    settings = DistributedSettings(database_url=db, broker_url=args.broker_url,
                                   celery_queue=env["RELAY_CELERY_QUEUE"], shard_size=size)
    try:
        from relay.store import create_schema, make_engine

        engine = make_engine(db)
        create_schema(engine)
        engine.dispose()
        with tempfile.TemporaryDirectory(prefix="relay-bench-") as tmp:
            t1, c1 = measure(1, ids, spec, env, settings, Path(tmp))
            t2, c2 = measure(2, ids, spec, env, settings, Path(tmp))
    except Exception as exc:  # noqa: BLE001
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
    ratio = t1 / t2 if t2 > 0 else float("inf")
    out = {"items": len(ids), "shards": -(-len(ids) // size), "cpus": os.cpu_count(),
           "load_avg_1m": os.getloadavg()[0], "one_worker_s": round(t1, 2),
           "two_workers_s": round(t2, 2), "ratio": round(ratio, 2), "counts_1": c1, "counts_2": c2,
           "same_outcomes": c1 == c2}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{len(ids)} items in {out['shards']} shards; 1 worker: {t1:.1f} s; 2 workers: "
              f"{t2:.1f} s; ratio {ratio:.2f}x (goal >= 1.6 on 2 free cores; load avg "
              f"{out['load_avg_1m']:.1f} on {out['cpus']} cpus)")
        print(f"outcomes 1 worker: {c1}; 2 workers: {c2}" + ("" if c1 == c2 else "  (DIFFER)"))
    return 0 if c1 == c2 else 1


if __name__ == "__main__":
    sys.exit(main())
