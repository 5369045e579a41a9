"""The pytest plugin: collection of spec YAML, selection, modes, readable failures, results lines."""

from __future__ import annotations

from pathlib import Path

import pytest

import test_specs.plugin  # noqa: F401
from test_specs.expand.universe import op_db
from test_specs.reports.records import ReportLog, read_items

pytest_plugins = ["pytester"]

# In-process pytester runs drop modules first imported during a run; import op_db (and with it
# torch's C extensions) up front so later runs never re-import them.
op_db()

SPEC = """\
test_suite_config:
  files:
    - source: op_db
      unlisted_test_mode: skip
      tests:
        - names: [TestCommon::test_compare_cpu]
          tags: [smoke]
          edits: {ops: {include: [{name: add}]}}
        - names: [TestFault::test_fail]
          mode: xfail
          reason: planted
          issue: "test-only: aten::none"
          edits: {ops: {include: [{name: abs}]}}
        - names: [TestFault::test_fail]
          edits: {ops: {include: [{name: neg}]}}
  global:
    supported_dtypes: [float32]
"""


def test_plugin_collects_runs_and_reports(pytester: pytest.Pytester, fault_templates: str, tmp_path: Path) -> None:
    spec = pytester.path / "tiny.yaml"
    spec.write_text(SPEC)
    (pytester.path / "other.yaml").write_text("not: a spec\n")  # ignored: no test_suite_config
    select = tmp_path / "ids.txt"
    select.write_text("tiny::TestCommon::test_compare_cpu[add-float32]\n"
                      "tiny::TestFault::test_fail[abs-float32]\n"
                      "tiny::TestFault::test_fail[neg-float32]\n")
    reportlog, items = tmp_path / "reportlog.jsonl", tmp_path / "items.jsonl"
    junit = tmp_path / "junit.xml"
    r = pytester.runpytest_inprocess("-p", "test_specs.plugin", "--spyre-device=cpu", f"--spyre-select={select}",
                                     f"--report-log={reportlog}", f"--spyre-dump-items={items}", f"--junitxml={junit}",
                                     "-m", "smoke or not smoke",
                                     str(pytester.path))  # the directory: other.yaml is not collected
    r.assert_outcomes(passed=1, xfailed=1, failed=1)
    out = r.stdout.str()
    # readable failure: op, dtype, sample, max abs/rel error; no giant traceback
    assert "neg [float32] sample 0: planted failure (max abs error 1, max rel error 0.5)" in out
    assert "upstream: tests/fixtures/fault_templates.py::test_fail" in out
    assert "def _fail" not in out
    # the per-test records (pytest-reportlog, read by test_specs.reports.records) and the items file
    assert len(read_items(items)) == 3
    done = {res.id: res for res in ReportLog(reportlog, items).poll()}
    assert done["tiny::TestCommon::test_compare_cpu[add-float32]"].outcome == "passed"
    assert done["tiny::TestFault::test_fail[abs-float32]"].outcome == "xfailed"
    assert done["tiny::TestFault::test_fail[neg-float32]"].outcome == "failed"
    assert "planted failure" in done["tiny::TestFault::test_fail[neg-float32]"].message
    assert all(res.duration_ms >= 0 for res in done.values())
    xml = junit.read_text()
    for prop in ('name="op" value="add"', 'name="dtype" value="float32"', 'name="mode" value="xfail"',
                 'name="upstream" value="test/test_ops.py::TestCommon::test_compare_cpu"'):
        assert prop in xml


def test_plugin_deselects_and_skips(pytester: pytest.Pytester, fault_templates: str, tmp_path: Path) -> None:
    spec = pytester.path / "tiny2.yaml"
    spec.write_text(SPEC.replace("mode: xfail", "mode: skip"))
    select = tmp_path / "ids.txt"
    select.write_text("tiny2::TestFault::test_fail[abs-float32]\n")
    r = pytester.runpytest_inprocess("-p", "test_specs.plugin", "--spyre-device=cpu", f"--spyre-select={select}",
                                     "-rs", str(spec))
    r.assert_outcomes(skipped=1, deselected=2)
    assert "planted [test-only: aten::none]" in r.stdout.str()
