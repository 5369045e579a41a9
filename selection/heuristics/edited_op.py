"""A test that calls an aten op whose implementation changed."""

from __future__ import annotations

from selection.heuristics.interface import Heuristic, HeuristicResult
from selection.stage import Candidate, Signals


class EditedOp(Heuristic):
    """Score 0.6–0.9: higher when the impacting op reaches fewer tests.

    A change to ``aten::_softmax`` reaching 4 tests says more about each than a change to
    ``aten::view`` reaching every test; the score falls with the fan-out of the impacting op
    (``OpImpact.fanout``, the narrowest impact counts).
    """

    name = "edited_op"

    def score(self, candidate: Candidate, signals: Signals) -> HeuristicResult | None:
        impacts = signals.op_impacts.get(candidate.item.id)
        if not impacts:
            return None
        fanout = min(impact.fanout for impact in impacts)
        score = 0.6 + 0.3 / (1.0 + fanout / 20.0)
        return HeuristicResult(round(score, 4), f"impacted op: {impacts[0].reason}")
