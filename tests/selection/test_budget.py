"""The budget cut (``selection.stages.budget``) at its edges: a test that exactly fills the budget
is kept, the next one is not; unmeasured tests cost ``DEFAULT_SECONDS``; what the cut says."""

from __future__ import annotations

import time

import pytest

from selection.models import ChangeSet
from selection.stage import Candidate, SelectionState
from selection.stages.budget import DEFAULT_SECONDS, apply_budget, seconds_of, span
from tests.selection.conftest import item

OPS = ["a", "b", "c", "d"]


def ranked(modes: dict[str, str] | None = None) -> SelectionState:
    modes = modes or {}
    cands = tuple(Candidate(item(op), modes.get(op, "mandatory_success"), score=1.0 - i / 10)
                  for i, op in enumerate(OPS))
    return SelectionState(changeset=ChangeSet(base="a", head="b"), candidates=cands, universe=len(cands),
                          notes=("before",))


def ids(state: SelectionState) -> list[str]:
    return [c.item.subject for c in state.candidates]


def test_a_test_that_exactly_fills_the_budget_is_kept() -> None:
    durations = {item(op).id: 30.0 for op in OPS}
    assert ids(apply_budget(ranked(), 1.0, durations)) == ["a", "b"]  # 30 + 30 = 60 s = 1 min
    assert ids(apply_budget(ranked(), 0.99, durations)) == ["a"]
    assert ids(apply_budget(ranked(), 0, durations)) == []


def test_unmeasured_tests_cost_the_default_and_skips_cost_nothing() -> None:
    assert DEFAULT_SECONDS == 1.0 and seconds_of("x", {}) == 1.0 and seconds_of("x", {"x": 0.2}) == 0.2
    assert seconds_of("x", {}, default=3.0) == 3.0
    assert ids(apply_budget(ranked(), 2 / 60, {})) == ["a", "b"]
    assert ids(apply_budget(ranked(), 2 / 60, {}, default_seconds=2.0)) == ["a"]
    state = apply_budget(ranked({"a": "skip"}), 2 / 60, {})
    assert ids(state) == ["a", "b", "c"]  # a: listed, runs nothing


def test_the_cut_is_recorded_as_a_stage_and_a_note() -> None:
    durations = {item("a").id: 20.0, item("b").id: 0.01, item("c").id: 50.0}
    state = apply_budget(ranked({"d": "skip"}), 0.5, durations)
    assert ids(state) == ["a", "b", "d"]
    budget = state.stats[-1]
    assert (budget.name, budget.in_, budget.out) == ("budget", 3, 2) and budget.ms >= 0
    assert state.notes == ("before", "budget 0.5 min: kept 3 (0.3 min), cut 1 lower-ranked tests")
    reasons = {c.item.subject: c.reasons[-1] for c in state.candidates if c.reasons}
    assert reasons == {"a": "budget: within 0.5 min (20.0 s cumulative, this test 20.0 s)",
                       "b": "budget: within 0.5 min (20.0 s cumulative, this test 10 ms)"}


@pytest.mark.parametrize(("seconds", "text"), [
    (0.05, "0.1 s"), (0.0499, "50 ms"), (1.25, "1.2 s"), (0.001, "1 ms"), (0.0009, "0.9 ms"), (0.0, "0 ms"),
    (0.0125, "12 ms"),
])
def test_a_span_reads_in_seconds_from_50_ms_and_in_ms_below(seconds, text) -> None:
    assert span(seconds) == text


def test_the_first_test_that_does_not_fit_ends_the_cut_even_if_a_cheaper_one_follows() -> None:
    # a fits, b (60 s) does not, c and d (1 s each) would: the cut keeps a prefix of the ranking,
    # so a lower-ranked test is never run in place of a higher-ranked one that was cut.
    durations = {item("a").id: 10.0, item("b").id: 60.0, item("c").id: 1.0, item("d").id: 1.0}
    state = apply_budget(ranked(), 0.5, durations)
    assert ids(state) == ["a"]
    assert state.notes[-1] == "budget 0.5 min: kept 1 (0.2 min), cut 3 lower-ranked tests"


class _SlowDurations(dict):
    """Durations whose every look-up takes 5 ms, so the stage's own time is measurable."""

    def get(self, key, default=None):
        time.sleep(0.005)
        return super().get(key, default)


def test_the_budget_stage_reports_its_own_time_in_ms_and_the_kept_time_in_minutes() -> None:
    durations = _SlowDurations({item(op).id: 300.0 for op in OPS})
    state = apply_budget(ranked(), 10, durations)
    stage = state.stats[-1]
    assert 15.0 <= stage.ms < 5000.0 and stage.ms == round(stage.ms, 3)  # 3 look-ups × 5 ms, in ms
    assert state.notes[-1] == "budget 10 min: kept 2 (10.0 min), cut 2 lower-ranked tests"
