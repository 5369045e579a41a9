"""Stage 3 — per-test classification: a mode, a score and the reasons for both.

Mode, in order of precedence:

1. the spec's own rule for the item (``skip`` / ``xfail`` / ``xfail_strict`` with its reason);
2. ``skip`` when the item's dtype is not one the device supports (``spyre_backend.support``);
3. ``xfail`` when a heuristic's result ``predicts_failure`` (an aten op without a kernel), so a
   known gap is reported, not counted as a regression;
4. otherwise ``mandatory_success``.

Score: the highest score of the active heuristics (``selection.heuristics.HEURISTICS``);
trial-mode heuristics are evaluated and recorded (``trial:`` reasons) but not used.  A heuristic
that raises is logged and the candidate is kept with score 1.0: a broken signal selects more.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from selection.heuristics import HEURISTICS, Heuristic
from selection.index.support import SupportAnswers
from selection.stage import Candidate, SelectionState

log = logging.getLogger(__name__)


def _supported_dtypes() -> tuple[str, ...] | None:
    try:
        from spyre_backend.support import SUPPORTED_DTYPES
    except Exception as exc:  # noqa: BLE001 — no table means no dtype rule, not an error
        log.warning("spyre support table unavailable (%s); no dtype rule applied", exc)
        return None
    return tuple(SUPPORTED_DTYPES)


class Classify:
    """Stage 3: classify every candidate; out counts the candidates that will run."""

    name = "classify"

    def __init__(self, heuristics: Sequence[Heuristic] | None = None, support: SupportAnswers | None = None) -> None:
        self.heuristics = list(HEURISTICS if heuristics is None else heuristics)
        self.support = support  # cached Spyre support answers (``selection.index.support``); None: ask

    def count_in(self, state: SelectionState) -> int:
        return len(state.candidates)

    def count_out(self, state: SelectionState) -> int:
        return sum(1 for c in state.candidates if c.mode != "skip")

    def classify(self, cand: Candidate, state: SelectionState, dtypes: tuple[str, ...] | None) -> Candidate:
        """One candidate's mode, score and reasons (see the module docstring)."""
        reasons = list(cand.reasons)
        mode = cand.item.mode
        score = 0.0
        predicted_fail: str | None = None
        for h in self.heuristics:
            try:
                verdict = h.score(cand, state.signals)
            except Exception as exc:  # noqa: BLE001 — fail soft
                log.warning("heuristic %s failed on %s: %s", h.name, cand.item.id, exc)
                reasons.append(f"heuristic {h.name} failed ({exc}); kept")
                score = 1.0
                continue
            if verdict is None:
                continue
            if h.trial_mode:
                reasons.append(f"trial: {h.name} {verdict.score:.2f}: {verdict.reason}")
                continue
            reasons.append(verdict.reason)
            if verdict.predicts_failure:
                predicted_fail = verdict.reason
            else:
                score = max(score, verdict.score)
        if cand.item.mode != "mandatory_success":
            detail = cand.item.reason or "no reason given"
            reasons.append(f"spec rule: {cand.item.mode} ({detail})")
        elif dtypes is not None and cand.item.dtype not in dtypes:
            mode = "skip"
            reasons.append(f"unsupported dtype: {cand.item.dtype} is not a Spyre dtype {list(dtypes)}")
        elif predicted_fail is not None:
            mode = "xfail"
        if score == 0.0 and cand.item.id in state.signals.fail_soft:
            score = 0.2
        return Candidate(cand.item, mode, round(min(score, 1.0), 4), tuple(reasons))

    def run(self, state: SelectionState) -> SelectionState:
        """Called once per ChangeSet, after memory: every candidate gets its mode, score and
        reasons (``classify``); none is dropped (a ``skip`` stays listed with its reason)."""
        if self.support is not None:
            dtypes = self.support.dtypes
            state = replace(state, signals=replace(state.signals, support=self.support))
        else:
            dtypes = _supported_dtypes()
        out = tuple(self.classify(c, state, dtypes) for c in state.candidates)
        return replace(state, candidates=out)
