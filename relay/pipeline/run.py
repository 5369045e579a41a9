"""The main job: one upstream change through selection, execution, verdicts and storage.

``run_change`` is called once per change — by ``relay replay`` and, for a webhook, by the
in-process worker — and is three steps, which the Celery path runs in different processes:

1. ``plan_run``: expand the specs, build the ``Selector`` (indexes cached in the state dir),
   stages 1–3 → a ``Selection``; prepare the head and base environments and take the base
   results already stored (``relay.pipeline.baseline.reuse``);
2. ``execute``: the missing base tests in the base environment, then the selected tests in the
   head environment, each through an executor of ``ports.executors``;
3. ``finish_run``: store the computed baseline as a run of its own, stage 4 (rerun failures once,
   failed-then-passed is flaky), the spec write-back as a patch (``relay.pipeline.writeback``),
   verdicts against the baseline, culprit
   bisection when a verdict is NEW and ``request.commits`` holds more than one commit, and the
   finished ``Run`` to ``ports.sink`` — exactly once.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Any

from relay.domain.baseline import Baseline, summary
from relay.domain.run import Run
from relay.domain.verdicts import conclusion
from relay.envs.environments import CURRENT, Environment, describe, prepare
from relay.errors import BisectionError
from relay.logs import delivery_log
from relay.pipeline.baseline import baseline_run, reuse, trunk_baseline, trunk_verdicts, verdicts_for
from relay.pipeline.bisection import find_culprit
from relay.pipeline.indexing import build_selector
from relay.pipeline.ports import Ports
from relay.pipeline.request import RunConfig, RunOutcome, RunPlan, RunRequest
from relay.pipeline.specs import load_items
from relay.pipeline.writeback import write_proposal
from selection.pipeline import refine, to_selection
from selection.stage import SelectionState
from test_specs.values.results import TestResult

__all__ = ["run_change", "plan_run", "execute", "finish_run"]

log = logging.getLogger(__name__)


def run_change(request: RunRequest, config: RunConfig, ports: Ports) -> RunOutcome:
    """Plan, execute and finish one change (see the module docstring); returns the run as
    ``ports.sink`` accepted it.

    Raises ``SpecsInvalid`` for broken specs, ``EnvironmentError_`` for an environment that
    cannot be built; a reporting problem the sink survived is in ``report_error``.
    """
    plan = plan_run(request, config, ports)
    head, base = execute(plan, config, ports)
    return finish_run(plan, head, base, config, ports)


def _environments(plan_request: RunRequest, config: RunConfig) -> tuple[Environment, Environment] | None:
    if plan_request.head_env is None:
        return None
    return (prepare(plan_request.head_env, config.state_dir),
            prepare(plan_request.base_env or "current", config.state_dir))


def plan_run(request: RunRequest, config: RunConfig, ports: Ports) -> RunPlan:
    """Stages 1–3 and the stored base results for ``request`` (step 1)."""
    progress = ports.progress
    started = datetime.now(UTC)
    progress.phase("expanding specs")
    items = load_items(config.spec_paths, config.upstream, cache_dir=config.state_dir / "index")
    progress.phase("building indexes")
    selector = build_selector(items, profile=config.backend, device=config.device,
                              cache_dir=config.state_dir / "index", progress=progress,
                              upstream_checkout=config.upstream)
    progress.phase("selecting")
    durations = ports.store.durations() if request.budget_minutes is not None else None
    state = selector.select_state(request.changeset, budget_minutes=request.budget_minutes,
                                  durations=durations)
    selection = to_selection(state)
    to_run = [t.id for t in selection.to_run]
    found: dict[str, TestResult] = {}
    used: list[str] = []
    source: dict[str, str] = {}
    if request.head_env is not None:
        progress.phase(f"preparing environments {request.head_env} / {request.base_env or 'current'}")
        _head, base = _environments(request, config) or (None, None)
        found, used = reuse(ports.store, to_run, ref=request.changeset.base,
                            env_name=base.name, backend=config.backend)
        baseline = Baseline(kind="base_env")
    else:
        progress.phase("reading the trunk baseline")
        run_modes = {t.id: t.mode for t in selection.selected if t.id in set(to_run)}
        trunk, baseline = trunk_baseline(ports.store, run_modes, backend=config.backend,
                                         base=request.changeset.base, ref=request.ref,
                                         trigger=request.trigger)
        found, source, used = trunk.results, trunk.source, [r for r, _h in trunk.runs]
    return RunPlan(run_id=uuid.uuid4().hex[:16], started_at=started, request=request,
                   selection=selection, selected_at=datetime.now(UTC), notes=list(state.notes), to_run=to_run,
                   base_found=found, reused_from=used, baseline=baseline, base_source=source,
                   base_missing=[i for i in to_run if i not in found] if request.head_env else [])


def execute(plan: RunPlan, config: RunConfig, ports: Ports) -> tuple[list[TestResult], list[TestResult]]:
    """Run the missing base tests, then the selected tests (step 2); returns (head, base)."""
    workdir = config.workdir(plan.run_id)
    envs = _environments(plan.request, config)
    modes = plan.modes
    base: list[TestResult] = []
    if plan.base_missing and envs is not None:
        ports.progress.phase(f"baseline on {plan.request.changeset.base} in {envs[1].name}")
        base = ports.executors(workdir / "base", environment=envs[1], modes=modes)(plan.base_missing)
    ports.progress.total(len(plan.to_run))
    ports.progress.phase("running tests")
    head = ports.executors(workdir, environment=envs[0] if envs else None,
                           on_result=ports.progress.result, modes=modes)(plan.to_run)
    return head, base


def _refine(plan: RunPlan, results: list[TestResult], config: RunConfig, ports: Ports,
            head_env: Environment | None) -> SelectionState:
    """Stage 4 on the head results; reruns go through a fresh executor in the head env."""
    state = SelectionState(changeset=plan.request.changeset, candidates=(),
                           universe=plan.selection.universe, notes=tuple(plan.notes),
                           stats=tuple(plan.selection.stages))
    workdir = config.workdir(plan.run_id)
    rerun = ports.executors(workdir / "reruns", environment=head_env, on_result=ports.progress.result,
                            modes=plan.modes)
    return refine(state, results, rerun)  # the spec write-back is a patch: relay.pipeline.writeback


def _regression(plan: RunPlan, final: list[TestResult], base: list[TestResult], config: RunConfig,
                ports: Ports, envs: tuple[Environment, Environment]) -> dict[str, Any]:
    """Verdicts and environments of a regression run; stores the computed baseline first."""
    head_env, base_env = envs
    computed = None
    if base:
        computed = baseline_run(plan.request.changeset, base, backend=config.backend,
                                environment=base_env, started_at=plan.started_at,
                                stages=plan.selection.stages)
        ports.store.save(computed)
    base_results = {**plan.base_found, **{r.id: r for r in base}}
    verdicts = verdicts_for(final, base_results, ports.store, run_id=plan.run_id,
                            backend=config.backend, env_name=head_env.name,
                            head_sha=plan.request.changeset.head)
    baseline = Baseline(kind="base_env", runs=([computed.id] if computed else []) + plan.reused_from,
                        compared=len(base_results))
    return {"conclusion": conclusion(verdicts), "verdicts": verdicts,
            "environments": {"head": describe(head_env), "base": describe(base_env)},
            "baseline_run": computed.id if computed is not None else (plan.reused_from or [None])[0],
            "baseline": baseline.model_copy(update={"summary": summary(baseline, base=plan.request.changeset.base)})}


def _trunk(plan: RunPlan, final: list[TestResult], ports: Ports) -> dict[str, Any]:
    """Verdicts of a run without environments against its trunk baseline (``plan.baseline``)."""
    verdicts, baseline = trunk_verdicts(final, plan.base_found, plan.base_source,
                                        plan.baseline or Baseline(kind="none"), ports.store,
                                        run_id=plan.run_id, base=plan.request.changeset.base)
    return {"conclusion": conclusion(verdicts), "verdicts": verdicts, "baseline": baseline,
            "baseline_run": (plan.reused_from or [None])[0]}


def _culprit(run: Run, plan: RunPlan, config: RunConfig, ports: Ports, notes: list[str]) -> Run:
    """``run`` with its culprit when a NEW verdict meets a bisectable commit range; a run that
    bisected (found or not) finishes after its last round (``finished_at``)."""
    commits = plan.request.commits
    if not commits or len(commits) < 2 or ports.commit_env is None \
            or not any(v.verdict == "NEW" for v in run.verdicts):
        return run
    ports.progress.phase(f"bisecting {len(commits)} commits")
    try:
        culprit = find_culprit(run, commits, ports.commit_env, executors=ports.executors,
                               store=ports.store, state_dir=config.state_dir,
                               workdir=config.workdir(plan.run_id) / "bisect",
                               phase=ports.progress.phase)
    except BisectionError as exc:
        delivery_log(log, plan.request.delivery_id).error("%s", exc)
        notes.append(f"no culprit: {exc}")
        culprit = None
    # the run ends when its last bisection round has, whether a culprit was found or not
    return run.model_copy(update={"culprit": culprit, "finished_at": datetime.now(UTC)})


def _write_back(plan: RunPlan, final: list[TestResult], config: RunConfig) -> tuple[Any, str | None, str | None]:
    """The run's spec write-back (path, text, note); a write-back that fails costs the proposal
    only, never the run."""
    # stage 3 ran these as xfail on a predicted failure although the spec says must-pass
    # (classify adds a "spec rule:" reason when the mode is the spec's own)
    predicted = {t.id for t in plan.selection.selected
                 if t.mode == "xfail" and not any(r.startswith("spec rule:") for r in t.reasons)}
    try:
        path, text = write_proposal(final, config.spec_paths, run_id=plan.run_id,
                                    workdir=config.workdir(plan.run_id), predicted=predicted)
    except Exception as exc:  # noqa: BLE001 - fail soft: the run is stored without a proposal
        delivery_log(log, plan.request.delivery_id).exception("spec write-back failed")
        return None, None, f"spec write-back failed: {type(exc).__name__}: {exc}"
    return path, text, None


def finish_run(plan: RunPlan, head: list[TestResult], base: list[TestResult], config: RunConfig,
               ports: Ports) -> RunOutcome:
    """Stage 4, verdicts, culprit, and the run to ``ports.sink`` (step 3)."""
    envs = _environments(plan.request, config)
    ports.progress.phase("refining")
    state = _refine(plan, head, config, ports, envs[0] if envs else None)
    final = list(state.results)
    proposal, proposal_text, writeback_note = _write_back(plan, final, config)
    if envs is not None:
        extra = _regression(plan, final, base, config, ports, envs)
    else:
        # a run without environments ran in this interpreter: it records that torch as its head's,
        # so no page or report names the change's head label as the torch the tests ran on
        extra = _trunk(plan, final, ports) | {
            "environments": {"head": describe(prepare(CURRENT, config.state_dir))}}
    request = plan.request
    run = Run(id=plan.run_id, backend=config.backend, upstream=request.changeset.upstream,
              base=request.changeset.base, head=request.changeset.head,
              title=request.changeset.title, trigger=request.trigger, ref=request.ref,
              delivery_id=request.delivery_id, started_at=plan.started_at,
              selected_at=plan.selected_at, finished_at=datetime.now(UTC), universe=plan.selection.universe,
              selected=len(plan.to_run), stages=list(state.stats),
              selection=list(plan.selection.selected), results=final,
              counts=Run.count_outcomes(final), spec_proposal=proposal_text, **extra)
    notes = list(state.notes) + ([writeback_note] if writeback_note else [])
    run = _culprit(run, plan, config, ports, notes)
    ports.progress.phase("storing")
    report_error = ports.sink.accept(run)
    return RunOutcome(run=run, selection=plan.selection, notes=notes,
                      proposals=[str(proposal)] if proposal else [], workdir=config.workdir(plan.run_id),
                      report_error=report_error)
