"""``relay audit``: prove selection against real outcomes — run everything on base and head,
list every outcome change selection would have missed, with the reason it was dropped.

A composition root like ``relay replay``: the same change inputs (a change file or a version
pair ``torch==X..torch==Y``), the same executors (``relay.execution.registry``) and
environments, but no store and no sink — an audit is a measurement, not a run of the change, so
it never becomes trunk history or a baseline (``relay.pipeline.audit``).  The report goes to
``<state dir>/audits/<id>/audit.json``; ``--json`` prints it on stdout.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from relay.cli.common import RelayCommand, app, err, fail, settings_or_fail, spec_files_or_fail
from relay.cli.render import BarProgress

MAX_LISTED = 200


class SidesProgress(BarProgress):
    """``BarProgress`` for two executions of the same ids: each ``total`` starts a fresh bar
    (the base's results must not count as reruns of the head's)."""

    def total(self, n: int) -> None:
        if self.task is not None:
            self.bar.stop()
            self.bar.remove_task(self.task)
        self.outcomes = {}
        super().total(n)


def miss_table(report, limit: int = MAX_LISTED) -> Table:
    """The outcome changes selection did not run: id, base → head, stage, reason."""
    table = Table(title=f"missed outcome changes ({len(report.misses)})", show_lines=False)
    for col in ("test", "base → head", "dropped by", "reason"):
        table.add_column(col, overflow="fold")
    for c in report.misses[:limit]:
        table.add_row(escape(c.id), f"{c.base} → {c.head}", c.stage or "", escape(c.reason or ""))
    return table


def print_report(report) -> None:
    """The audit's headline figures and its miss list, to stderr."""
    s = report.summary()
    err.print(f"audit of {escape(report.title or report.head)} ({report.mode} mode): "
              f"{s['audited']} tests run on base and head, {s['outcome_changes']} outcome changes "
              f"({s['regressions']} regressions)", highlight=False)
    for side in ("base", "head"):
        env = report.environments.get(side, {})
        err.print(f"  {side}: {escape(str(env.get('name')))} (torch {env.get('torch_version')})", highlight=False)
    for note in report.notes[:10]:
        err.print(f"[dim]note:[/dim] {escape(note)}", highlight=False)
    for side, ids in report.uncollected.items():
        err.print(f"not collected on {side}: {len(ids)} tests (no outcome; left out of the recall)", highlight=False)
    caught = [c for c in report.changes if c.selected]
    for c in caught[:20]:
        err.print(f"caught {escape(c.id)}: {c.base} → {c.head}", highlight=False)
    if len(caught) > 20:
        err.print(f"… {len(caught) - 20} more caught")
    if report.misses:
        err.print(miss_table(report))
        if len(report.misses) > MAX_LISTED:
            err.print(f"… {len(report.misses) - MAX_LISTED} more misses (--json lists all)")
    from relay.pipeline.audit import MIN_OUTCOME_CHANGES

    share = (f"selected share {s['share']:.2%} ({s['selected']}/{s['universe']}; "
             f"{s['selected_audited']}/{s['audited']} of the audited); {report.seconds:.0f} s")
    if s["verdict"] == "inconclusive":
        err.print(f"[bold yellow]inconclusive[/bold yellow]: {s['outcome_changes']} outcome changes seen, fewer "
                  f"than {MIN_OUTCOME_CHANGES}: too few to measure recall ({s['missed']} missed); {share}",
                  highlight=False)
        return
    err.print(f"recall of real outcome changes {s['recall']:.1%} "
              f"({s['outcome_changes'] - s['missed']}/{s['outcome_changes']}), of regressions "
              f"{s['regression_recall']:.1%}; {share}", highlight=False)


@app.command(cls=RelayCommand)
def audit(
    ref: Annotated[str, typer.Argument(
        help="The change: a ChangeSet / PR-files JSON or unified diff file (- = stdin), or a version "
        "pair torch==X..torch==Y.")],
    head_env: Annotated[str, typer.Option(
        "--head-env", help="Environment of the head: current, torch==X, a wheel path or URL, +faults=….")],
    base_env: Annotated[str, typer.Option("--base-env", help="Environment of the base (same forms).")],
    spec: Annotated[list[Path] | None, typer.Option(
        help="Spec files or directories of them (default: the bundled specs).")] = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", min=1, help="Audit an evenly spaced sample of this many tests of the universe.")] = None,
    upgrade: Annotated[bool | None, typer.Option(
        "--upgrade/--pr", help="Selection mode (default: upgrade when base/head are versions).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the audit report as JSON on stdout.")] = False,
    backend: Annotated[str, typer.Option(help="Backend profile.")] = "spyre-sim",
    device: Annotated[str, typer.Option(help="Device the tests run on.")] = "spyre",
    timeout: Annotated[int, typer.Option(help="Per-test timeout, seconds.")] = 120,
    shards: Annotated[int | None, typer.Option(
        "--shards", min=1, help="Concurrent pytest processes (default: one per core).")] = None,
) -> None:
    """Measure selection's recall against real outcomes.

    Runs the universe (or --spec) on base and head, selects on the same change, and prints
    every outcome change selection missed (with the stage and reason), the recall of real
    outcome changes and the selected share.  Stores no run.

    Exit status: 0 when nothing was missed, 1 when an outcome change was missed, 3 when
    fewer than 20 outcome changes were seen (inconclusive: no recall claimed), 2 for bad
    input.

    \b
    Examples:
      relay audit examples/changes/pr-softmax.json --spec test_specs/specs/opinfo_core.yaml \\
        --head-env 'current+faults=aten::_softmax:offset=0.05' --base-env current
      relay audit torch==2.13.0..torch==2.14.1 --head-env torch==2.14.1 --base-env torch==2.13.0
    """
    from relay.cli.replay import _change
    from relay.envs.environments import validate
    from relay.errors import ConfigError, EnvironmentError_, SpecsInvalid
    from relay.execution.registry import executors_for
    from relay.pipeline.audit import VERDICT_EXIT, AuditRequest, audit_change
    from relay.pipeline.request import RunConfig
    from relay.pipeline.specs import default_specs
    from test_specs.run.runner import default_shards

    settings = settings_or_fail().model_copy(update={"backend": backend})
    shards = shards or default_shards()
    for env_text in (head_env, base_env):
        try:
            validate(env_text)
        except EnvironmentError_ as exc:
            fail(str(exc))
    specs = tuple(spec_files_or_fail(spec) or default_specs())
    changeset, _commits, _env, head_env, base_env = _change(ref, None, settings, head_env, base_env)
    mode = "auto" if upgrade is None else ("upgrade" if upgrade else "pr")
    config = RunConfig(spec_paths=specs, state_dir=settings.state_dir, backend=backend, device=device,
                       timeout_s=timeout, shards=shards)
    workdir = (settings.state_dir / "audits" / time.strftime("%Y%m%d-%H%M%S")).resolve()
    progress = SidesProgress(err)
    try:
        executors = executors_for(settings, specs, device=device, timeout_s=timeout, shards=shards)
        report = audit_change(AuditRequest(changeset=changeset, head_env=head_env, base_env=base_env,
                                           mode=mode, limit=limit), config, executors, progress, workdir)
    except (EnvironmentError_, SpecsInvalid, ConfigError, KeyError) as exc:
        progress.close()
        fail(str(exc.args[0]) if isinstance(exc, KeyError) else str(exc))
    finally:
        progress.close()
    body = {"summary": report.summary(), **report.model_dump(mode="json")}
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "audit.json").write_text(json.dumps(body, indent=1) + "\n")
    print_report(report)
    err.print(f"report: {workdir / 'audit.json'}", highlight=False)
    if json_out:
        sys.stdout.write(json.dumps(body, indent=1) + "\n")
    if VERDICT_EXIT[report.verdict]:
        raise typer.Exit(VERDICT_EXIT[report.verdict])
