"""Spec hygiene (``test_specs.authoring.hygiene`` through ``relay specs check``): dead patterns,
duplicates, shadowed names and, with a run's results, stale xfails — each at its file:line with
the edit that removes it; warnings never change the exit status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from relay.cli import app

SPEC = """\
test_suite_config:
  files:
    - source: op_db
      unlisted_test_mode: skip
      reason: only compare_cpu here
      tests:
        - names: [TestCommon::test_compare_cpu]
          edits:
            ops:
              include:
                - {name: add}
                - {name: softmax}
                - {name: softmax.with_dtype}
                - {name: add}
            dtypes:
              include: [{name: float16}]
              exclude: [{name: bfloat16}, {name: float32}]
        - names: [TestCommon::test_compare_cpu]
          mode: xfail
          reason: fp16 numerics
          edits:
            ops:
              include:
                - {name: mul}
            dtypes:
              include: [{name: float32}]
              exclude: [{name: bfloat16}, {name: float16}]
  global:
    supported_dtypes: [float16, float32]
"""


def _check(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, ["specs", "check", *args])
    return result.exit_code, [ln for ln in result.stdout.splitlines() if "warning:" in ln]


def _line(text: str, needle: str, nth: int = 1) -> int:
    hits = [i + 1 for i, ln in enumerate(text.splitlines()) if needle in ln]
    return hits[nth - 1]


def test_dead_duplicate_and_shadowed_entries_are_warned_at_their_line(tmp_path: Path) -> None:
    spec = tmp_path / "hyg.yaml"
    spec.write_text(SPEC)
    code, warnings = _check(str(spec))
    assert code == 0, warnings  # warnings never fail a check
    by_line = {int(w.split(":")[1]): w for w in warnings}
    assert "duplicate: 'add' is already listed at line" in by_line[_line(SPEC, "{name: add}", 2)]
    assert "shadowed: every item of 'softmax.with_dtype' is selected by 'softmax'" in \
        by_line[_line(SPEC, "{name: softmax.with_dtype}")]
    assert all("edit:" in w for w in warnings)
    assert _line(SPEC, "{name: softmax}") not in by_line and _line(SPEC, "{name: mul}") not in by_line


def test_a_dtype_that_filters_out_every_item_makes_a_dead_entry(tmp_path: Path) -> None:
    spec = tmp_path / "dead.yaml"
    # exclude is applied last: the xfail entry excludes the one dtype it includes
    spec.write_text(SPEC.replace("exclude: [{name: bfloat16}, {name: float16}]",
                                 "exclude: [{name: bfloat16}, {name: float16}, {name: float32}]"))
    _code, warnings = _check(str(spec))
    assert any("dead entry" in w and f":{_line(SPEC, '- names:', 2)}:" in w for w in warnings), warnings


def test_results_report_stale_xfails_with_the_edit(tmp_path: Path) -> None:
    spec = tmp_path / "hyg.yaml"
    spec.write_text(SPEC)
    results = tmp_path / "run.json"
    results.write_text(json.dumps({"results": [
        {"id": "hyg::TestCommon::test_compare_cpu[mul-float32]", "outcome": "xpassed"},
        {"id": "hyg::TestCommon::test_compare_cpu[add-float16]", "outcome": "passed"}]}))
    code, warnings = _check(str(spec), "--results", str(results))
    stale = [w for w in warnings if "stale xfail" in w]
    assert code == 0 and len(stale) == 1, warnings
    assert stale[0].startswith(f"{spec}:{_line(SPEC, '{name: mul}')}:")
    assert "move 'mul' from this xfail entry to a new mandatory_success entry" in stale[0]
    results.write_text("not json\n")
    bad = CliRunner().invoke(app, ["specs", "check", str(spec), "--results", str(results)])
    assert bad.exit_code != 0 and "not JSON" in bad.output


TIGHT = """\
test_suite_config:
  files:
    - source: op_db
      unlisted_test_mode: skip
      reason: only compare_cpu here
      tests:
        - names: [TestCommon::test_compare_cpu]
          edits:
            ops:
              include:
                - {name: add}
            dtypes:
              include: [{name: float32}]
              exclude: [{name: float16}]
        - names: [TestCommon::test_compare_cpu]
          mode: xfail
          reason: measured failing once
          edits:
            ops:
              include:
                - {name: mul}
                - {name: sub}
            dtypes:
              include: [{name: float32}]
              exclude: [{name: float16}]
  global:
    supported_dtypes: [float16, float32]
"""


def _applied(tmp_path: Path, diff: str) -> dict[str, str]:
    import subprocess

    from test_specs.expand.universe import expand_spec
    from test_specs.format.loader import load_spec

    (tmp_path / "p.patch").write_text(diff)
    subprocess.run(["git", "apply", "p.patch"], cwd=tmp_path, check=True, capture_output=True)
    return {i.id: i.mode for i in expand_spec(load_spec(tmp_path / "tight.yaml"))}


@pytest.mark.parametrize("stale", [["mul"], ["mul", "sub"]])
def test_stale_xfails_are_tightened_by_a_patch_git_applies(tmp_path: Path, stale: list[str]) -> None:
    from test_specs.authoring.tighten import tighten_patch

    spec = tmp_path / "tight.yaml"
    spec.write_text(TIGHT)
    ids = [f"tight::TestCommon::test_compare_cpu[{op}-float32]" for op in stale]
    patch = tighten_patch(spec, ids + ["tight::TestCommon::test_compare_cpu[add-float32]"])
    assert patch.applied == ids and patch.skipped[0][0].endswith("[add-float32]")  # add is no xfail
    modes = _applied(tmp_path, patch.diff)
    assert {i: m for i, m in modes.items() if i in ids} == {i: "mandatory_success" for i in ids}
    rest = {i: m for i, m in modes.items() if i not in ids}
    assert rest == ({"tight::TestCommon::test_compare_cpu[add-float32]": "mandatory_success"}
                    | ({} if "sub" in stale else {"tight::TestCommon::test_compare_cpu[sub-float32]": "xfail"}))
    if "sub" in stale:  # the xfail entry had no name left: it is gone, not left to select every op
        assert "mode: xfail" not in spec.read_text()
