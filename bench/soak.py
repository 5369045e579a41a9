"""Soak (issue 17): ``relay serve`` with the in-process pool under a steady load of the real
webhook payload shapes of ``../shared/fixtures/github-webhooks`` (octokit/webhooks examples:
pull_request opened/synchronize/closed/labeled/…, push, check_run, check_suite, ping), each
sent with a fresh delivery id.

    .venv/bin/python bench/faults.py --soak --soak-minutes 10 --soak-rate 20

The fixtures' repository (``Codertocat/Hello-World``) is made the upstream, so the handled
events are processed for real (filter, typed payload check, CRCR fan-out to the fake GitHub);
the local backend is not on the allowlist (a pipeline run per delivery at 20/s is not a soak of
the relay).  Every 30 s the relay process's RSS (``/proc/<pid>/status`` VmRSS), open file
descriptors (``/proc/<pid>/fd``), the SQLite database size (file + WAL) and the backlog (stored,
not final) are printed; at the end the RSS growth, the RSS slope over the second half (MB/min,
least squares — a leak shows as a slope that does not flatten) and the fd growth, then the
drain: every acked delivery must be final.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.fault_kit import FINAL, Load, Proc, exit_on_sigterm, final_states, relay_env  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "github-webhooks"


def _unique(shape: tuple[str, dict], n: int) -> tuple[str, dict]:
    """The shape with a sequence number: the relay answers a byte-identical body under a new
    delivery id as a duplicate, so each delivery of the soak must differ."""
    event, payload = shape
    return event, {**payload, "bench_seq": n}


def _payloads() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(FIXTURES.glob("*.payload.json")):
        event = path.name.split(".")[0]
        out.append((event, json.loads(path.read_text())))
    return out


def _sample(pid: int, db: Path) -> tuple[float, int, int]:
    """(RSS MB, open fds, database bytes) of the relay process."""
    rss_kb = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                  if line.startswith("VmRSS:"))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    size = sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())
    return rss_kb / 1024, fds, size


def _slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of ``(minutes, value)`` points."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def soak(minutes: float, rate: float, every_s: float = 30.0, keep: bool = False) -> int:
    """Run the soak; returns 0 when every acked delivery ended final, else 1.  ``keep``:
    leave the work dir (database, relay log) in place."""
    if not FIXTURES.is_dir():
        print(f"soak needs {FIXTURES} (the shared webhook fixtures)", file=sys.stderr)
        return 2
    from tests.fakes.github import FakeGitHub
    from tests.fakes.live import LiveServer

    exit_on_sigterm()
    shapes = _payloads()
    fake = FakeGitHub()
    gh = LiveServer(fake.app()).start()
    work = Path(tempfile.mkdtemp(prefix="soak-"))
    db = work / "relay.db"
    env = relay_env(work, f"sqlite:///{db}", gh.url, RELAY_UPSTREAM_REPO="Codertocat/Hello-World")
    relay = Proc(["serve"], env, work / "relay.log").start()
    assert relay.proc is not None
    load = Load(lambda: relay.url, rate, minutes * 60, body=lambda n: _unique(shapes[n % len(shapes)], n)).start()
    t0 = time.monotonic()
    samples: list[tuple[float, float, int, int, int]] = []
    print(f"{'min':>5} {'sent':>7} {'rss_mb':>7} {'fds':>5} {'db_mb':>7} {'backlog':>8}")
    try:
        while load._thread is not None and load._thread.is_alive():
            time.sleep(every_s)
            rss, fds, size = _sample(relay.proc.pid, db)
            codes = dict(load.codes)
            acked = [d for d, c in codes.items() if 200 <= c < 300]
            states = final_states(env["RELAY_DATABASE_URL"], acked[-2000:])
            backlog = sum(1 for s in states.values() if s not in FINAL)
            mins = (time.monotonic() - t0) / 60
            samples.append((mins, rss, fds, size, backlog))
            print(f"{mins:5.1f} {len(codes):7d} {rss:7.1f} {fds:5d} {size / 2**20:7.1f} {backlog:8d}",
                  flush=True)
        load.join()
        deadline = time.monotonic() + 300
        acked = [d for d, c in load.codes.items() if 200 <= c < 300]
        while True:
            states = final_states(env["RELAY_DATABASE_URL"], acked)
            left = [d for d in acked if states.get(d) not in FINAL]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(1)
    finally:
        relay.stop()
        gh.stop()
    second = [(m, r) for m, r, *_ in samples[len(samples) // 2:]]
    codes = list(load.codes.values())
    print(f"sent {len(codes)} at {rate:g}/s for {minutes:g} min; acked {len(acked)}; "
          f"refused {sum(1 for c in codes if not 200 <= c < 300)}; not final after drain {len(left)}")
    if samples:
        print(f"RSS {samples[0][1]:.1f} → {samples[-1][1]:.1f} MB "
              f"(second-half slope {_slope(second):+.2f} MB/min); open fds {samples[0][2]} → "
              f"{samples[-1][2]}; database {samples[-1][3] / 2**20:.1f} MB "
              f"({samples[-1][3] / max(1, len(acked)):.0f} bytes/delivery)")
    if keep:
        print(f"work dir kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not left else 1


if __name__ == "__main__":
    sys.exit(soak(float(sys.argv[1]) if len(sys.argv) > 1 else 10.0,
                  float(sys.argv[2]) if len(sys.argv) > 2 else 20.0))
