"""The audit of a real upgrade: ``torch==2.13.0`` → ``torch==2.14.1`` on the bundled specs.

Every audited test runs in both torch environments (``relay.pipeline.audit.audit_change``, the
code behind ``relay audit``); selection runs on the change set of the two release wheels
(``examples/changes/torch-2.13.0..2.14.1.json``, upgrade mode); every outcome change selection
did not pick is printed with the stage and reason that dropped it.

Printed (measured in this run): audited tests, outcome changes by transition (``passed → failed``
…), recall of real outcome changes and of regressions (goal 100 %), the selected share of the
universe and of the audited tests, wall time.

The environments are virtual environments under ``<state>/envs`` (built once: pip installs the
2.14.1 wheel, ~5.5 GB with its NVIDIA libraries, which runs on the CPU; README "Regression
verdicts").  The whole bundled universe is ~8,200 tests (~16 min per environment on a quiet
2-core machine): ``--spec`` narrows it to some spec files, ``--limit N`` audits an evenly spaced
sample of N of its tests (selection still sees the whole universe of the specs).

Run: ``.venv/bin/python bench/audit_upgrade.py [--spec test_specs/specs/opinfo_core.yaml]
[--limit N] [--shards 2] [--state .relay] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHANGE = ROOT / "examples" / "changes" / "torch-2.13.0..2.14.1.json"
BASE_ENV, HEAD_ENV = "torch==2.13.0", "torch==2.14.1"


class Printer:
    """Phases and a test count on stdout (no rich bar: the bench's output is a log)."""

    def __init__(self) -> None:
        self.done, self.n, self.t0 = 0, 0, time.perf_counter()

    def phase(self, name: str) -> None:
        if name != "running tests":
            print(f"[{time.perf_counter() - self.t0:7.0f} s] {name}", flush=True)

    def count(self, name: str, done: int, total: int) -> None:
        if done == total or done % max(1, total // 10) == 0:
            print(f"  {name}: {done}/{total}", flush=True)

    def total(self, n: int) -> None:
        self.done, self.n = 0, n

    def result(self, result) -> None:  # noqa: ANN001 - a TestResult
        self.done += 1
        if self.done == self.n or self.done % max(1, self.n // 10) == 0:
            print(f"  tests {self.done}/{self.n}", flush=True)


def print_report(report, max_listed: int) -> None:
    """The figures of the module docstring, the transitions and the miss list."""
    from relay.pipeline.audit import MIN_OUTCOME_CHANGES

    s = report.summary()
    transitions = Counter(f"{c.base} → {c.head}" for c in report.changes)
    for side in ("base", "head"):
        env = report.environments[side]
        print(f"{side}: {env['name']} (torch {env['torch_version']}, git {env['torch_git_version']})")
    print(f"mode {report.mode}; audited {s['audited']} tests; outcome changes {s['outcome_changes']} "
          f"({s['regressions']} regressions): {dict(transitions.most_common())}")
    for side, ids in report.uncollected.items():
        print(f"not collected on {side}: {len(ids)} tests (no outcome, left out of the recall; "
              f"{report.uncollected_selected} of the uncollected selected), e.g. {ids[0]}")
    for c in report.misses[:max_listed]:
        print(f"MISS {c.id}  {c.base} → {c.head}  [{c.stage}] {c.reason}")
    if len(report.misses) > max_listed:
        print(f"… {len(report.misses) - max_listed} more misses (--json lists all)")
    for c in [c for c in report.changes if c.selected][:max_listed]:
        print(f"hit  {c.id}  {c.base} → {c.head}")
    if s["verdict"] == "inconclusive":
        print(f"INCONCLUSIVE: {s['outcome_changes']} outcome changes seen (fewer than {MIN_OUTCOME_CHANGES}): "
              f"too few to measure recall; {s['missed']} missed")
    else:
        print(f"recall of real outcome changes {s['recall']:.1%} ({s['outcome_changes'] - s['missed']}/"
              f"{s['outcome_changes']}; goal 100%), of regressions {s['regression_recall']:.1%}")
    print(f"selected share {s['share']:.2%} ({s['selected']}/{s['universe']} of the universe; "
          f"{s['selected_audited']}/{s['audited']} of the audited tests); wall {report.seconds:.0f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--spec", type=Path, nargs="*", default=None, help="spec files (default: the bundled specs)")
    ap.add_argument("--limit", type=int, default=None, help="audit an evenly spaced sample of N tests")
    ap.add_argument("--change", type=Path, default=CHANGE, help="the upgrade's ChangeSet")
    ap.add_argument("--base-env", default=BASE_ENV)
    ap.add_argument("--head-env", default=HEAD_ENV)
    ap.add_argument("--state", type=Path, default=ROOT / ".relay", help="state dir (envs, index, audit runs)")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=120, help="per test, seconds")
    ap.add_argument("--list", type=int, default=50, help="misses and hits printed at most")
    ap.add_argument("--json", type=Path, default=None, help="write the report here")
    args = ap.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        ap.error("--limit must be at least 1")
    from relay.changes.inputs import read_change
    from relay.pipeline.audit import VERDICT_EXIT, AuditRequest, audit_change
    from relay.pipeline.local import LocalExecutors
    from relay.pipeline.request import RunConfig
    from relay.pipeline.specs import default_specs

    specs = tuple(args.spec or default_specs())
    changeset = read_change(str(args.change))
    config = RunConfig(spec_paths=specs, state_dir=args.state, shards=args.shards, timeout_s=args.timeout)
    workdir = (args.state / "audits" / ("upgrade-" + time.strftime("%Y%m%d-%H%M%S"))).resolve()
    print(f"change {args.change.name}: {len(changeset.files)} files; specs {', '.join(p.name for p in specs)}"
          + (f"; sample of {args.limit}" if args.limit else ""), flush=True)
    report = audit_change(AuditRequest(changeset=changeset, head_env=args.head_env, base_env=args.base_env,
                                       limit=args.limit), config, LocalExecutors.for_config(config),
                          Printer(), workdir)
    print_report(report, args.list)
    import os

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the end (timings under load)")
    body = {"summary": report.summary(), **report.model_dump(mode="json")}
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "audit.json").write_text(json.dumps(body, indent=1) + "\n")
    if args.json:
        args.json.write_text(json.dumps(body, indent=1) + "\n")
    return VERDICT_EXIT[report.verdict]


if __name__ == "__main__":
    raise SystemExit(main())
