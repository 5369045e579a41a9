"""Reruns only where a rerun can change the verdict: deterministic device refusals are not rerun."""

from __future__ import annotations

from pathlib import Path

import pytest

from selection.stage import SelectionState
from selection.stages.refine import Refine
from test_specs.run.runner import run_items
from test_specs.values.refusals import REFUSAL_ERRORS, RERUN_EXCEPT, mark_not_rerun, refusal_of
from test_specs.values.results import TestResult

TINY = "tiny_spec"


def _failed(message: str, **kw) -> TestResult:
    return TestResult(id="s::T::t[op-float16]", upstream="t", outcome="failed", message=message, **kw)


def test_the_refusal_names_are_the_device_refusal_classes() -> None:
    from spyre_backend.errors import REFUSALS, SpyreError

    assert set(REFUSAL_ERRORS) == {c.__name__ for c in REFUSALS}
    assert all(issubclass(c, SpyreError) for c in REFUSALS)


@pytest.mark.parametrize("message", [
    "add [float16] sample 0: device raised SpyreUnsupportedOpError: spyre: aten::add.out has no Spyre kernel",
    "SpyreDtypeError: spyre: aten::sin.default does not support float64 on Spyre",
    "spyre_backend.errors.SpyreCompileError: spyre: aten::copy_ rejects a strided input",
])
def test_a_refusal_is_recognised_in_every_form_it_reaches_a_result(message: str) -> None:
    assert refusal_of(_failed(message)) is not None
    assert mark_not_rerun(_failed(message)).not_rerun.startswith("not rerun: Spyre")
    import re

    assert re.search(RERUN_EXCEPT, message.removeprefix("add [float16] sample 0: "))


@pytest.mark.parametrize("message", [
    "add [float16] sample 0: device raised RuntimeError: spyre: injected flaky fault: aten::add.Tensor failed",
    "add [float16] sample 0: device output differs from CPU (atol 0.001, rtol 0.001): mismatch",
    "add [float16] sample 0: device raised OutOfMemoryError: spyre: out of device memory",
])
def test_other_failures_keep_their_rerun(message: str) -> None:
    assert refusal_of(_failed(message)) is None and mark_not_rerun(_failed(message)).not_rerun is None
    # a refusal that was rerun (attempts > 1) or that passed is not marked either
    refusal = "device raised SpyreDtypeError: no"
    assert mark_not_rerun(_failed(refusal, attempts=2)).not_rerun is None


def test_an_injected_flaky_fault_never_raises_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    from spyre_backend import faults
    from spyre_backend.errors import REFUSALS

    for kind in ("flaky=1", "raise"):
        fault = faults.parse_faults(f"aten::add:{kind}")["aten::add"]
        faults.begin_attempt("s::T::t[add-float16]")
        with pytest.raises(Exception) as info:
            faults.before_op(fault)
        assert not isinstance(info.value, REFUSALS)
        assert refusal_of(_failed(f"add [float16] sample 0: device raised {type(info.value).__name__}: "
                                  f"{info.value}")) is None


def test_the_runner_reruns_a_flaky_failure_but_not_a_refusal(fixtures: Path, fault_templates: str,
                                                               tmp_path: Path) -> None:
    ids = [f"{TINY}::TestFault::test_flaky[sub-float32]", f"{TINY}::TestFault::test_refuse[sin-float32]"]
    results = run_items(ids, [fixtures / "tiny_spec.yaml"], workdir=tmp_path / "w", device="cpu", reruns=2,
                        timeout_s=60, env={"SPYRE_SPEC_TEMPLATES": fault_templates,
                                           "SPYRE_TEST_FLAKY_STATE": str(tmp_path / "flaky.state")})
    flaky, refused = results
    assert flaky.outcome == "flaky" and flaky.attempts == 2 and flaky.not_rerun is None
    assert refused.outcome == "failed" and refused.attempts == 1
    assert refused.not_rerun and "SpyreDtypeError" in refused.not_rerun
    # without reruns nothing was skipped, so nothing says so
    again = run_items(ids[1:], [fixtures / "tiny_spec.yaml"], workdir=tmp_path / "w0", device="cpu", reruns=0,
                      timeout_s=60, env={"SPYRE_SPEC_TEMPLATES": fault_templates})
    assert again[0].outcome == "failed" and again[0].not_rerun is None
    # the behaviour before (a bench's baseline): refusals rerun like any failure
    old = run_items(ids[1:], [fixtures / "tiny_spec.yaml"], workdir=tmp_path / "old", device="cpu", reruns=2,
                    timeout_s=60, env={"SPYRE_SPEC_TEMPLATES": fault_templates}, rerun_refusals=True)
    assert old[0].attempts == 3 and old[0].not_rerun is None


def test_stage_4_reruns_other_failures_and_marks_refusals() -> None:
    refused = _failed("x [float16] sample 0: device raised SpyreUnsupportedOpError: spyre: aten::x has no kernel")
    other = _failed("x [float16] sample 0: device output differs from CPU").model_copy(update={"id": "s::T::u[x-f]"})
    asked: list[list[str]] = []

    def executor(ids: list[str]) -> list[TestResult]:
        asked.append(list(ids))
        return [other.model_copy(update={"outcome": "passed", "message": None})]

    state = Refine(executor).run(SelectionState(changeset=None, candidates=(), universe=2,  # type: ignore[arg-type]
                                                results=(refused, other)))
    assert asked == [[other.id]]
    got = {r.id: r for r in state.results}
    assert got[other.id].outcome == "flaky" and got[refused.id].not_rerun is not None


def test_the_run_counts_and_stores_the_reruns_skipped(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from relay.domain.run import Run
    from relay.store.db import create_schema, make_engine, make_session_factory
    from relay.store.runs import list_runs, load_run, save_run

    refused = mark_not_rerun(_failed("x [float16] sample 0: device raised SpyreDtypeError: no float64"))
    other = _failed("mismatch").model_copy(update={"id": "s::T::u[x-float16]"})
    now = datetime.now(UTC)
    run = Run(id="r", base="a", head="b", started_at=now, finished_at=now, conclusion="failure",
              results=[refused, other], selected=2)
    assert run.reruns_skipped == 1 and '"reruns_skipped":1' in run.model_dump_json()
    engine = make_engine(f"sqlite:///{tmp_path / 'r.db'}")
    create_schema(engine)
    with make_session_factory(engine)() as s:
        save_run(s, run)
        stored = load_run(s, "r")
        listed = list_runs(s)[0]
    engine.dispose()
    assert stored.reruns_skipped == listed.reruns_skipped == 1
    assert {r.id: r.not_rerun for r in stored.results} == {refused.id: refused.not_rerun, other.id: None}
