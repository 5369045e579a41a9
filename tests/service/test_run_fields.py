"""What a run keeps for the dashboard: each result's failure output (``message`` and the bounded
``detail``) and the selection with its reasons — stored with the run, read back unchanged, and
served by ``GET /api/v1/runs/{id}``."""

from __future__ import annotations

import httpx

from relay.domain.results import DETAIL_MAX_CHARS, MESSAGE_MAX_CHARS, RunResult
from relay.domain.run import Run
from relay.store import load_run, save_run
from selection.models import SelectedTest
from test_specs.values.results import TestResult
from tests.fakes.runs import make_run

TRACEBACK = "Traceback (most recent call last):\n" + "".join(
    f'  File "test_ops.py", line {n}, in frame_{n}\n    x = softmax(x)\n' for n in range(400)) \
    + "AssertionError: Tensor-likes are not close!\n"


class RunnerResultWithDetail(TestResult):
    """What ``test_specs.values.results.TestResult`` becomes once the runner reports the failure
    output: the same model plus ``detail``."""

    detail: str | None = None


def test_detail_from_the_runner_is_carried_bounded_and_message_is_bounded() -> None:
    result = RunnerResultWithDetail(id="s::t", upstream="u", outcome="failed", message="x" * 5000,
                                    detail=TRACEBACK)
    run = make_run("d-1", results=[result], outcomes=())
    kept = run.results[0]
    assert isinstance(kept, RunResult) and len(kept.message) == MESSAGE_MAX_CHARS and kept.message.endswith("…")
    assert len(kept.detail) <= DETAIL_MAX_CHARS and kept.detail.startswith("… (")
    assert kept.detail.endswith("AssertionError: Tensor-likes are not close!\n")  # the tail is kept
    plain = Run.model_validate({**run.model_dump(), "results": [TestResult(id="s::p", upstream="u",
                                                                            outcome="passed")]})
    assert plain.results[0].detail is None and RunResult.of(plain.results[0]) is plain.results[0]


def test_selection_and_detail_are_stored_and_served(relay) -> None:
    selection = [SelectedTest(id="sel::a", upstream="test/test_ops.py::TestCommon::test_x", op="softmax",
                              dtype="float16", mode="mandatory_success", score=0.9,
                              reasons=["aten/src/ATen/native/SoftMax.cpp → aten::_softmax → 1 tests"]),
                 SelectedTest(id="sel::b", upstream="test/test_ops.py::TestCommon::test_x", op="fft.fft",
                              mode="skip", score=0.1, reasons=["aten::fft_r2c has no Spyre kernel"])]
    failed = RunnerResultWithDetail(id="sel::a", upstream="test/test_ops.py::TestCommon::test_x",
                                    op="softmax", outcome="failed", message="AssertionError: not close",
                                    detail="Traceback …\nAssertionError: not close\n")
    run = make_run("sel-1", results=[failed], outcomes=(), selected=1, selection=selection,
                   counts=Run.count_outcomes([failed]), conclusion="failure")
    with relay.app.state.session_factory() as s:
        save_run(s, run)
        save_run(s, run)  # replaced, not doubled
        stored = load_run(s, "sel-1")
    assert stored == run
    got = httpx.get(relay.url + "/api/v1/runs/sel-1").json()
    assert got == run.model_dump(mode="json")
    assert [t["mode"] for t in got["selection"]] == ["mandatory_success", "skip"]
    assert got["results"][0]["detail"].endswith("AssertionError: not close\n")
    listed = httpx.get(relay.url + "/api/v1/dashboard").json()["runs"][0]
    assert "selection" not in listed and "results" not in listed  # listings stay small
