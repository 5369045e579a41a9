"""The runner: a pytest subprocess per batch, live results, crash recovery, JUnit parsing."""

from __future__ import annotations

from pathlib import Path

from test_specs.results import OUTCOMES, TestResult
from test_specs.runner import parse_junit, run_items

TINY = "tiny_spec"


def test_run_items_outcomes_including_crash_and_flaky(fixtures: Path, fault_templates: str, tmp_path: Path) -> None:
    ids = [
        f"{TINY}::TestFault::test_flaky[sub-float32]",
        f"{TINY}::TestCommon::test_compare_cpu[add-float32]",
        f"{TINY}::TestFault::test_abort[neg-float32]",
        f"{TINY}::TestFault::test_fail[abs-float32]",
        f"{TINY}::TestCommon::test_compare_cpu[nope-float32]",
    ]
    live: list[TestResult] = []
    results = run_items(ids, [fixtures / "tiny_spec.yaml"], workdir=tmp_path / "w", device="cpu", reruns=1,
                        timeout_s=60, env={"SPYRE_SPEC_TEMPLATES": fault_templates,
                                           "SPYRE_TEST_FLAKY_STATE": str(tmp_path / "flaky.state")},
                        on_result=live.append)
    assert [r.id for r in results] == ids  # the order of item_ids
    got = {r.id: r for r in results}
    assert got[ids[0]].outcome == "flaky" and got[ids[0]].attempts == 2
    assert got[ids[1]].outcome == "passed" and got[ids[1]].duration_ms > 0
    crashed = got[ids[2]]
    assert crashed.outcome == "crashed" and "SIGABRT" in (crashed.message or "")
    assert crashed.upstream == "tests/fixtures/fault_templates.py::test_abort" and crashed.op == "neg"
    assert got[ids[3]].outcome == "xfailed" and got[ids[3]].mode == "xfail"
    assert got[ids[4]].outcome == "failed" and "not collected" in (got[ids[4]].message or "")
    assert {r.id for r in live} == set(ids)  # on_result once per id
    assert all(r.outcome in OUTCOMES for r in results)
    # the crash restarted pytest for the tests not yet run
    # (an aborted pytest writes no junit.xml; the restart does)
    assert (tmp_path / "w" / "pytest.log").exists() and (tmp_path / "w" / "junit.restart1.xml").exists()


def test_parse_junit_reads_ids_from_properties(tmp_path: Path) -> None:
    p = tmp_path / "j.xml"
    p.write_text(
        '<testsuites><testsuite><testcase classname="x" name="y" time="0.5">'
        '<properties><property name="id" value="s::T::t[a-float16]"/><property name="op" value="a"/></properties>'
        '<failure message="boom">trace</failure></testcase>'
        '<testcase classname="x" name="z" time="0"><properties><property name="id" value="s::T::t[b-float16]"/>'
        '</properties><skipped type="pytest.xfail" message="why"/></testcase>'
        '<testcase classname="x" name="w" time="0"/></testsuite></testsuites>')
    got = parse_junit(p)
    assert got["s::T::t[a-float16]"]["outcome"] == "failed" and got["s::T::t[a-float16]"]["duration_ms"] == 500.0
    assert got["s::T::t[b-float16]"]["outcome"] == "xfailed"
    assert len(got) == 2
    assert parse_junit(tmp_path / "missing.xml") == {}


def test_device_crash_via_sim_faults_and_timeout(fixtures: Path, fault_templates: str, tmp_path: Path) -> None:
    """A device ``os.abort()`` (``SPYRE_SIM_FAULTS``) costs one test; a hang is ``timed_out``."""
    import pytest

    pytest.importorskip("spyre_backend")
    from test_specs.expand import spec_paths_default

    ids = ["opinfo_core::TestCommon::test_compare_cpu[add-float16]",
           "opinfo_core::TestCommon::test_compare_cpu[neg-float16]",
           f"{TINY}::TestFault::test_hang[mul-float32]"]
    results = run_items(ids, [*spec_paths_default(), fixtures / "tiny_spec.yaml"], workdir=tmp_path,
                        device="spyre", timeout_s=3,
                        env={"SPYRE_SIM_FAULTS": "aten::add:abort", "SPYRE_SPEC_TEMPLATES": fault_templates})
    assert [(r.id, r.outcome) for r in results] == [(ids[0], "crashed"), (ids[1], "passed"), (ids[2], "timed_out")]
    assert "SIGABRT" in (results[0].message or "") and results[0].op == "add" and results[0].dtype == "float16"
    assert "Timeout" in (results[2].message or "")
