"""torch-spyre configs load and keep their meaning: the shared real configs, dtype aliases, every
bad name reported, comment reasons, module-tests and model-ops formats (RFC 1287, RFC-0186)."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_specs.authoring.check import check_specs
from test_specs.format.loader import load_spec
from test_specs.values.dtypes import ALIASES, DTYPE_NAMES

CONFIGS = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "torch-spyre-configs"
REAL = sorted(CONFIGS.glob("*.yaml")) if CONFIGS.is_dir() else []


@pytest.mark.skipif(not REAL, reason=f"shared torch-spyre configs absent ({CONFIGS})")
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_every_shared_torch_spyre_config_loads(path: Path) -> None:
    assert check_specs([path]) == []
    assert load_spec(path).config.files


@pytest.mark.skipif(not REAL, reason=f"shared torch-spyre configs absent ({CONFIGS})")
def test_comment_reasons_of_real_configs_count_under_strict() -> None:
    beta = [p for p in REAL if p.name.startswith("upstream_tests_beta__")]
    assert len(beta) == 6 and check_specs(beta, strict=True) == []
    spec = load_spec(CONFIGS / "upstream_tests_beta__test_unary_ufuncs.yaml")
    assert spec.test_reason(0, 2, 0) == "xfail: torch._inductor.exc.InductorError"  # trailing on mode


@pytest.mark.skipif(not REAL, reason=f"shared torch-spyre configs absent ({CONFIGS})")
def test_real_configs_fail_strict_only_where_an_entry_states_no_reason() -> None:
    """torch-spyre's schema has no reason field and requires none (its reasons are comments):
    the real configs that fail ``--strict`` do so only for entries with neither a comment on or
    above them nor a reason — our superset's stricter rule, not a misread comment."""
    errors = check_specs(REAL, strict=True)
    assert all("needs a reason" in e.message for e in errors), errors
    found = sorted((Path(e.file).name, e.line) for e in errors)
    assert found == [("example_test_config.yaml", 25), ("model_ops_tests__bert-base-uncased.yaml", 41),
                     ("test_binary_ufuncs.yaml", 9), ("test_binary_ufuncs.yaml", 111),
                     ("test_view_ops_config.yaml", 189)]
    for name, line in found:  # no comment on the flagged line or the line above it
        lines = (CONFIGS / name).read_text(encoding="utf-8").splitlines()
        assert "#" not in lines[line - 1] and not lines[line - 2].strip().startswith("#"), (name, line)


def test_dtype_aliases_are_torch_names() -> None:
    import torch

    for alias, canonical in ALIASES.items():
        assert getattr(torch, alias) is getattr(torch, canonical)
    for name in DTYPE_NAMES:
        assert isinstance(getattr(torch, name), torch.dtype)


def _spec(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(body)
    return p


def test_dtype_aliases_load_as_canonical_names(tmp_path: Path) -> None:
    p = _spec(tmp_path, """test_suite_config:
  files:
    - path: t.py
      tests:
        - names: [T::a]
          edits: {dtypes: {include: [{name: half}, {name: torch.double}], exclude: [{name: cfloat}]}}
  global:
    supported_dtypes: [half, float, double, long, int, bool, cfloat]
    supported_ops:
      - {name: add, dtypes: [half, long]}
""")
    g = load_spec(p).config
    assert [d.name for d in g.global_.supported_dtypes] == [
        "float16", "float32", "float64", "int64", "int32", "bool", "complex64"]
    assert [d.name for d in g.global_.op("add").dtypes] == ["float16", "int64"]
    e = g.files[0].tests[0].edits.dtypes
    assert [d.name for d in e.include] == ["float16", "float64"] and e.exclude[0].name == "complex64"


def test_every_bad_name_of_a_list_is_reported(tmp_path: Path) -> None:
    p = _spec(tmp_path, """test_suite_config:
  files:
    - path: t.py
      tests:
        - names:
            - T::ok
            - T::bad name
            - T::fine_*
            - 'T::also bad'
  global:
    supported_dtypes: [float16, floaty, half, int65]
""")
    got = [(e.line, e.col, e.message.split(";")[0]) for e in check_specs([p])]
    assert got == [(7, 15, "files.0.tests.0.names.1: invalid test name 'T::bad name'"),
                   (9, 15, "files.0.tests.0.names.3: invalid test name 'T::also bad'"),
                   (11, 33, "global.supported_dtypes.1.name: unknown dtype 'floaty'"),
                   (11, 47, "global.supported_dtypes.3.name: unknown dtype 'int65'")]


def test_comment_reason_counts_under_strict(tmp_path: Path) -> None:
    p = _spec(tmp_path, """test_suite_config:
  files:
    - path: t.py
      tests:
        # aten::resize_ is not implemented on Spyre
        - names: [T::a]
          mode: xfail
        - names: [T::b]
          mode: skip   # segfaults
        - names:
            - T::c   # complex not supported
            # in-device copy missing
            - T::d
            - T::e
          mode: xfail
        - names: [T::f]
          mode: xfail
  global:
    supported_ops:
      - name: gcd
        force_xfail: true  # buffer alignment
      - name: lcm
        force_xfail: true
""")
    errors = check_specs([p], strict=True)
    assert [(e.line, e.message.split(" needs")[0]) for e in errors] == [
        (17, "mode xfail"), (23, "force_xfail on op 'lcm'")]
    spec = load_spec(p)
    assert spec.test_reason(0, 0, 0) == "aten::resize_ is not implemented on Spyre"
    assert spec.test_reason(0, 1, 0) == "segfaults"
    assert [spec.test_reason(0, 2, i) for i in range(3)] == [
        "complex not supported", "in-device copy missing", "in-device copy missing"]
    assert spec.test_reason(0, 3, 0) is None


MODULE_TEST = """test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_modules.py
      unlisted_test_mode: skip
      tests:
        - names: ['*TestModule*::test_forward']
          tags: [model__tiny]
          edits:
            modules:
              include:
                - name: Linear_0
                  module_path: torch.nn.Linear
                  constructor_inputs: {args: [{value: 8}, {value: 4}], kwargs: {bias: {value: true}}}
                  forward_inputs:
                    - args: [{tensor: {shape: [2, 8], stride: null, dtype: torch.float32, device: spyre}}]
                      kwargs: {}
"""


def test_module_tests_format_loads(tmp_path: Path) -> None:
    t = load_spec(_spec(tmp_path, MODULE_TEST)).config.files[0].tests[0]
    assert t.names == ["*TestModule*::test_forward"]
    m = t.edits.modules.include[0]
    assert m.module_path == "torch.nn.Linear" and m.forward_inputs[0].tensors()[0].shape == [2, 8]
    args, kwargs = m.constructor_inputs.build("cpu")
    assert args == [8, 4] and kwargs == {"bias": True}


def test_model_ops_format_loads_and_bad_inputs_are_located(tmp_path: Path) -> None:
    good = """test_suite_config:
  files:
    - path: ${TORCH_DEVICE_ROOT}/tests/models/test_model_ops_v2.py
      tests:
        - names: [TestSpyreModelOps::test_model_ops_db]
          edits:
            ops:
              include:
                - name: torch.nn.functional.embedding
                  sample_inputs_func:
                    args:
                      - tensor: {shape: [1, 13], stride: [13, 1], dtype: torch.int64, init: randint,
                                 init_args: {high: 30}}
                      - tensor: {shape: [30, 8], dtype: torch.float32, init: rand}
                      - value: 0
                      - py: (slice(None, None, None), slice(0, 13, None))
                    kwargs: {scale_grad_by_freq: false}
"""
    op = load_spec(_spec(tmp_path, good)).config.files[0].tests[0].edits.ops.include[0]
    args, kwargs = op.sample_inputs_func.build("cpu", seed=1)
    assert args[0].shape == (1, 13) and int(args[0].max()) < 30 and args[2] == 0
    assert args[3] == (slice(None), slice(0, 13)) and kwargs == {"scale_grad_by_freq": False}
    bad = good.replace("init: randint,\n                                 init_args: {high: 30}",
                       "init: randint").replace("shape: [30, 8]", "shape: [30, 8], stride: [1]")
    msgs = [e.message for e in check_specs([_spec(tmp_path, bad)])]
    assert len(msgs) == 2 and "init randint needs init_args.high" in msgs[0] and "stride [1]" in msgs[1]
