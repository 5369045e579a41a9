"""A canary kept after a test-machinery change in upgrade mode (``selection.policy.upgrade``)."""

from __future__ import annotations

from selection.heuristics.interface import Heuristic, HeuristicResult
from selection.stage import Candidate, Signals


class MachineryCanary(Heuristic):
    """Score 0.5: the test stands for every test the changed machinery reaches.

    Lower than a changed definition (1.0) or an impacted op (0.6–0.9): a budget cut drops
    canaries after the tests selected for their own reason.
    """

    name = "machinery_canary"

    def score(self, candidate: Candidate, signals: Signals) -> HeuristicResult | None:
        why = signals.canaries.get(candidate.item.id)
        return HeuristicResult(0.5, why) if why else None
