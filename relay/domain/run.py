"""Relay-level value objects: a ``Run`` of the pipeline on one upstream change.

``Run`` is what the store persists, what ``relay replay --json`` prints and what the dashboard
JSON (``GET /api/v1/dashboard``) lists.  Stage and result shapes come from ``selection.models``
and ``test_specs.values.results``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from relay.domain.baseline import Baseline
from relay.domain.culprit import Culprit
from relay.domain.outcomes import Conclusion, conclude, count_outcomes
from relay.domain.results import RunResult
from relay.domain.verdicts import VERDICTS, Verdict
from selection.models import SelectedTest, StageStats
from test_specs.values.results import TestResult

Trigger = Literal["replay", "webhook", "baseline", "bisect"]


class Run(BaseModel):
    """One pipeline run of ``backend`` on the change ``base..head`` of ``upstream``.

    ``stages`` holds the four selection stages' stats (the refinement stage counts the tests it
    reran); ``selection`` every test stages 1–3 kept, with its mode, score and reasons (design
    §4's ``selected`` entries; a test classified ``skip`` is listed but not run; empty for side
    runs — baselines, bisection rounds — and runs stored before it was kept); ``results`` one
    ``RunResult`` per executed item (``relay.domain.results``: a ``TestResult`` given here becomes
    one, with its failure ``detail``); ``counts`` the number of results per outcome (every outcome
    in ``test_specs.values.results.OUTCOMES`` present, zero included): they add up to ``selected``.
    ``conclusion`` is ``failure`` if and only if some verdict is NEW for a run with verdicts —
    every pipeline run since issue 27, compared with its base environment or with trunk
    (``baseline``) — and, for a side run without verdicts (a computed baseline, a bisection
    round), when any result failed, crashed or timed out.
    ``ref`` is the upstream branch the change landed on or targets (``refs/heads/main`` for a
    push to main, the PR's base ref), ``None`` when unknown (a replay of a file).
    ``environments`` records, per role (``head``, ``base``), the torch the tests ran against
    (``relay.envs.environments.describe``); a run without ``--head-env``/``--base-env`` has only
    ``head``: the ``current`` interpreter's torch it ran on, and no base.
    ``verdict_counts`` holds the verdicts per class (every class in ``relay.domain.verdicts.VERDICTS``
    present) when the run has verdicts, filled from ``verdicts`` unless given (a listing loads
    the counts without the verdicts themselves); ``baseline_run`` is the stored run whose base
    results were used, ``baseline`` what the run was compared with, in words and run ids
    (``relay.domain.baseline``: the base environment, trunk at the base, the newest trunk, or
    "this run establishes the trunk baseline" with the tests failing on trunk).
    ``culprit`` is the first bad commit of a push range found by bisection
    (``relay.pipeline.bisection``) for the run's NEW failures, ``None`` when none was looked for.
    ``selected_at`` is when selection ended and execution began (``started_at`` ≤ it ≤
    ``finished_at``; ``None`` for side runs and runs stored before it was kept): the split of a
    delivery's detection time (``relay.service.detection``).
    ``reruns_skipped`` counts the failures not rerun because they are deterministic device
    refusals (each says so in its result's ``not_rerun``; ``test_specs.values.refusals``), filled
    from ``results`` unless given (a listing loads it without the results).
    ``spec_proposal`` is stage 4's spec write-back (``relay.pipeline.writeback``): a unified diff
    against the spec files that ``git apply`` accepts, ``None`` when nothing was proposed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    backend: str = "spyre-sim"
    upstream: str = "pytorch/pytorch"
    base: str
    head: str
    title: str = ""
    trigger: Trigger = "replay"
    ref: str | None = None
    delivery_id: str | None = None
    started_at: datetime
    finished_at: datetime
    selected_at: datetime | None = None
    universe: int = 0
    selected: int = 0
    conclusion: Conclusion
    stages: list[StageStats] = Field(default_factory=list)
    selection: list[SelectedTest] = Field(default_factory=list)
    results: list[RunResult] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
    environments: dict[str, dict[str, object]] = Field(default_factory=dict)
    verdicts: list[Verdict] = Field(default_factory=list)
    verdict_counts: dict[str, int] = Field(default_factory=dict)
    baseline_run: str | None = None
    baseline: Baseline | None = None
    culprit: Culprit | None = None
    spec_proposal: str | None = None
    reruns_skipped: int = 0

    @field_validator("results", mode="before")
    @classmethod
    def _run_results(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return [RunResult.of(r) if isinstance(r, TestResult) else r for r in value]
        return value

    @model_validator(mode="before")
    @classmethod
    def _fill_verdict_counts(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("verdicts") and not data.get("verdict_counts"):
            counts = {k: 0 for k in VERDICTS}
            for v in data["verdicts"]:
                kind = v.verdict if isinstance(v, Verdict) else v.get("verdict") if isinstance(v, dict) else None
                if kind in counts:
                    counts[kind] += 1
            data = {**data, "verdict_counts": counts}
        if isinstance(data, dict) and data.get("results") and "reruns_skipped" not in data:
            data = {**data, "reruns_skipped": sum(
                1 for r in data["results"]
                if (r.not_rerun if isinstance(r, TestResult) else isinstance(r, dict) and r.get("not_rerun")))}
        return data

    @staticmethod
    def count_outcomes(results: list[TestResult]) -> dict[str, int]:
        """Results per outcome, every known outcome present (``relay.domain.outcomes``)."""
        return count_outcomes(results)

    @staticmethod
    def conclude(results: list[TestResult]) -> Conclusion:
        """``failure`` if any result is bad; ``neutral`` if none ran (``relay.domain.outcomes``)."""
        return conclude(results)
