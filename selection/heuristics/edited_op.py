"""A test that calls an aten op whose implementation changed."""

from __future__ import annotations

from functools import lru_cache

from selection.heuristics.interface import Heuristic
from selection.stage import Candidate, Signals


class EditedOp(Heuristic):
    """Score 0.6–0.9: higher when the impacting op reaches fewer tests.

    A change to ``aten::_softmax`` reaching 4 tests says more about each than a change to
    ``aten::view`` reaching every test; the score falls with the fan-out of the impacting op.
    """

    name = "edited_op"

    def score(self, candidate: Candidate, signals: Signals) -> tuple[float, str] | None:
        why = signals.op_impacts.get(candidate.item.id)
        if not why:
            return None
        fanout = min(_fanout(r) for r in why)
        score = 0.6 + 0.3 / (1.0 + fanout / 20.0)
        return round(score, 4), f"impacted op: {why[0]}"


@lru_cache(maxsize=4096)  # a change has few distinct impact reasons, shared by many tests
def _fanout(reason: str) -> int:
    # reasons read "<file> → aten::op → N tests"
    try:
        return int(reason.rsplit("→", 1)[1].split()[0])
    except (IndexError, ValueError):
        return 1
