"""The audit: selection's recall measured against real outcomes, not against labels (issue 13).

``audit_change`` runs every audited test — the whole universe of the specs, or an evenly spaced
sample of ``limit`` of its items — in the base environment and in the head environment, runs
selection (stages 1–3, exactly as ``relay replay`` does: ``Selector.select_state``) on the same
change, and compares:

* an **outcome change** is a test whose outcome differs between base and head once ``flaky``
  (failed, then passed on a rerun: PyTorch CI's convention, which the runner applies with its
  reruns) counts as ``passed``; a **regression** is one of them that passed on base and is bad
  (failed, crashed, timed out) on head;
* **recall** = outcome changes selection would have run / outcome changes (likewise for
  regressions); 1.0 when nothing changed (there was nothing to miss);
* **verdict** (issue 28): ``missed`` when an outcome change was missed (evidence whatever the
  count); else ``inconclusive`` when fewer than ``MIN_OUTCOME_CHANGES`` were seen — a check with
  too little to miss could not have failed, so no recall is claimed (``summary()["recall"]`` is
  ``None``); else ``recall``;
* **selected share** = tests selection runs / universe (and the same over the audited tests);
* every **miss** — an outcome change selection did not run — with the stage that dropped it and
  why, in selection's own terms (``explain_drops``).

A test the runner could not collect on one side ("not collected": e.g. its spec names an OpInfo
the other torch no longer has, so the spec file does not expand there) has no outcome of its
own: it is counted in ``uncollected`` per side, with how many of them selection runs, and left
out of the outcome changes (the cause is in that side's ``pytest.log``).

Nothing is stored: an audit's runs are not runs of the change (they ran tests selection did not
pick) and must not become trunk history, baselines or durations.  The report (``AuditReport``)
is returned; the CLI prints it and writes it to the audit's work directory.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from relay.envs.environments import describe, prepare
from relay.pipeline.indexing import build_selector
from relay.pipeline.ports import ExecutorFactory, Progress
from relay.pipeline.request import RunConfig
from relay.pipeline.specs import load_items
from selection.models import ChangeSet
from selection.pipeline import Selector, to_selection
from selection.stage import SelectionState, run_stage
from test_specs.values.items import SpecItem
from test_specs.values.results import BAD_OUTCOMES, TestResult

__all__ = ["AuditRequest", "OutcomeChange", "AuditReport", "audit_change", "explain_drops", "sample",
           "normal_outcome", "not_collected", "MIN_OUTCOME_CHANGES", "VERDICT_EXIT"]

#: Fewer outcome changes than this and an audit is ``inconclusive`` (issue 28): 0 of 0 missed
#: is not a recall of 100 %.
MIN_OUTCOME_CHANGES = 20
#: Exit status of ``relay audit`` / ``bench/audit_upgrade.py`` per verdict (2 is bad input).
VERDICT_EXIT = {"recall": 0, "missed": 1, "inconclusive": 3}


@dataclass(frozen=True)
class AuditRequest:
    """One change to audit: its environments, the selection mode (``auto``/``pr``/``upgrade``,
    ``selection.policy.upgrade.resolve_mode``) and an optional sample size ``limit`` (items)."""

    changeset: ChangeSet
    head_env: str
    base_env: str
    mode: str = "auto"
    limit: int | None = None


class OutcomeChange(BaseModel):
    """One test whose outcome differs between base and head; ``stage``/``reason``: why
    selection did not run it (``None`` when it did)."""

    id: str
    op: str | None = None
    module: str | None = None
    base: str
    head: str
    selected: bool
    stage: str | None = None
    reason: str | None = None
    message: str | None = None

    @property
    def regression(self) -> bool:
        """Passed on base, bad (failed / crashed / timed out) on head."""
        return self.base == "passed" and self.head in BAD_OUTCOMES


class AuditReport(BaseModel):
    """What an audit found (see the module docstring); counts are tests."""

    title: str
    base: str
    head: str
    mode: str
    environments: dict[str, dict] = Field(default_factory=dict)
    universe: int
    selected: int
    audited: int
    selected_audited: int
    changes: list[OutcomeChange] = Field(default_factory=list)
    uncollected: dict[str, list[str]] = Field(default_factory=dict)
    uncollected_selected: int = 0
    notes: list[str] = Field(default_factory=list)
    seconds: float = 0.0

    @property
    def misses(self) -> list[OutcomeChange]:
        return [c for c in self.changes if not c.selected]

    @property
    def recall(self) -> float:
        """Outcome changes selection runs / outcome changes (1.0 when none changed)."""
        return _share(sum(c.selected for c in self.changes), len(self.changes))

    @property
    def verdict(self) -> str:
        """``missed`` (an outcome change was missed), ``inconclusive`` (none missed of fewer than
        ``MIN_OUTCOME_CHANGES``) or ``recall`` (none missed of enough)."""
        if self.misses:
            return "missed"
        return "inconclusive" if len(self.changes) < MIN_OUTCOME_CHANGES else "recall"

    @property
    def regression_recall(self) -> float:
        regs = [c for c in self.changes if c.regression]
        return _share(sum(c.selected for c in regs), len(regs))

    @property
    def share(self) -> float:
        """Tests selection runs / universe."""
        return self.selected / self.universe if self.universe else 0.0

    def summary(self) -> dict:
        """The headline figures, JSON-ready."""
        return {"universe": self.universe, "selected": self.selected, "share": round(self.share, 6),
                "audited": self.audited, "selected_audited": self.selected_audited,
                "outcome_changes": len(self.changes),
                "regressions": sum(c.regression for c in self.changes),
                "missed": len(self.misses), "verdict": self.verdict,
                "recall": None if self.verdict == "inconclusive" else round(self.recall, 6),
                "regression_recall": None if self.verdict == "inconclusive" else round(self.regression_recall, 6),
                "uncollected": {side: len(ids) for side, ids in self.uncollected.items()},
                "uncollected_selected": self.uncollected_selected}


def _share(hit: int, total: int) -> float:
    return hit / total if total else 1.0


def normal_outcome(outcome: str) -> str:
    """``flaky`` counts as ``passed`` (it passed on a rerun); every other outcome is itself."""
    return "passed" if outcome == "flaky" else outcome


def not_collected(result: TestResult) -> bool:
    """Whether the runner made this result up for an id no spec file produced on that side."""
    return (result.message or "").startswith("not collected")


def sample(items: Sequence[SpecItem], limit: int | None) -> list[SpecItem]:
    """``limit`` items spread evenly over ``items`` (sorted by id, so every op family is
    represented), or all of them; raises ``ValueError`` for a limit below 1."""
    if limit is None or limit >= len(items):
        return list(items)
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    step = len(items) / limit
    return [items[int(n * step)] for n in range(limit)]


def _scope_reason(item: SpecItem, after: SelectionState) -> str:
    area = "modules" if item.module is not None else "ops"
    touched = ", ".join(sorted(after.scope_reasons)) or "none"
    why = f"scope: the change touches no '{area}' files (areas touched: {touched})"
    return "; ".join([why, *after.notes[:2]])


def _memory_reason(selector: Selector, item: SpecItem, stage, before: SelectionState) -> str:
    ops = selector.index.entries.get(item.id)
    impacted: set[str] = set()
    opinfos: set[str] = set()
    unattributed: list[str] = []
    for imp in getattr(stage, "impacts", lambda _s: [])(before):
        impacted |= set(imp.aten_ops)
        opinfos |= set(imp.opinfos)
        if not imp.attributed and not imp.opaque:
            unattributed.append(imp.filename)
    calls = ", ".join(ops[:6]) + (f" (+{len(ops) - 6} more)" if len(ops) > 6 else "") if ops else "no ops"
    hit = ", ".join(sorted(impacted)[:6]) + (f" (+{len(impacted) - 6} more)" if len(impacted) > 6 else "")
    why = (f"memory: it calls {calls}; the change impacts {len(impacted)} aten ops"
           + (f" ({hit})" if impacted else "") + " and none of them")
    if item.subject and item.op is not None and opinfos:
        why += f"; its OpInfo {item.subject} is not among the {len(opinfos)} OpInfos reached"
    if unattributed:
        why += f"; not attributed: {', '.join(unattributed[:3])}"
    return why


def explain_drops(selector: Selector, changeset: ChangeSet, ids: Sequence[str],
                  mode: str = "auto") -> dict[str, tuple[str, str]]:
    """For each of ``ids`` that selection does not run: ``(stage name, reason)``.

    Replays ``selector.stages`` one by one (the same stages ``Selector.select_state`` runs) and
    notes the stage after which each id is gone; a candidate the classify stage keeps with mode
    ``skip`` is dropped there with its own last reason.  Ids selection runs are absent.
    """
    wanted = set(ids)
    out: dict[str, tuple[str, str]] = {}
    state = selector.initial_state(changeset, mode)
    by_id = {c.item.id: c.item for c in state.candidates if c.item.id in wanted}
    for stage in selector.stages:
        before = state
        state = run_stage(stage, state)
        alive = {c.item.id: c for c in state.candidates if c.item.id in wanted}
        for tid in [t for t in by_id if t not in alive and t not in out]:
            item = by_id[tid]
            if stage.name == "scope":
                out[tid] = ("scope", _scope_reason(item, state))
            elif stage.name == "memory":
                out[tid] = ("memory", _memory_reason(selector, item, stage, before))
            else:
                out[tid] = (stage.name, f"{stage.name}: dropped")
        for tid, cand in alive.items():
            if cand.mode == "skip" and tid not in out:
                out[tid] = (stage.name, cand.reasons[-1] if cand.reasons else f"{stage.name}: skip")
    for tid in wanted - set(by_id):
        out[tid] = ("universe", "not in the selection universe")
    return out


def _run_side(executors: ExecutorFactory, workdir: Path, env, ids: list[str], progress: Progress,
              label: str) -> dict[str, TestResult]:
    progress.phase(f"{label}: {len(ids)} tests in {env.name}")
    progress.total(len(ids))
    progress.phase("running tests")
    results = executors(workdir, environment=env, on_result=progress.result)(ids)
    return {r.id: r for r in results}


def audit_change(request: AuditRequest, config: RunConfig, executors: ExecutorFactory,
                 progress: Progress | None = None, workdir: Path | None = None) -> AuditReport:
    """Audit ``request`` (see the module docstring) over ``config.spec_paths``.

    Raises ``SpecsInvalid`` for broken specs, ``EnvironmentError_`` for an environment that
    cannot be built, ``ValueError`` for a bad ``limit``.
    """
    progress = progress or Progress()
    t0 = time.perf_counter()
    progress.phase("expanding specs")
    items = load_items(config.spec_paths, config.upstream)
    audited = sample(items, request.limit)
    progress.phase("building indexes")
    selector = build_selector(items, profile=config.backend, device=config.device,
                              cache_dir=config.state_dir / "index", progress=progress)
    progress.phase("selecting")
    state = selector.select_state(request.changeset, mode=request.mode)
    selection = to_selection(state)
    runs = {t.id for t in selection.to_run}
    ids = [i.id for i in audited]
    progress.phase(f"preparing environments {request.head_env} / {request.base_env}")
    head_env = prepare(request.head_env, config.state_dir)
    base_env = prepare(request.base_env, config.state_dir)
    workdir = workdir or config.workdir("audit-" + time.strftime("%Y%m%d-%H%M%S"))
    base = _run_side(executors, workdir / "base", base_env, ids, progress, "base")
    head = _run_side(executors, workdir / "head", head_env, ids, progress, "head")
    uncollected = {side: [i for i in ids if i in res and not_collected(res[i])]
                   for side, res in (("base", base), ("head", head))}
    skip = set(uncollected["base"]) | set(uncollected["head"])
    changed = [i for i in audited if i.id in base and i.id in head and i.id not in skip
               and normal_outcome(base[i.id].outcome) != normal_outcome(head[i.id].outcome)]
    drops = explain_drops(selector, request.changeset, [i.id for i in changed if i.id not in runs],
                          mode=request.mode)
    changes = [OutcomeChange(id=i.id, op=i.op, module=i.module, base=normal_outcome(base[i.id].outcome),
                             head=normal_outcome(head[i.id].outcome), selected=i.id in runs,
                             stage=drops.get(i.id, (None, None))[0], reason=drops.get(i.id, (None, None))[1],
                             message=head[i.id].message or base[i.id].message)
               for i in changed]
    lost = len(ids) - sum(1 for i in ids if i in base and i in head)
    notes = list(state.notes) + ([f"{lost} audited tests have no result on one side"] if lost else [])
    notes += [f"{len(v)} tests not collected on {side} (no outcome; see {workdir / side}/attempt-1/pytest.log)"
              for side, v in uncollected.items() if v]
    return AuditReport(title=request.changeset.title, base=request.changeset.base,
                       head=request.changeset.head, mode=state.mode,
                       environments={"head": describe(head_env), "base": describe(base_env)},
                       universe=selection.universe, selected=len(runs), audited=len(ids),
                       selected_audited=sum(1 for i in ids if i in runs), changes=changes,
                       uncollected={k: v for k, v in uncollected.items() if v},
                       uncollected_selected=sum(1 for i in skip if i in runs), notes=notes,
                       seconds=round(time.perf_counter() - t0, 1))
