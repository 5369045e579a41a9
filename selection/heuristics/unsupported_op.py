"""A test that calls an aten op the device has no kernel for is predicted to fail.

Reads the Spyre support table (``spyre_backend.support``, or its cached answers in
``Signals.support``: ``selection.index.support``); the prediction is a score, not a
mode: the classifier turns it into ``xfail`` only when the spec did not decide already.
"""

from __future__ import annotations

from selection.heuristics.interface import Heuristic, HeuristicResult
from selection.stage import Candidate, Signals


class UnsupportedOp(Heuristic):
    """Predicts failure (score 0.1) with the reason naming the first unsupported aten op the
    test calls."""

    name = "unsupported_op"

    def __init__(self, *, trial_mode: bool = False) -> None:
        super().__init__(trial_mode=trial_mode)
        self._memo: dict[tuple[str, str], str | None] = {}  # (aten op, dtype) → reason

    def score(self, candidate: Candidate, signals: Signals) -> HeuristicResult | None:
        support = signals.support
        if support is not None:
            unsupported_reason = support.unsupported_reason
        else:
            from spyre_backend.support import unsupported_reason

        dtype = candidate.item.dtype
        for op in signals.test_ops.get(candidate.item.id, ()):
            key = (op, dtype)
            if key not in self._memo:
                self._memo[key] = unsupported_reason(op, dtype)
            if self._memo[key]:
                return HeuristicResult(0.1, f"unsupported op: {self._memo[key]}", predicts_failure=True)
        return None
