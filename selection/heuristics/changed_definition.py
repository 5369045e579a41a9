"""A test whose OpInfo entry or sample-input generator changed is the most relevant test."""

from __future__ import annotations

from selection.heuristics.interface import Heuristic, HeuristicResult
from selection.stage import Candidate, Signals


class ChangedDefinition(Heuristic):
    """Score 1.0 when the candidate's OpInfo definition changed (new samples, skips, tolerances)."""

    name = "changed_definition"

    def score(self, candidate: Candidate, signals: Signals) -> HeuristicResult | None:
        why = signals.changed_definitions.get(candidate.item.subject)
        if not why:
            return None
        return HeuristicResult(1.0, f"changed test definition: {why[0]}")
