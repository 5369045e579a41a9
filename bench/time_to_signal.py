"""Time to signal: the defaults before issue 29 against today's on the same tests, in one run.

Usage::

    python bench/time_to_signal.py [--items 400]             # execution of a sample of every spec
    python bench/time_to_signal.py --replay [--spec S ...]   # whole replays of the real change

``--items N`` (the default mode): an evenly spaced sample of N items of all bundled specs
(``mandatory_success`` and ``xfail``; the real 2.13.0 → 2.14.1 change selects 8,006 of their
8,201 items, so the universe stands in for its selection without capturing the index of all of
them, minutes on this machine) runs through the spec runner three times:

1. a warm-up with today's defaults, whose durations stand in for the stored ones;
2. **before**: the defaults before issue 29 — one pytest worker (``--shards 1``), every failure
   rerun twice, deterministic device refusals included, collection order;
3. **now**: today's defaults — one worker per core (``OMP_NUM_THREADS`` shared out), refusals not
   rerun, the items longest first by the warm-up's durations.

Stage 4 adds no rerun to either (every failure already had its attempts or is a marked refusal).
``--replay`` replays the change through the whole pipeline (``run_change`` with the CLI's store
and in-process dashboard) instead: a warm-up (index capture, durations stored), before, now.

Printed: the wall seconds of before and now and their ratio (goal ≤ 0.5×), CPU seconds of the
pytest processes, the test span (first test start → last test end: the run without the start-up
each pytest worker pays — interpreter, torch, collecting the specs), the reruns each made
(attempts beyond the first) and the share of the before run's reruns that today's skips, the
refusals not rerun, outcome counts and the tests whose outcome differs (flaky counted as passed;
over 1 % voids the comparison), and the load average before and after (the machine is shared).
The first ``relay select`` on a fresh state directory is issue 28's (a shipped index), not here.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from relay.changes.inputs import read_change  # noqa: E402
from relay.domain.run import Run  # noqa: E402
from relay.execution.registry import executors_for  # noqa: E402
from relay.pipeline.local import LocalExecutors  # noqa: E402
from relay.pipeline.ports import Ports  # noqa: E402
from relay.pipeline.request import RunConfig, RunRequest  # noqa: E402
from relay.pipeline.run import run_change  # noqa: E402
from relay.reporting.sink import StoreAndReport  # noqa: E402
from relay.settings import Settings  # noqa: E402
from relay.store.db import create_schema, make_engine, make_session_factory  # noqa: E402
from relay.store.run_store import SqlRunStore  # noqa: E402
from test_specs.expand.universe import expand, spec_paths_default  # noqa: E402
from test_specs.run.runner import default_shards, run_items  # noqa: E402
from test_specs.values.results import TestResult  # noqa: E402

#: issue 29's goal: today's replay wall at most half of the old defaults'
GOAL = 0.5


def _replay(change, specs: tuple[Path, ...], settings: Settings, *, before: bool) -> tuple[float, Run]:
    """(wall seconds, stored run) of one replay of ``change``, with the old or today's defaults
    (today's: as ``relay replay`` builds them, ``executors_for``, durations from the store)."""
    engine = make_engine(settings.database_url)
    try:
        create_schema(engine)
        sf = make_session_factory(engine)
        store = SqlRunStore(sf, main_ref=settings.quarantine_main_ref)
        if before:
            config = RunConfig(spec_paths=specs, state_dir=settings.state_dir, shards=1)
            executors = LocalExecutors(specs, shards=1, rerun_refusals=True)
        else:
            config = RunConfig(spec_paths=specs, state_dir=settings.state_dir)
            executors = executors_for(settings, specs)
        ports = Ports(executors=executors, store=store, sink=StoreAndReport(store, settings, sf))
        t0 = time.monotonic()
        outcome = run_change(RunRequest(changeset=change), config, ports)
        return time.monotonic() - t0, outcome.run
    finally:
        engine.dispose()


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(fn) -> tuple[float, float, list[TestResult]]:
    """(wall s, CPU s of the pytest processes, results) of ``fn()``."""
    t0, c0 = time.monotonic(), _children_cpu()
    results = fn()
    return time.monotonic() - t0, _children_cpu() - c0, results


def sample(n: int) -> list[str]:
    """``n`` evenly spaced ids (sorted) of the bundled specs' ``mandatory_success``/``xfail`` items."""
    ids = sorted(it.id for it in expand() if it.mode in ("mandatory_success", "xfail"))
    step = max(1, len(ids) / max(n, 1))
    return [ids[int(k * step)] for k in range(min(n, len(ids)))]


def test_span(reportlog: Path) -> float | None:
    """Seconds from the first test's start to the last one's stop in a pytest-reportlog file
    (the run without its start-up: interpreter, torch import, collection per worker)."""
    marks = []
    try:
        for line in reportlog.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec.get("$report_type") == "TestReport" and rec.get("start"):
                marks += [rec["start"], rec["stop"]]
    except (OSError, ValueError):
        return None
    return round(max(marks) - min(marks), 1) if marks else None


def _same(r: TestResult) -> str:
    return "passed" if r.outcome == "flaky" else r.outcome


def _summary(what: str, cpu: list[float], walls: list[float], runs: list[list[TestResult]],
             spans: list[float | None] | None = None) -> dict:
    warm, before, now = runs
    reruns = [sum(max(0, r.attempts - 1) for r in res) for res in (before, now)]
    outcomes = [dict(Counter(r.outcome for r in res)) for res in (before, now)]
    then = {r.id: _same(r) for r in before}
    differ = sorted(r.id for r in now if then.get(r.id) != _same(r))
    return {"test_span_s": spans or [None, None, None], "differ": differ, "what": what,
            "cores": default_shards(), "tests": len(now), "warm_up_s": round(walls[0], 1),
            "before_s": round(walls[1], 1), "now_s": round(walls[2], 1), "ratio": round(walls[2] / walls[1], 3),
            "before_cpu_s": round(cpu[1], 1), "now_cpu_s": round(cpu[2], 1), "goal": GOAL,
            "reruns_before": reruns[0], "reruns_now": reruns[1],
            "share_reruns_skipped": round(1 - reruns[1] / reruns[0], 3) if reruns[0] else None,
            "reruns_skipped": sum(1 for r in now if r.not_rerun),
            "outcomes": {"before": outcomes[0], "now": outcomes[1]}, "comparable": len(differ) <= len(now) // 100}


def measure_items(n: int, workdir: Path) -> dict:
    """The default mode of the module docstring."""
    ids, specs = sample(n), spec_paths_default()
    walls, cpus, runs, spans = [], [], [], []
    warm: dict[str, float] = {}
    for name, kw in (("warm", {}), ("before", {"shards": 1, "rerun_refusals": True}), ("now", {})):
        if name == "now":
            kw = {"durations": warm}
        wall, cpu, res = _timed(lambda kw=kw, name=name: run_items(
            ids, specs, workdir=workdir / name, reruns=2, timeout_s=120,
            shards=kw.pop("shards", default_shards()), **kw))
        walls.append(wall), cpus.append(cpu), runs.append(res)
        spans.append(test_span(workdir / name / "reportlog.jsonl"))
        if name == "warm":
            warm = {r.id: r.duration_ms / 1000 for r in res if r.duration_ms > 0}
    return _summary(f"{len(ids)} evenly spaced items of {len(specs)} bundled specs", cpus, walls, runs, spans)


def measure_replay(change_path: Path, specs: tuple[Path, ...], state_dir: Path) -> dict:
    """``--replay`` of the module docstring."""
    change = read_change(str(change_path))
    settings = Settings(state_dir=state_dir, database_url=f"sqlite:///{state_dir / 'relay.db'}")
    walls, cpus, runs = [], [], []
    for before in (False, True, False):
        wall, cpu, run = _timed(lambda before=before: _replay(change, specs, settings, before=before)[1])
        walls.append(wall), cpus.append(cpu), runs.append(list(run.results))
    return _summary(f"replay of {change_path.name} on {', '.join(s.name for s in specs)}", cpus, walls, runs)


def report(m: dict) -> str:
    verdict = "met" if m["ratio"] <= GOAL else "MISSED"
    share = "–" if m["share_reruns_skipped"] is None else f"{m['share_reruns_skipped'] * 100:.1f} %"
    return "\n".join([
        f"{m['what']}: {m['tests']} tests; {m['cores']} cores; load {m['load_before']} → {m['load_after']}",
        f"warm-up {m['warm_up_s']:.1f} s",
        f"defaults before issue 29 (1 worker, refusals rerun): {m['before_s']:.1f} s wall, "
        f"{m['before_cpu_s']:.1f} CPU-s",
        f"today's defaults ({m['cores']} workers, no refusal reruns, longest first): {m['now_s']:.1f} s wall, "
        f"{m['now_cpu_s']:.1f} CPU-s",
        f"ratio today/before {m['ratio']:.2f}x (goal <= {GOAL}x: {verdict})",
        f"test span (first test start → last test end; without start-up) warm / before / today: "
        f"{' / '.join('–' if x is None else f'{x:.1f} s' for x in m['test_span_s'])}",
        f"reruns: before {m['reruns_before']}, today {m['reruns_now']} — {share} skipped "
        f"({m['reruns_skipped']} failures not rerun: deterministic device refusals)",
        f"outcomes before {m['outcomes']['before']}, today {m['outcomes']['now']}; "
        f"{len(m['differ'])} tests differ (flaky counted as passed) {m['differ'][:3]}"
        + ("" if m["comparable"] else "  — over 1 %: the comparison is void"),
    ])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=400, help="sample size of the default mode")
    ap.add_argument("--replay", action="store_true", help="whole replays of --change on --spec instead")
    ap.add_argument("--change", type=Path, default=ROOT / "examples" / "changes" / "torch-2.13.0..2.14.1.json")
    ap.add_argument("--spec", type=Path, action="append",
                    help="spec file (repeatable; default test_specs/specs/opinfo_core.yaml)")
    ap.add_argument("--json", action="store_true")
    ns = ap.parse_args(argv)
    specs = tuple(p.resolve() for p in (ns.spec or [ROOT / "test_specs" / "specs" / "opinfo_core.yaml"]))
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="time-to-signal-") as tmp:
        m = measure_replay(ns.change, specs, Path(tmp)) if ns.replay else measure_items(ns.items, Path(tmp))
    m.update(load_before=[round(x, 2) for x in load0], load_after=[round(x, 2) for x in os.getloadavg()])
    print(json.dumps(m, indent=1) if ns.json else report(m))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
