"""Speed of selection (issue 13): ``relay select`` wall time with every index cached, and
in-process selection per typical PR on a 50,000-test universe — each against a baseline
measured in the same run.

1. **CLI wall** (``relay select --files CHANGE --json`` in a subprocess, state dir warm): the
   median of ``--repeat`` calls, against two baselines of the same run: ``python -c "import
   torch"`` (what every call paid before the caches avoided importing torch) and expanding the
   bundled specs without the universe cache (what every call did before: op_db expansion).
2. **In-process** ``Selector.select`` on the real items plus generated items up to
   ``--universe`` (``bench/selection_eval.generated_universe``), for the typical PR cases
   (``bench/cases/typical-*.json``): median ms per case over ``--repeat`` runs, against the same
   cases on the real universe alone (8,201 items) as the baseline.

Run: ``.venv/bin/python bench/select_speed.py [--state-dir .relay] [--universe 50000] [--repeat 5]``.
The first run fills the caches (index capture: minutes); timings are of later calls.  Numbers
on a shared machine are "measured under load": compare the ratios, not the absolute values.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

TYPICAL_PR = [  # SoftMax.cpp + torch/_refs/__init__.py as a PR with patches (GitHub PR-files shape)
    {"filename": "aten/src/ATen/native/SoftMax.cpp", "status": "modified",
     "patch": "@@ -120,7 +120,7 @@ TORCH_IMPL_FUNC(softmax_cpu_out)\n-  auto x = a;\n+  auto x = b;\n"},
    {"filename": "torch/_refs/__init__.py", "status": "modified",
     "patch": "@@ -10,3 +10,3 @@ def softmax(a, dim):\n-    return a\n+    return b\n"},
]


def _wall(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} … failed:\n{proc.stderr[-2000:]}")
    return time.perf_counter() - t0


def cli_wall(state_dir: Path, repeat: int) -> dict:
    """Median seconds of ``relay select`` (warm) and of the two baselines (module docstring)."""
    env = {**os.environ, "RELAY_STATE_DIR": str(state_dir)}
    env.pop("RELAY_DATABASE_URL", None)
    with tempfile.TemporaryDirectory() as tmp:
        change = Path(tmp) / "pr-files.json"
        change.write_text(json.dumps(TYPICAL_PR))
        select = [sys.executable, "-m", "relay.cli", "select", "--files", str(change), "--json"]
        _wall(select, env)  # fills any missing cache (index capture on a first run)
        runs = [_wall(select, env) for _ in range(repeat)]
    torch_import = [_wall([sys.executable, "-c", "import torch"], env) for _ in range(repeat)]
    expand = [sys.executable, "-c", "from relay.pipeline.specs import default_specs, load_items; "
              "load_items(default_specs())"]
    expansion = [_wall(expand, env) for _ in range(max(1, repeat // 2))]
    out = {"select_s": statistics.median(runs), "import_torch_s": statistics.median(torch_import),
           "expand_specs_s": statistics.median(expansion)}
    out["select_vs_import_torch"] = out["select_s"] / out["import_torch_s"]
    out["select_vs_expand_specs"] = out["select_s"] / out["expand_specs_s"]
    return out


def in_process(state_dir: Path, target: int, repeat: int) -> dict:
    """Median ms of ``Selector.select`` per typical case: ``target`` items vs the real universe."""
    from selection_eval import generated_universe, load_cases

    from relay.pipeline.specs import default_specs, load_items
    from selection.index.op_index import TestOpIndex, _opinfo_table, cached_generators
    from selection.models import ChangeSet
    from selection.pipeline import Selector

    cache = state_dir / "index"
    real = load_items(default_specs(), cache_dir=cache)
    index = TestOpIndex.build(real, device="spyre", cache_dir=cache)
    subjects = sorted(((op.name, op.variant_test_name or None) for op in _opinfo_table().values()),
                      key=lambda s: (s[0], s[1] or ""))
    items, entries = generated_universe(real, index.entries, subjects, target)
    gens = cached_generators(cache)
    cases = [c for c in load_cases([ROOT / "bench" / "cases"]) if c["name"].startswith("typical-")]
    changes = {c["name"]: ChangeSet.model_validate(c["changeset"]) for c in cases}
    changes["softmax+refs-pr"] = ChangeSet(base="a", head="b", files=TYPICAL_PR)
    rows = {}
    for label, universe, idx in (("real", real, index), ("big", items, TestOpIndex(entries))):
        selector = Selector(universe, index=idx, generators=gens, cache_dir=cache)
        for name, cs in changes.items():
            ms = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                sel = selector.select(cs)
                ms.append((time.perf_counter() - t0) * 1000.0)
            rows.setdefault(name, {})[label] = {"ms": round(statistics.median(ms), 1),
                                                "universe": sel.universe, "selected": len(sel.selected)}
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--state-dir", type=Path, default=ROOT / ".relay")
    ap.add_argument("--universe", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-cli", action="store_true", help="only the in-process measurement")
    args = ap.parse_args(argv)
    if not args.skip_cli:
        cli = cli_wall(args.state_dir, args.repeat)
        print(f"relay select (caches warm), median of {args.repeat}: {cli['select_s']:.2f} s")
        print(f"  baseline `import torch`:            {cli['import_torch_s']:.2f} s "
              f"(select / baseline = {cli['select_vs_import_torch']:.2f})")
        print(f"  baseline spec expansion (no cache):  {cli['expand_specs_s']:.2f} s "
              f"(select / baseline = {cli['select_vs_expand_specs']:.2f})")
    rows = in_process(args.state_dir, args.universe, args.repeat)
    print(f"in-process Selector.select, median of {args.repeat} (ms):")
    for name, r in rows.items():
        big, real = r["big"], r["real"]
        print(f"  {name:<24} {big['ms']:>7.1f} ms on {big['universe']:,} ({big['selected']} selected)"
              f"   baseline {real['ms']:>6.1f} ms on {real['universe']:,}"
              f"   ratio {big['ms'] / max(real['ms'], 0.01):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
