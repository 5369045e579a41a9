"""Stage 4 (``selection.stages.refine``), rule by rule: only first-attempt failures that are not
an unsupported op are rerun, once; failed-then-passed is flaky (attempts added, the first
failure kept in the message); an unsupported op becomes a proposed ``force_xfail`` — written for
a person, never applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from selection.models import ChangeSet
from selection.stage import SelectionState
from selection.stages.refine import Refine, unsupported_op_of
from test_specs.values.results import TestResult

NO_KERNEL = "NotImplementedError: spyre: aten::_index_put_impl_ is not supported on this device"


def r(test: str, outcome: str, message: str | None = None, *, op: str | None = "add", attempts: int = 1) -> TestResult:
    return TestResult(id=f"s::{test}", upstream="u", op=op, outcome=outcome, message=message,  # type: ignore[arg-type]
                      attempts=attempts)


def refine(results: list[TestResult], reruns: dict[str, TestResult], proposal_dir: Path | None = None):
    calls: list[list[str]] = []

    def executor(ids):
        calls.append(list(ids))
        return [reruns[i] for i in ids if i in reruns]

    state = SelectionState(changeset=ChangeSet(base="a", head="b"), candidates=(), universe=0,
                           results=tuple(results), proposals=("earlier.yaml",))
    return Refine(executor, proposal_dir).run(state), calls


@pytest.mark.parametrize(("result", "op"), [
    (r("t", "failed", NO_KERNEL), "aten::_index_put_impl_"),
    (r("t", "crashed", "boom\n" + NO_KERNEL), "aten::_index_put_impl_"),
    (r("t", "failed", "spyre: aten::mm.out is not supported"), "aten::mm.out"),
    (r("t", "passed", NO_KERNEL), None),
    (r("t", "xfailed", NO_KERNEL), None),
    (r("t", "failed", None), None),
    (r("t", "failed", "spyre: aten::mm failed\nnot supported"), None),  # one line names both
    (r("t", "failed", "AssertionError: not close"), None),
])
def test_an_unsupported_op_failure_names_the_op(result, op) -> None:
    assert unsupported_op_of(result) == op


def test_only_first_attempt_failures_of_supported_ops_are_rerun_and_a_pass_is_flaky() -> None:
    results = [r("flip", "failed", "mismatch"), r("stays", "failed", "mismatch", attempts=1),
               r("retried", "failed", "mismatch", attempts=3), r("nokernel", "failed", NO_KERNEL),
               r("ok", "passed")]
    reruns = {"s::flip": r("flip", "passed", attempts=1), "s::stays": r("stays", "failed", "again", attempts=2)}
    state, calls = refine(results, reruns)
    assert calls == [["s::flip", "s::stays"]]
    out = {x.id: x for x in state.results}
    assert [x.id for x in state.results] == [x.id for x in results]
    assert (out["s::flip"].outcome, out["s::flip"].attempts) == ("flaky", 2)
    assert out["s::flip"].message == "failed, then passed on rerun: mismatch"
    assert (out["s::stays"].outcome, out["s::stays"].attempts, out["s::stays"].message) == ("failed", 3, "mismatch")
    assert out["s::retried"] == results[2] and out["s::nokernel"] == results[3] and out["s::ok"] == results[4]
    assert state.proposals == ("earlier.yaml",)  # nothing to propose


def test_nothing_failed_nothing_is_rerun_and_a_flaky_message_is_cut_at_500() -> None:
    assert refine([r("ok", "passed")], {})[1] == []
    state, _ = refine([r("t", "failed", "x" * 600)], {"s::t": r("t", "passed")})
    assert state.results[0].message == ("failed, then passed on rerun: " + "x" * 600)[:500]
    state, _ = refine([r("t", "failed", None)], {"s::t": r("t", "passed")})
    assert state.results[0].message == "failed, then passed on rerun: "


def test_unsupported_ops_become_one_proposed_force_xfail_per_op(tmp_path) -> None:
    results = [r("b2", "failed", NO_KERNEL, op="index_put"), r("b1", "crashed", NO_KERNEL, op="index_put"),
               r("a1", "failed", "spyre: aten::mm is not supported", op="mm"),
               r("noop", "failed", NO_KERNEL, op=None)]
    state, calls = refine(results, {}, tmp_path / "proposals")
    assert calls == []
    path = tmp_path / "proposals" / "spec-proposals.yaml"
    assert state.proposals == ("earlier.yaml", str(path))
    assert path.read_text() == (
        "# Proposed spec edits (review before applying; nothing was changed).\n"
        "# Failures below were caused by ops the device cannot run:\n"
        "#   aten::_index_put_impl_: 2 tests, e.g. s::b2\n"
        "#   aten::mm: 1 tests, e.g. s::a1\n"
        "test_suite_config:\n"
        "  global:\n"
        "    supported_ops:\n"
        "    - name: index_put\n"
        "      force_xfail: true\n"
        "      reason: aten::_index_put_impl_ has no Spyre kernel\n"
        "      issue: 'TODO: file or link the tracking issue'\n"
        "    - name: mm\n"
        "      force_xfail: true\n"
        "      reason: aten::mm has no Spyre kernel\n"
        "      issue: 'TODO: file or link the tracking issue'\n")


def test_without_a_proposal_directory_nothing_is_written(tmp_path) -> None:
    state, _ = refine([r("t", "failed", NO_KERNEL)], {})
    assert state.proposals == ("earlier.yaml",) and not list(tmp_path.iterdir())


def test_refine_counts_the_results_it_refines() -> None:
    stage = Refine(lambda ids: [])
    state = SelectionState(changeset=ChangeSet(base="a", head="b"), candidates=(), universe=0,
                           results=(r("a", "passed"), r("b", "failed")))
    assert (stage.name, stage.count_in(state), stage.count_out(state)) == ("refine", 2, 2)
