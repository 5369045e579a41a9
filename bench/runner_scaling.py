"""Wall and CPU time of the spec runner with 1 vs 2 xdist workers on the same items, in one run.

``python bench/runner_scaling.py [--items 300] [--device spyre] [--shards 2] [--json]``

Takes the first ``--items`` item ids (sorted) of the default specs that are
``mandatory_success`` or ``xfail`` (skips cost nothing and would flatter both sides), runs them
with ``run_items(..., shards=1)`` and then ``shards=N`` (reruns 0, so both sides do the same
work), and prints both wall times in seconds and the ratio ``t1 / tN`` (> 1: more workers help;
the ideal on N free cores is N, minus each worker's fixed pytest/torch/op_db start-up cost).
CPU seconds of the pytest processes (``RUSAGE_CHILDREN``: pytest, its workers) are printed too:
on a machine shared with other work the wall times vary a lot, the CPU seconds much less.
Outcome counts of both runs are printed too: they must be equal, or the comparison is void.
"""

from __future__ import annotations

import argparse
import collections
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from test_specs.expand.universe import expand, spec_paths_default  # noqa: E402
from test_specs.run.runner import run_items  # noqa: E402


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(ids: list[str], shards: int, device: str, workdir: Path) -> tuple[float, float, dict[str, int]]:
    """(wall seconds, CPU seconds of the pytest processes, outcome counts) of one ``run_items`` call."""
    t0, c0 = time.monotonic(), _children_cpu()
    results = run_items(ids, spec_paths_default(), workdir=workdir, device=device, reruns=0,
                        timeout_s=60, shards=shards)
    return time.monotonic() - t0, _children_cpu() - c0, dict(collections.Counter(r.outcome for r in results))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--device", default="spyre", choices=("spyre", "cpu"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    ids = sorted(it.id for it in expand() if it.mode in ("mandatory_success", "xfail"))[: a.items]
    with tempfile.TemporaryDirectory() as tmp:
        t1, cpu1, c1 = measure(ids, 1, a.device, Path(tmp) / "one")
        tn, cpun, cn = measure(ids, a.shards, a.device, Path(tmp) / "many")
    out = {"items": len(ids), "t1_s": round(t1, 2), f"t{a.shards}_s": round(tn, 2),
           "ratio": round(t1 / tn, 3), "cpu1_s": round(cpu1, 2), f"cpu{a.shards}_s": round(cpun, 2),
           "outcomes_1": c1, f"outcomes_{a.shards}": cn, "same_outcomes": c1 == cn}
    if a.json:
        print(json.dumps(out))
    else:
        print(f"{len(ids)} items: 1 worker {t1:.1f} s, {a.shards} workers {tn:.1f} s, ratio {t1 / tn:.2f}x "
              f"(CPU {cpu1:.1f} s vs {cpun:.1f} s)")
        print(f"outcomes 1 worker {c1}; {a.shards} workers {cn}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
