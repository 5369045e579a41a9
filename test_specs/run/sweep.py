"""Run every item of a set of spec files and store the counts per outcome.

``python -m test_specs.run.sweep [SPEC ...] --workdir DIR [--shards 2] [--reruns 2] [--timeout 60]
[--device spyre] [--upstream PATH]`` (default specs: ``expand.spec_paths_default()``).

Writes ``DIR/results.jsonl`` (one ``TestResult`` per line, in id order) and ``DIR/summary.json``
``{"items": N, "shards": k, "wall_s": s, "counts": {outcome: n}}``, prints the summary to stdout
and one progress line per 500 results to stderr.  Exit status 0 when no item is ``failed``,
``crashed`` or ``timed_out``, else 1.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import threading
import time
from pathlib import Path

from test_specs.expand.universe import expand, spec_paths_default
from test_specs.run.runner import run_items
from test_specs.values.results import BAD_OUTCOMES, OUTCOMES, TestResult


def sweep(spec_paths: list[Path], workdir: Path, *, shards: int = 2, reruns: int = 2, timeout_s: float = 60,
          device: str = "spyre", upstream: Path | None = None) -> dict:
    """Expand ``spec_paths`` and run every item; returns (and stores) the summary dict."""
    items = expand(spec_paths, upstream=upstream)
    ids = [it.id for it in items]
    done = collections.Counter()
    lock = threading.Lock()
    t0 = time.monotonic()

    def progress(r: TestResult) -> None:
        with lock:
            done[r.outcome] += 1
            n = sum(done.values())
            if n % 500 == 0:
                print(f"[{time.monotonic() - t0:7.1f} s] {n}/{len(ids)} {dict(done)}", file=sys.stderr, flush=True)

    results = run_items(ids, spec_paths, workdir=workdir, device=device, reruns=reruns, timeout_s=timeout_s,
                        shards=shards, on_result=progress, upstream=upstream)
    wall = time.monotonic() - t0
    counts = collections.Counter(r.outcome for r in results)
    summary = {"items": len(ids), "shards": shards, "wall_s": round(wall, 1),
               "counts": {o: counts.get(o, 0) for o in OUTCOMES}}
    workdir.mkdir(parents=True, exist_ok=True)
    with (workdir / "results.jsonl").open("w", encoding="utf-8") as f:
        for r in sorted(results, key=lambda r: r.id):
            f.write(r.model_dump_json() + "\n")
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="*", type=Path)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--reruns", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0, help="per-test timeout, seconds")
    ap.add_argument("--device", default="spyre", choices=("spyre", "cpu"))
    ap.add_argument("--upstream", type=Path, default=None)
    a = ap.parse_args(argv)
    summary = sweep(a.specs or spec_paths_default(), a.workdir, shards=a.shards, reruns=a.reruns,
                    timeout_s=a.timeout, device=a.device, upstream=a.upstream)
    print(json.dumps(summary, indent=2))
    return 1 if any(summary["counts"][o] for o in BAD_OUTCOMES) else 0


if __name__ == "__main__":
    raise SystemExit(main())
