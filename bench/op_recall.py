"""Per-test recall of selection against the device trace (issue 28).

1. **Ground truth**: the spec items run on the simulated device with ``SPYRE_SIM_TRACE`` on
   (``spyre_backend.trace``): every aten overload that reached the device, per test.  Run in
   chunks of ``--chunk`` items (``--spyre-select``), each a pytest subprocess; a finished chunk
   is kept, so an interrupted run resumes; progress per chunk on stderr.  Cached under
   ``--state`` per torch version and spec content (``op_recall-<torch>-<sha12 of the spec files>/``).
   ``--limit N`` runs an evenly spaced sample of N items (the others are still the universe
   selection chooses from).
2. **Per op**: for every packet (``aten::mm``) traced in a test that ran (data movement left
   out), the change a kernel edit of that op makes — one ``aten/src/ATen/native`` hunk whose
   header names the op's kernel from ``native_functions.yaml`` (its CPU kernel first; the file
   from ``bench/catch_rate_kernels.py`` when listed there, else a neutral ``Kernels.cpp``), as a
   push with patches brings it — goes through stages 1–3 over the whole universe.  Every test
   whose trace holds the op must be selected.
3. **Printed**: ops covered, (op, test) pairs, per-test recall over the pairs, per-op recall
   (ops at 100 %), the share of the universe selected (median, max), and every miss with the
   stage that dropped it and that stage's last reason.
4. **Confirmation** (``--confirm K``): for K traced ops (the ones with most traced tests, ties
   by name) the sample runs again with ``SPYRE_SIM_FAULTS=<op>:raise``: the tests whose outcome
   changes must be exactly the traced tests of the op that passed without the fault (here the
   trace includes nested calls — the simulator's own plumbing, where a fault fires too; recall
   in step 2 counts the top-level ops a test sends, ``spyre_backend.trace``).

Run niced, in the background: ``nice -n 10 .venv/bin/python bench/op_recall.py [--spec FILE ...]
[--limit N] [--confirm 10] [--state DIR] [--index-cache DIR] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from catch_rate_kernels import KERNEL_FILES  # noqa: E402

from relay.pipeline.audit import explain_drops  # noqa: E402
from selection.attribution.source_map import SourceMap, installed_root  # noqa: E402
from selection.index.op_index import DATA_MOVEMENT, torch_version  # noqa: E402
from selection.models import ChangedFile, ChangeSet  # noqa: E402
from selection.pipeline import Selector  # noqa: E402
from spyre_backend.faults import test_key  # noqa: E402
from spyre_backend.trace import read_trace  # noqa: E402
from test_specs.expand.universe import expand, spec_paths_default  # noqa: E402
from test_specs.reports.records import ReportLog  # noqa: E402

PASSED = {"passed"}


def _state(args, specs: list[Path]) -> Path:
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(specs))).hexdigest()[:12]
    return Path(args.state) / f"op_recall-{torch_version()}-{digest}"


def _pytest(specs: list[Path], ids: list[str], out: Path, env: dict[str, str]) -> dict[str, str]:
    """Run ``ids`` of ``specs`` on the device into ``out``; item id → outcome."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "ids.txt").write_text("\n".join(ids) + "\n")
    cmd = [sys.executable, "-m", "pytest", "-p", "test_specs.plugin", *map(str, specs), "-q",
           "-p", "no:randomly", "-p", "no:cacheprovider", f"--spyre-select={out / 'ids.txt'}",
           f"--spyre-dump-items={out / 'items.jsonl'}", f"--report-log={out / 'log.jsonl'}"]
    full = {k: v for k, v in os.environ.items() if not k.startswith("SPYRE_SIM_")} | env
    subprocess.run(cmd, cwd=out, env=full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    log = ReportLog(out / "log.jsonl", out / "items.jsonl")
    return {r.id: r.outcome for r in log.poll()}


def ground_truth(args, specs: list[Path], ids: list[str], state: Path) -> tuple[dict, dict, dict]:
    """(item id → traced packets, → with nested calls, → outcome) over ``ids``, chunked, resumable."""
    chunks = [ids[n:n + args.chunk] for n in range(0, len(ids), args.chunk)]
    outcomes: dict[str, str] = {}
    by_key: dict[str, set[str]] = {}
    nested_by_key: dict[str, set[str]] = {}
    node_to_id: dict[str, str] = {}
    for k, chunk in enumerate(chunks):
        out = state / f"chunk-{k:04d}"
        done = out / "outcomes.json"
        if not done.exists():
            t0 = time.monotonic()
            got = _pytest(specs, chunk, out, {"SPYRE_SIM_TRACE": str(out / "trace")})
            done.write_text(json.dumps(got))
            print(f"trace chunk {k + 1}/{len(chunks)}: {len(got)} tests in {time.monotonic() - t0:.0f} s",
                  file=sys.stderr, flush=True)
        outcomes.update(json.loads(done.read_text()))
        files = sorted((out / "trace").glob("trace-*.jsonl"))
        for key, ops in read_trace(files).items():
            by_key.setdefault(key, set()).update(ops)
        for key, ops in read_trace(files, nested=True).items():
            nested_by_key.setdefault(key, set()).update(ops)
        for line in (out / "items.jsonl").read_text().splitlines() if (out / "items.jsonl").exists() else ():
            rec = json.loads(line)
            node_to_id[test_key(rec["nodeid"])] = rec["item"]["id"]
    def packets(by: dict[str, set[str]]) -> dict[str, set[str]]:
        return {node_to_id[k]: {o.split(".")[0] for o in ops} - DATA_MOVEMENT
                for k, ops in by.items() if k in node_to_id}

    return packets(by_key), packets(nested_by_key), outcomes


def kernel_change(op: str, sm: SourceMap) -> ChangeSet:
    """The push-shaped change of a kernel edit of ``op`` (module docstring, step 2)."""
    name = op.split("::")[1]
    kernels = sorted(k for k, ops in sm.kernels.items() if op in ops and k != name)
    kernel = next((k for k in kernels if "cpu" in k.lower()), kernels[0] if kernels else name)
    path = next((f for f, ops in KERNEL_FILES.items() if op in ops), "aten/src/ATen/native/Kernels.cpp")
    patch = (f"@@ -10,3 +10,3 @@ Tensor& {kernel}(const Tensor& self) {{\n"
             "   {\n-    int x = 0;\n+    int x = 1;\n   }\n")
    return ChangeSet(base="recall", head=f"kernel-{name}", files=[ChangedFile(filename=path, patch=patch)])


def per_op(selector: Selector, sm: SourceMap, traced: dict[str, set[str]]) -> dict[str, dict]:
    """op → {tests, selected, share, misses: [(test, stage, reason)]} for every traced op; a test
    is selected when stages 1–3 keep it with a mode that runs it (``explain_drops``, the audit's
    own account of what dropped a test, in selection's terms)."""
    ops = sorted({o for v in traced.values() for o in v})
    universe = [i.id for i in selector.items]
    out: dict[str, dict] = {}
    for op in ops:
        dropped = explain_drops(selector, kernel_change(op, sm), universe)
        tests = sorted(t for t, o in traced.items() if op in o)
        misses = [(t, *dropped[t]) for t in tests if t in dropped]
        out[op] = {"tests": len(tests), "selected": len(tests) - len(misses),
                   "share": (len(universe) - len(dropped)) / len(universe), "misses": misses}
    return out


def confirm(args, specs, ids, state, traced, outcomes, ops) -> list[dict]:
    """For each op: the tests a ``raise`` fault on it fails vs. those the trace predicts."""
    rows = []
    for op in ops:
        out = state / f"fault-{op.replace('::', '_')}"
        done = out / "outcomes.json"
        if not done.exists():
            done.parent.mkdir(parents=True, exist_ok=True)
            done.write_text(json.dumps(_pytest(specs, ids, out, {"SPYRE_SIM_FAULTS": f"{op}:raise"})))
        faulted = json.loads(done.read_text())
        failed = {t for t, o in faulted.items() if outcomes.get(t) in PASSED and o not in PASSED}
        predicted = {t for t, o in traced.items() if op in o and outcomes.get(t) in PASSED}
        rows.append({"op": op, "predicted": len(predicted), "failed": len(failed), "exact": failed == predicted,
                     "unpredicted": sorted(failed - predicted), "not_failed": sorted(predicted - failed)})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", action="append", help="spec file (repeatable; default: every bundled spec)")
    ap.add_argument("--limit", type=int, default=0, help="trace an evenly spaced sample of N items")
    ap.add_argument("--chunk", type=int, default=200)
    ap.add_argument("--confirm", type=int, default=10)
    ap.add_argument("--state", default=".relay")
    ap.add_argument("--index-cache", default=None, help="op index cache dir (default: <state>/index)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--trace-only", action="store_true", help="stop after the (cached) trace run")
    args = ap.parse_args()
    specs = [Path(p).resolve() for p in (args.spec or spec_paths_default())]
    universe = expand(specs)
    ids = [i.id for i in universe if i.op is not None or i.module is not None]
    if args.limit and args.limit < len(ids):
        ids = [ids[round(n * len(ids) / args.limit)] for n in range(args.limit)]
    state = _state(args, specs)
    t0 = time.monotonic()
    traced, with_nested, outcomes = ground_truth(args, specs, ids, state)
    ran = {t: o for t, o in traced.items() if outcomes.get(t) not in (None, "skipped")}
    if args.trace_only:
        print(f"traced {len(ran)} of {len(ids)} tests", file=sys.stderr)
        return 0
    root, version = installed_root()
    cache = Path(args.index_cache or Path(args.state) / "index")
    sm = SourceMap.build(root, version=version, cache_dir=cache)
    selector = Selector(universe, cache_dir=cache, source_map=sm)
    ops = per_op(selector, sm, ran)
    pairs = sum(r["tests"] for r in ops.values())
    hit = sum(r["selected"] for r in ops.values())
    shares = [r["share"] for r in ops.values()]
    full = sum(r["selected"] == r["tests"] for r in ops.values())
    print(f"traced tests {len(ran)} of {len(ids)} run ({len(universe)} in the universe); ops covered {len(ops)}")
    print(f"(op, test) pairs {pairs}; per-test recall {hit / pairs:.4%} ({pairs - hit} missed)")
    mean = statistics.mean(r["selected"] / r["tests"] for r in ops.values())
    print(f"per-op recall: {full}/{len(ops)} ops at 100 %; mean {mean:.4%}")
    print(f"share selected: median {statistics.median(shares):.2%}, max {max(shares):.2%} "
          f"({max(ops, key=lambda o: ops[o]['share'])}); ops over 10 %: {sum(s > 0.10 for s in shares)}")
    for op, r in ops.items():
        for test, stage, why in r["misses"]:
            print(f"  MISS {op} {test}: dropped by {stage}: {why[:160]}")
    picked = sorted(ops, key=lambda o: (-ops[o]["tests"], o))[:args.confirm]
    rows = confirm(args, specs, ids, state, with_nested, outcomes, picked) if args.confirm else []
    if rows:
        print(f"{'op':32} {'predicted':>9} {'failed':>6}  exact")
        for r in rows:
            diff = "" if r["exact"] else f"  unpredicted {r['unpredicted'][:3]} not failed {r['not_failed'][:3]}"
            print(f"{r['op']:32} {r['predicted']:>9} {r['failed']:>6}  {'yes' if r['exact'] else 'NO'}{diff}")
    print(f"wall {time.monotonic() - t0:.0f} s", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps({"ops": ops, "confirm": rows, "pairs": pairs, "selected_pairs": hit},
                                              indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
