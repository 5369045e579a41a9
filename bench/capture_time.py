"""Op index capture time: the rule of issue 28 against the old one, in the same run.

For an evenly spaced sample of ``--items`` OpInfo items of the bundled specs (or ``--spec``),
captures each item's ops on the simulated device twice, alternating per item so load drifts hit
both alike: the **baseline** — the first 8 OpInfo samples (the capture before issue 28; the
device-op collection it now also does costs a set insert per device call) — and the
**current** ``selection.index.op_index.capture_ops`` (every sample up to ``MIN_SAMPLES``, then
until ``PATIENCE`` in a row add no op; plus the ops reaching the device below the mode).
Prints both CPU times, their ratio (goal ≤ 2×: a cold build at most twice today's) and how many
items the baseline's op set misses ops of the current one.

Run: ``nice -n 10 .venv/bin/python bench/capture_time.py [--items 200] [--spec FILE ...]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from selection.index import op_index  # noqa: E402
from test_specs.expand.universe import expand  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--spec", action="append", type=Path)
    args = ap.parse_args()
    import spyre_backend  # noqa: F401  (registers the device)

    table = op_index._opinfo_table()
    items = [i for i in expand(args.spec) if i.op is not None and i.subject in table]
    step = max(1, len(items) // args.items)
    items = items[::step][:args.items]
    base_s = cur_s = 0.0
    poorer = 0
    for item in items:
        t0 = time.process_time()
        old = set(op_index.capture_ops(item, "spyre", min_samples=8, patience=-1))  # the first 8 samples
        t1 = time.process_time()
        new = set(op_index.capture_ops(item, "spyre"))
        t2 = time.process_time()
        base_s += t1 - t0
        cur_s += t2 - t1
        poorer += bool(new - old)
    print(f"{len(items)} items; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"baseline (first 8 samples) {base_s:.1f} CPU-s; current {cur_s:.1f} CPU-s: "
          f"{cur_s / base_s:.2f}x (goal <= 2x)")
    print(f"items whose baseline misses ops the current capture sees: {poorer}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
