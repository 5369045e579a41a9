"""Agreement of the bundled specs with the bundled device: items, agree, disagree by cause.

``python bench/spec_agreement.py [SPEC ...] [--results RUN.json] [--shards 2] [--timeout 120]
[--json]``

Runs every item of the specs (default: the bundled ``test_specs/specs/``) on the simulated
Spyre device in the mode its spec declares — what ``relay run --spec test_specs/specs/`` does —
or, with ``--results``, scores a run already made (``relay run --json`` output or a sweep's
``results.jsonl``).  Prints the table of ``test_specs.reports.agreement``: items, agree,
unscored, and the disagreements by cause with an example each, then the stale xfails (xfail
items that passed: the spec can be tightened; ``relay specs check --results`` says where).

Baseline measured in the same run: the agreement a device that passes every test would get
(every ``mandatory_success`` item agrees, every ``xfail`` disagrees), so the printed ratio says
how much of the agreement comes from the device failing where the spec says it fails.
Exit status 1 when a disagreement other than a stale xfail is left (a run that would fail).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from test_specs.expand.universe import expand, spec_paths_default  # noqa: E402
from test_specs.reports.agreement import table  # noqa: E402
from test_specs.run.runner import run_items  # noqa: E402
from test_specs.values.results import TestResult  # noqa: E402


def _load(path: Path) -> list[TestResult]:
    text = path.read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
        rows = doc["results"] if isinstance(doc, dict) else doc
    except json.JSONDecodeError:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [TestResult(**{"upstream": "", **{k: v for k, v in r.items() if k in TestResult.model_fields}})
            for r in rows]


def _with_modes(results: list[TestResult], specs: list[Path]) -> list[TestResult]:
    """``relay run --json`` rows carry no mode: take each item's declared mode from the specs."""
    items = {it.id: it for it in expand(specs)}
    out = []
    for r in results:
        it = items.get(r.id)
        out.append(r.model_copy(update={"mode": it.mode, "op": it.op, "module": it.module, "dtype": it.dtype,
                                        "upstream": it.upstream})
                   if it is not None else r)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="*", type=Path)
    ap.add_argument("--results", type=Path, default=None)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    specs = a.specs or spec_paths_default()
    started = time.monotonic()
    if a.results is not None:
        results = _with_modes(_load(a.results), specs)
    else:
        ids = [it.id for it in expand(specs)]
        with tempfile.TemporaryDirectory(prefix="spec-agreement-") as wd:
            results = _with_modes(run_items(ids, specs, workdir=Path(wd), device="spyre", reruns=0,
                                            timeout_s=a.timeout, shards=a.shards), specs)
    t = table(results)
    never_fails = sum(r.mode == "mandatory_success" for r in results)
    scored = t.items - t.unscored
    report = {**t.as_dict(), "wall_s": round(time.monotonic() - started, 1),
              "baseline_device_never_fails": never_fails,
              "ratio_vs_baseline": round(t.agree / never_fails, 3) if never_fails else None}
    if a.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"items {t.items}  agree {t.agree}  unscored {t.unscored}  disagree {t.items - t.agree - t.unscored}"
              f"  (agreement {t.agree / scored:.1%} of {scored} scored)" if scored else "no items")
        print(f"baseline (a device that never fails): {never_fails} agree; ratio {report['ratio_vs_baseline']}")
        for c, n in t.disagree.most_common():
            print(f"  {n:6d}  {c:<48} e.g. {t.examples[c][0]}")
        if t.stale:
            print(f"stale xfails ({len(t.stale)}): " + ", ".join(t.stale[:20]) + (" ..." if len(t.stale) > 20 else ""))
    return 1 if t.bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
