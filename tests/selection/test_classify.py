"""Stage 3's decisions (``selection.stages.classify``) with heuristics of our own making: the
mode's precedence (spec rule, device dtype, predicted failure), the score (highest active
heuristic; a broken one keeps the test at 1.0; fail-soft tests 0.2) and the reasons shown."""

from __future__ import annotations

import pytest

from selection.heuristics.interface import Heuristic, HeuristicResult
from selection.index.support import SupportAnswers
from selection.models import ChangeSet
from selection.stage import Candidate, SelectionState, Signals
from selection.stages.classify import Classify
from tests.selection.conftest import item


class Fixed(Heuristic):
    """Gives every candidate the same opinion (``None``: none; an exception: raises it)."""

    def __init__(self, name: str, result: HeuristicResult | Exception | None, *, trial_mode: bool = False) -> None:
        super().__init__(trial_mode=trial_mode)
        self.name = name
        self.result = result

    def score(self, candidate, signals):
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


DTYPES = SupportAnswers(("float16", "float32"), {}, set())


def classify(heuristics, *items, fail_soft=(), support=DTYPES) -> list[Candidate]:
    cands = tuple(Candidate(i, i.mode, reasons=("memory: kept",)) for i in items)
    state = SelectionState(changeset=ChangeSet(base="a", head="b"), candidates=cands, universe=len(cands),
                           signals=Signals(fail_soft=frozenset(fail_soft)))
    return list(Classify(heuristics, support=support).run(state).candidates)


HIGH = HeuristicResult(0.9, "edited op aten::add")
LOW = HeuristicResult(0.3, "changed definition")
NO_KERNEL = HeuristicResult(0.8, "aten::index_put has no Spyre kernel", predicts_failure=True)


def test_the_highest_active_score_ranks_and_every_opinion_is_a_reason() -> None:
    (c,) = classify([Fixed("low", LOW), Fixed("high", HIGH), Fixed("none", None)], item("add"))
    assert (c.mode, c.score) == ("mandatory_success", 0.9)
    assert c.reasons == ("memory: kept", "changed definition", "edited op aten::add")


def test_a_trial_heuristic_is_recorded_but_never_scores() -> None:
    (c,) = classify([Fixed("low", LOW), Fixed("new", HIGH, trial_mode=True)], item("add"))
    assert c.score == 0.3 and c.reasons[-1] == "trial: new 0.90: edited op aten::add"


def test_a_broken_heuristic_keeps_the_test_at_full_score() -> None:
    (c,) = classify([Fixed("boom", RuntimeError("index gone")), Fixed("low", LOW)], item("add"))
    assert c.score == 1.0 and c.mode == "mandatory_success"
    assert c.reasons == ("memory: kept", "heuristic boom failed (index gone); kept", "changed definition")


def test_a_predicted_failure_runs_xfail_and_does_not_rank() -> None:
    (c,) = classify([Fixed("gap", NO_KERNEL), Fixed("low", LOW)], item("index_put"))
    assert (c.mode, c.score) == ("xfail", 0.3)
    assert "aten::index_put has no Spyre kernel" in c.reasons


@pytest.mark.parametrize(("spec_item", "mode", "reason"), [
    (item("add", mode="skip", reason="too slow"), "skip", "spec rule: skip (too slow)"),
    (item("add", mode="xfail_strict"), "xfail_strict", "spec rule: xfail_strict (no reason given)"),
    (item("add", "float64", mode="xfail", reason="r"), "xfail", "spec rule: xfail (r)"),
])
def test_the_spec_rule_comes_first(spec_item, mode, reason) -> None:
    (c,) = classify([Fixed("gap", NO_KERNEL)], spec_item)
    assert c.mode == mode and c.reasons[-1] == reason


def test_a_dtype_the_device_lacks_is_skipped_before_a_predicted_failure() -> None:
    (c,) = classify([Fixed("gap", NO_KERNEL)], item("add", "float64"))
    assert c.mode == "skip"
    assert c.reasons[-1] == "unsupported dtype: float64 is not a Spyre dtype ['float16', 'float32']"
    (none,) = classify([], item("add", "float64"), support=SupportAnswers(None, {}, set()))
    assert none.mode == "mandatory_success"  # no support table: no dtype rule


def test_a_test_kept_only_by_fail_soft_scores_0_2_unless_a_heuristic_scores_it() -> None:
    kept, other = classify([], item("add"), item("mul"), fail_soft={item("add").id})
    assert (kept.score, other.score) == (0.2, 0.0)
    (scored,) = classify([Fixed("low", LOW)], item("add"), fail_soft={item("add").id})
    assert scored.score == 0.3


def test_scores_are_rounded_to_4_places() -> None:
    (c,) = classify([Fixed("a", HeuristicResult(0.123456, "r"))], item("add"))
    assert c.score == 0.1235


def test_classify_counts_in_every_candidate_and_out_those_that_run() -> None:
    state = SelectionState(changeset=ChangeSet(base="a", head="b"), universe=2,
                           candidates=(Candidate(item("a"), "skip"), Candidate(item("b"), "xfail")))
    stage = Classify([])
    assert (stage.name, stage.count_in(state), stage.count_out(state)) == ("classify", 2, 1)
