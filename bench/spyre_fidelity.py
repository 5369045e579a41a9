"""Fidelity of the simulated device to real Spyre as torch-spyre's own configs declare it.

``python bench/spyre_fidelity.py --upstream PYTORCH_CHECKOUT [--configs DIR] [--only NAME...]
[--shards 2] [--timeout 300] [--rules-from GROUPS | --held-out] [--json]``

For every torch-spyre config in ``--configs`` (default: ``$SPYRE_CONFIGS``, else
``../shared/fixtures/torch-spyre-configs`` beside this repository) whose ``path:`` entries name
files present in the checkout ("fits"), runs the whole config on the simulated device (what
``relay run --spec CONFIG --upstream CHECKOUT`` does: items collected in source-tree mode under
the config's rules) and scores each test against what the config declares
(``test_specs.authoring.fidelity``: ``mandatory_success`` → passes, ``xfail`` → fails).  Prints, per
config and overall: tests run, agreement (agreeing / scored) and the disagreements clustered by
direction and signature (the largest first, with an example id); xfails whose declared reason
is a compile-environment failure (Inductor, ``dxp_standalone``), which an eager device cannot
honour, are a class of their own with their count, not scored.  Configs that do not fit are
listed with the missing path.  The baseline measured in the same run is "every test passes"
(``baseline``: the agreement a device that never fails would get), so the printed ratio says
how much the simulation's failures follow Spyre's.  Wall times are measured under whatever
load the machine has.

Circularity: the device's capability rules (``spyre_backend/capabilities.yaml``) were derived
from the declared reasons of configs of these same groups. Each config's group (torch-spyre's
``tests/configs/<group>/``: ``upstream_tests``, ``upstream_tests_beta``, or ``configs`` for the
top-level folder) is read from the folder's ``SOURCES.md``. ``--rules-from GROUPS`` runs every
config with only the rules derived from those groups (``SPYRE_SIM_CAPABILITY_GROUPS``;
``none`` = no rule); ``--held-out`` runs each config with the rules derived from the *other*
groups only, so its agreement is measured on configs no rule in force was derived from.  The
totals are printed per group.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from test_specs.authoring.fidelity import agreement, clusters, compile_environment  # noqa: E402
from test_specs.format.loader import load_spec  # noqa: E402
from test_specs.run.runner import run_items  # noqa: E402
from test_specs.upstream.rules import resolve  # noqa: E402
from test_specs.upstream.tree import collect  # noqa: E402


def _configs_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    if os.environ.get("SPYRE_CONFIGS"):
        return Path(os.environ["SPYRE_CONFIGS"])
    return Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "torch-spyre-configs"


def fits(config: Path, root: Path) -> str | None:
    """``None`` when every ``path:`` of ``config`` names a file in ``root``, else the first that does not."""
    spec = load_spec(config)
    paths = [f.path for f in spec.config.files if f.path is not None]
    if not paths:
        return "no path: entries"
    return next((p for p in paths if not resolve(p, root, config)), None)


def groups_of(cdir: Path) -> dict[str, str]:
    """Config file name → torch-spyre config group, from the ``SOURCES.md`` table of ``cdir``."""
    path = cdir / "SOURCES.md"
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for m in re.finditer(r"^\| *([\w.-]+\.yaml) *\| *tests/configs/(\S+) *\|", path.read_text(encoding="utf-8"), re.M):
        parts = m.group(2).split("/")
        out[m.group(1)] = parts[0] if len(parts) > 1 else "configs"
    return out


def run_config(config: Path, root: Path, *, shards: int, timeout: int, rule_groups: str | None = None) -> dict:
    """Collect, run and score one config; the per-config report (JSON-ready). ``rule_groups``:
    the value of ``SPYRE_SIM_CAPABILITY_GROUPS`` for the run (None: every rule)."""
    t0 = time.monotonic()
    items, problems = collect([config], root)
    env = {"SPYRE_SIM_CAPABILITY_GROUPS": rule_groups} if rule_groups is not None else None
    with tempfile.TemporaryDirectory(prefix="fidelity-") as wd:
        results = run_items([i.id for i in items], [config], workdir=Path(wd), reruns=0, timeout_s=timeout,
                            shards=shards, upstream=root, env=env)
    env_ids = {i.id for i in items if compile_environment(i.mode, i.reason)}
    a = agreement(results, env_ids)
    base = agreement([r.model_copy(update={"outcome": "xpassed" if r.mode.startswith("xfail") else "passed"})
                      for r in results if r.outcome != "skipped"], env_ids)
    return {"config": config.name, "rules_from": rule_groups or "all",
            "tests": len(results), "wall_s": round(time.monotonic() - t0, 1),
            "scored": a.scored, "agree": a.agree, "agreement": round(a.rate, 4), "compile_env": a.compile_env,
            "baseline_all_pass": round(base.rate, 4), "unscored": dict(a.unscored),
            "declared_vs_sim": {f"{d} -> {'pass' if p else 'fail'}": n for (d, p), n in sorted(a.by_mode.items())},
            "problems": problems,
            "clusters": [{"direction": d, "signature": s, "count": len(rs), "example": rs[0].id}
                         for d, s, rs in clusters(a.disagree)]}


def _print(rep: dict) -> None:
    print(f"\n== {rep['config']} [{rep.get('group', '?')}; rules from {rep['rules_from']}]: "
          f"{rep['tests']} tests in {rep['wall_s']} s (measured under load); "
          f"agreement {rep['agree']}/{rep['scored']} = {rep['agreement']:.1%} "
          f"(baseline 'all pass' {rep['baseline_all_pass']:.1%}); unscored {rep['unscored']}; "
          f"compile-environment xfails set apart {rep['compile_env']}")
    print(f"   declared -> sim: {rep['declared_vs_sim']}")
    for c in rep["clusters"][:15]:
        print(f"   {c['count']:5d}  {c['direction']}: {c['signature']}\n          e.g. {c['example']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", required=True, type=Path, help="PyTorch checkout (${TORCH_ROOT})")
    ap.add_argument("--configs", default=None, help="folder of torch-spyre configs")
    ap.add_argument("--only", nargs="*", default=None, help="config file names to run (default: all that fit)")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--rules-from", default=None, help="capability rule groups, comma list, or 'none'")
    ap.add_argument("--held-out", action="store_true", help="each config with rules from the other groups only")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    root, cdir = args.upstream.resolve(), _configs_dir(args.configs)
    if not cdir.is_dir():
        print(f"no configs folder {cdir}", file=sys.stderr)
        return 2
    reports, unfit = [], {}
    groups = groups_of(cdir)
    every = sorted(set(groups.values()) | {"upstream_tests", "upstream_tests_beta"})
    for cfg in sorted(cdir.glob("*.yaml")):
        if args.only and cfg.name not in args.only:
            continue
        missing = fits(cfg, root)
        if missing is not None:
            unfit[cfg.name] = missing
            continue
        group = groups.get(cfg.name, "?")
        rule_groups = args.rules_from
        if args.held_out:
            rule_groups = ",".join(g for g in every if g != group) or "none"
        rep = run_config(cfg, root, shards=args.shards, timeout=args.timeout, rule_groups=rule_groups)
        rep["group"] = group
        reports.append(rep)
        if not args.json:
            _print(rep)
    agree, scored = sum(r["agree"] for r in reports), sum(r["scored"] for r in reports)
    compile_env = sum(r["compile_env"] for r in reports)
    by_group: dict[str, list[int]] = {}
    for r in reports:
        g = by_group.setdefault(r["group"], [0, 0])
        g[0], g[1] = g[0] + r["agree"], g[1] + r["scored"]
    total = {"configs_run": len(reports), "agree": agree, "scored": scored, "compile_env": compile_env,
             "agreement": round(agree / scored, 4) if scored else None, "not_fitting": unfit,
             "rules_from": "held-out (other groups)" if args.held_out else (args.rules_from or "all"),
             "by_group": {g: {"agree": a, "scored": n, "agreement": round(a / n, 4) if n else None}
                          for g, (a, n) in sorted(by_group.items())}}
    if args.json:
        print(json.dumps({"total": total, "configs": reports}, indent=1))
    else:
        print(f"\nTOTAL over {len(reports)} configs (rules from {total['rules_from']}): agreement {agree}/{scored}"
              + (f" = {agree / scored:.1%}" if scored else "") + f"; compile-environment xfails set apart "
              f"(not scored): {compile_env}; not fitting: {len(unfit)}")
        for g, v in total["by_group"].items():
            print(f"   group {g}: {v['agree']}/{v['scored']}" + (f" = {v['agreement']:.1%}" if v["scored"] else ""))
        for name, why in sorted(unfit.items()):
            print(f"   {name}: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
