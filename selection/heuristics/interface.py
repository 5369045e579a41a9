"""The heuristic interface: one small class per signal, scoring one candidate at a time.

Modelled on PyTorch's target-determination heuristics (``tools/testing/target_determination/
heuristics/interface.py``): each heuristic returns a score in [0, 1] with a reason or ``None``
(no opinion); a heuristic in ``trial_mode`` is evaluated and its verdict recorded as a
``trial:`` reason, but its score is not used.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from selection.stage import Candidate, Signals


class Heuristic(ABC):
    """A scoring signal.  ``score`` is called once per candidate per selection."""

    name: str = "heuristic"

    def __init__(self, *, trial_mode: bool = False) -> None:
        self.trial_mode = trial_mode

    @abstractmethod
    def score(self, candidate: Candidate, signals: Signals) -> tuple[float, str] | None:
        """``(score in [0, 1], reason)`` for ``candidate``, or ``None`` for no opinion."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(trial_mode={self.trial_mode})"
