"""The heuristic interface: one small class per signal, scoring one candidate at a time.

Modelled on PyTorch's target-determination heuristics (``tools/testing/target_determination/
heuristics/interface.py``): each heuristic returns a ``HeuristicResult`` (a score in [0, 1], a
reason, and whether it predicts that the test fails on the device) or ``None`` (no opinion); a
heuristic in ``trial_mode`` is evaluated and its verdict recorded as a ``trial:`` reason, but its
score is not used.  Heuristics read only the typed ``Signals`` memory found; the classifier
(``selection.stages.classify``) names none of them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from selection.stage import Candidate, Signals


@dataclass(frozen=True)
class HeuristicResult:
    """One heuristic's opinion of one candidate.

    ``score`` in [0, 1] ranks the candidate (the classifier keeps the highest); ``reason`` is
    shown with the test; ``predicts_failure`` says the device cannot run the test (an aten op
    without a Spyre kernel): the classifier then runs it ``xfail`` unless the spec decided its
    mode, and its score does not rank the test.
    """

    score: float
    reason: str
    predicts_failure: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"heuristic score {self.score} is outside [0, 1]")


class Heuristic(ABC):
    """A scoring signal.  ``score`` is called once per candidate per selection."""

    name: str = "heuristic"

    def __init__(self, *, trial_mode: bool = False) -> None:
        self.trial_mode = trial_mode

    @abstractmethod
    def score(self, candidate: Candidate, signals: Signals) -> HeuristicResult | None:
        """The heuristic's opinion of ``candidate``, or ``None`` for no opinion."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(trial_mode={self.trial_mode})"
