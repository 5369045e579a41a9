"""``test_specs.authoring.writeback``: proposals become a unified diff that ``git apply`` accepts, written
into the spec as it is — every original line kept, in order — for each layout of
``global.supported_ops``; a proposal that would change which items the spec has is left out."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from test_specs.authoring.writeback import Proposal, spec_patch
from test_specs.expand.universe import expand_spec
from test_specs.format.loader import load_spec
from tests.spec_text import compare_cpu_spec

HEAD = compare_cpu_spec(["add", "mul", "sub", "neg"], dtypes=None)
SCALARS = HEAD + """\
  global:
    supported_dtypes: [float16]
    supported_ops:
      - add   # listed by name only
      - mul
"""
BLOCK = HEAD + """\
  global:
    supported_dtypes: [float16]
    supported_ops:
      # precision for mul
      - name: mul
        dtypes: [{name: float16, precision: {atol: 0.01, rtol: 0.01}}]
      - name: add
"""
FLOW = HEAD + """\
  global:
    supported_dtypes: [float16]
    supported_ops: [{name: add}, {name: mul}]
"""
NO_GLOBAL = HEAD


def _proposal(subject: str) -> Proposal:
    return Proposal(subject=subject, aten="aten::resize_",
                    tests=(f"s::TestCommon::test_compare_cpu[{subject}-float16]",),
                    reason="aten::resize_ has no Spyre kernel", issue="spyre-relay run r1", source="run r1")


def _apply(tmp_path: Path, text: str, subjects: list[str]) -> tuple[str, str, dict[str, str]]:
    spec = tmp_path / "s.yaml"
    spec.write_text(text)
    patch = spec_patch(spec, [_proposal(s) for s in subjects])
    assert not patch.skipped, patch.skipped
    (tmp_path / "p.patch").write_text(patch.diff)
    proc = subprocess.run(["git", "apply", "p.patch"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + patch.diff
    new = spec.read_text()
    removed = [ln[1:] for ln in patch.diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert all(any(f"{s}" in ln for s in subjects) for ln in removed), removed  # only the edited entries
    old_lines = [ln for ln in text.splitlines() if ln not in removed]
    assert [ln for ln in new.splitlines() if ln in old_lines] == old_lines, new  # nothing else moved
    modes = {i.id.split("[")[1].split("-")[0]: i.mode for i in expand_spec(load_spec(spec))}
    return new, patch.diff, modes


@pytest.mark.parametrize("layout", [SCALARS, BLOCK, FLOW, NO_GLOBAL], ids=["scalars", "block", "flow", "no-global"])
def test_listed_and_new_ops_become_force_xfail_in_every_layout(tmp_path: Path, layout: str) -> None:
    new, diff, modes = _apply(tmp_path, layout, ["add", "sub"])  # add listed (or not), sub never
    assert modes == {"add": "xfail", "sub": "xfail", "mul": "mandatory_success", "neg": "mandatory_success"}
    assert new.count("# proposed by spyre-relay: aten::resize_ has no Spyre kernel") == 2
    assert 'issue: "spyre-relay run r1"' in new
    assert diff.startswith("diff --git a/s.yaml b/s.yaml\n--- a/s.yaml\n+++ b/s.yaml\n@@ ")


def test_far_apart_proposals_get_a_hunk_each(tmp_path: Path) -> None:
    spaced = HEAD + "  global:\n    supported_ops:\n      - name: add\n" + "".join(
        f"      # filler {n}\n" for n in range(8)) + "      - name: mul\n"
    _, diff, modes = _apply(tmp_path, spaced, ["add", "mul"])
    assert diff.count("\n@@ ") == 2 and modes["add"] == modes["mul"] == "xfail"


def test_a_proposal_that_would_change_the_items_is_left_out(tmp_path: Path) -> None:
    """A test entry without an include list runs every op of op_db unless supported_ops lists
    some: creating supported_ops for one op would drop the others, so it is not proposed."""
    spec = tmp_path / "s.yaml"
    spec.write_text("""\
test_suite_config:
  files:
    - source: op_db
      unlisted_test_mode: skip
      reason: r
      issue: i
      tests:
        - names: [TestCommon::test_compare_cpu]
          edits:
            ops:
              exclude: [{name: add}]
  global:
    supported_dtypes: [float16]
""")
    patch = spec_patch(spec, [_proposal("sub")])
    assert patch.diff == "" and not patch.applied
    [(p, why)] = patch.skipped
    assert p.subject == "sub" and "would change which items the spec has" in why
