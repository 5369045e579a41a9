"""A test that calls an aten op the device has no kernel for is predicted to fail.

Reads the Spyre support table (``spyre_backend.support``); the prediction is a score, not a
mode: the classifier turns it into ``xfail`` only when the spec did not decide already.
"""

from __future__ import annotations

from selection.heuristics.interface import Heuristic
from selection.stage import Candidate, Signals


class UnsupportedOp(Heuristic):
    """Score 0.1 with the reason naming the first unsupported aten op the test calls."""

    name = "unsupported_op"

    def score(self, candidate: Candidate, signals: Signals) -> tuple[float, str] | None:
        from spyre_backend.support import unsupported_reason

        for op in signals.test_ops.get(candidate.item.id, ()):
            why = unsupported_reason(op, candidate.item.dtype)
            if why:
                return 0.1, f"unsupported op: {why}"
        return None
