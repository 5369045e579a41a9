"""Model-ops (RFC-0186) and module-tests configs run from the spec: captured calls and modules on
the simulated device against the CPU, with the config's modes and tolerances."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from test_specs.expand.captured_run import captured_items, resolve_callable
from test_specs.format.loader import load_spec

SPEC = """test_suite_config:
  global:
    supported_dtypes:
      - {name: float32, precision: {atol: 0.005, rtol: 0.005}}
      - name: half
    input_config: {seed: 123}
  files:
    - path: ${TORCH_DEVICE_ROOT}/tests/models/test_model_ops_v2.py
      unlisted_test_mode: skip
      tests:
        - names: [TestSpyreModelOps::test_model_ops_db]
          tags: [model__tiny]
          edits:
            ops:
              include:
                - name: torch.nn.functional.linear
                  sample_inputs_func:
                    args:
                      - tensor: {shape: [2, 8], stride: [8, 1], dtype: torch.float32, device: cuda, init: rand}
                      - tensor: {shape: [4, 8], dtype: torch.float32, init: randn}
                  tags: [torch.nn.functional.linear.1]
                - name: torch.Tensor.view
                  sample_inputs_func:
                    args:
                      - tensor: {shape: [2, 8], dtype: torch.float16, init: rand}
                      - value: (4, 4)
                - name: torch.getitem
                  sample_inputs_func:
                    args:
                      - tensor: {shape: [1, 16], dtype: torch.int64, init: randint, init_args: {high: 9}}
                      - py: (slice(None, None, None), slice(0, 5, None))
                - name: torch.new_ones
                  sample_inputs_func:
                    args:
                      - tensor: {shape: [3], dtype: torch.int64, init: zeros}
                      - value: ()
                    kwargs: {dtype: torch.bool, device: cuda}
    - path: ${TORCH_ROOT}/test/test_modules.py
      unlisted_test_mode: skip
      tests:
        - names: ['*TestModule*::test_forward']
          edits:
            modules:
              include:
                - name: Linear_0
                  module_path: torch.nn.Linear
                  constructor_inputs: {args: [{value: 8}, {value: 4}], kwargs: {}}
                  forward_inputs:
                    - args: [{tensor: {shape: [2, 8], dtype: torch.bfloat16, device: spyre, init: randn}}]
                      kwargs: {}
                    - args: [{tensor: {shape: [1, 8], dtype: torch.bfloat16, init: randn}}]
                - name: Missing_0
                  module_path: not_installed_pkg.models.Block
        - names: [TestModule::test_other]
          mode: xfail  # flaky on Spyre
          edits:
            modules:
              include:
                - name: ReLU_0
                  module_path: torch.nn.ReLU
                  forward_inputs: [{args: [{tensor: {shape: [5], dtype: torch.float32, init: randn}}]}]
"""


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    p = tmp_path / "captured.yaml"
    p.write_text(SPEC)
    return p


def test_captured_items_modes_dtypes_tags(spec: Path) -> None:
    got = {it.id: (it.dtype, it.mode, it.reason, it.tags) for it, _ in captured_items(load_spec(spec))}
    ops = "captured::TestSpyreModelOps::test_model_ops_db"
    mods = "captured::*TestModule*::test_forward"
    assert got == {
        f"{ops}[torch.nn.functional.linear#0]": ("float32", "mandatory_success", None,
                                                 ["model__tiny", "torch.nn.functional.linear.1"]),
        f"{ops}[torch.Tensor.view#1]": ("float16", "mandatory_success", None, ["model__tiny"]),
        f"{ops}[torch.getitem#2]": ("int64", "mandatory_success", None, ["model__tiny"]),
        f"{ops}[torch.new_ones#3]": ("int64", "mandatory_success", None, ["model__tiny"]),
        # module dtypes: float32 and float16 (torch-spyre's), both in supported_dtypes (half)
        f"{mods}[Linear_0-float32]": ("float32", "mandatory_success", None, []),
        f"{mods}[Linear_0-float16]": ("float16", "mandatory_success", None, []),
        f"{mods}[Missing_0-float32]": ("float32", "mandatory_success", None, []),
        f"{mods}[Missing_0-float16]": ("float16", "mandatory_success", None, []),
        "captured::TestModule::test_other[ReLU_0-float32]": ("float32", "xfail", "flaky on Spyre", []),
        "captured::TestModule::test_other[ReLU_0-float16]": ("float16", "xfail", "flaky on Spyre", []),
    }
    tol = next(it.tolerance for it, _ in captured_items(load_spec(spec)) if it.dtype == "float32")
    assert (tol.atol, tol.rtol) == (0.005, 0.005)


def test_callables_of_model_ops_names() -> None:
    import operator

    import torch

    assert resolve_callable("torch.nn.functional.linear") is torch.nn.functional.linear
    assert resolve_callable("torch.Tensor.view") is torch.Tensor.view
    assert resolve_callable("torch.getitem") is operator.getitem
    assert resolve_callable("torch.to") is torch.Tensor.to


def test_captured_entries_run_on_the_device(spec: Path, tmp_path: Path) -> None:
    pytest.importorskip("spyre_backend")
    root = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "test_specs.plugin", "-p", "no:cacheprovider",
                           "-q", "-rA", str(spec)], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin"})
    out = proc.stdout
    outcomes = {ln.split(" ", 1)[0] + " " + ln.split("[", 1)[1].split("]", 1)[0]
                for ln in out.splitlines() if ln.startswith(("PASSED ", "FAILED ", "XPASS ", "XFAIL "))}
    assert outcomes == {
        "PASSED torch.nn.functional.linear#0", "PASSED torch.Tensor.view#1", "PASSED torch.getitem#2",
        "PASSED torch.new_ones#3", "PASSED Linear_0-float32", "PASSED Linear_0-float16",
        "FAILED Missing_0-float32", "FAILED Missing_0-float16", "XPASS ReLU_0-float32", "XPASS ReLU_0-float16"}, out
    assert "No module named 'not_installed_pkg'" in out
