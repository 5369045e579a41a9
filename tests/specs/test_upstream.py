"""Source-tree mode: a fake upstream checkout whose test file uses the real common_device_type."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from test_specs.upstream.rules import parse_variant as _parse
from test_specs.upstream.rules import resolve

FAKE_TEST = '''
import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase, run_tests


class TestFakeViews(TestCase):
    def check_on_cpu(self, t):
        assert t.device.type == "cpu", f"expected a CPU tensor, got {t.device}"

    @dtypes(torch.float16, torch.float32, torch.float64)
    def test_view_roundtrip(self, device, dtype):
        x = torch.arange(6, dtype=dtype).reshape(2, 3)
        y = x.to(device).t().t()
        self.assertEqual(y.cpu(), x)

    @dtypes(torch.float32)
    def test_needs_tolerance(self, device, dtype):
        self.assertEqual(torch.tensor([1.0], dtype=dtype), torch.tensor([1.05], dtype=dtype))

    @dtypes(torch.float32)
    def test_cpu_move(self, device, dtype):
        self.check_on_cpu(torch.ones(3, dtype=dtype, device=device))

    def test_always_fails(self, device):
        raise AssertionError("planted")

    def test_unlisted(self, device):
        pass


instantiate_device_type_tests(TestFakeViews, globals())

if __name__ == "__main__":
    run_tests()
'''

SPEC = '''
test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_fake_*.py
      unlisted_test_mode: skip
      reason: not reviewed for Spyre yet
      issue: fake-1
      tests:
        - names: [TestFakeViews::test_view_roundtrip]
        - names: [TestFakeViews::test_needs_tolerance]
          edits:
            dtypes:
              include:
                - {name: float32, precision: {atol: 0.1, rtol: 0.1}}
        - names: [TestFakeViews::test_cpu_move]
          edits:
            functions:
              cpu_move: [{name: check_on_cpu}]
        - names: [TestFakeViews::test_always_fails]
          mode: xfail
          reason: planted failure
          issue: fake-2
  global:
    supported_dtypes: [float16, float32]
'''


@pytest.fixture
def fake_tree(tmp_path: Path) -> tuple[Path, Path]:
    pytest.importorskip("spyre_backend")
    root = tmp_path / "pytorch"
    (root / "test").mkdir(parents=True)
    (root / "test" / "test_fake_views.py").write_text(FAKE_TEST, encoding="utf-8")
    spec = tmp_path / "upstream_spec.yaml"
    spec.write_text(textwrap.dedent(SPEC), encoding="utf-8")
    return root, spec


def test_resolve_torch_root_and_globs(tmp_path: Path) -> None:
    (tmp_path / "test" / "nn").mkdir(parents=True)
    for name in ("test/test_a.py", "test/test_b.py", "test/nn/test_c.py"):
        (tmp_path / name).write_text("")
    assert [p.name for p in resolve("${TORCH_ROOT}/test/test_*.py", tmp_path)] == ["test_a.py", "test_b.py"]
    assert [p.name for p in resolve("test/nn/test_*.py", tmp_path)] == ["test_c.py"]


def test_parse_uses_instantiate_test_metadata() -> None:
    import functools

    import torch

    class TestX:
        pass

    def test_foo(self, device, dtype):
        pass

    class Op:
        name, variant_test_name = "div", "floor_rounding"

    @functools.wraps(test_foo)
    def inst(self, param_kwargs={"device": "spyre:0", "dtype": torch.bfloat16, "op": Op()}):  # noqa: B006
        pass

    TestXSPYRE = type("TestXSPYRE", (TestX,), {"test_foo_div_floor_rounding_spyre_bfloat16": inst})
    assert _parse(TestXSPYRE, "test_foo_div_floor_rounding_spyre_bfloat16") == \
        ("TestX", "test_foo", "div.floor_rounding", "bfloat16")
    assert _parse(TestX, "test_foo") is None  # not an instantiated class


def test_expand_and_run_upstream_file(fake_tree: tuple[Path, Path], tmp_path: Path) -> None:
    from test_specs.expand.universe import expand
    from test_specs.run.runner import run_items

    root, spec = fake_tree
    items = {it.id.split("::", 3)[-1]: it for it in expand([spec], upstream=root)}
    # float64 is outside global.supported_dtypes: not instantiated into an item
    # test_unlisted: unlisted_test_mode skip deselects it at collection (torch-spyre: not built)
    assert sorted(items) == sorted([
        "test_always_fails_spyre", "test_cpu_move_spyre_float32", "test_needs_tolerance_spyre_float32",
        "test_view_roundtrip_spyre_float16", "test_view_roundtrip_spyre_float32"])
    it = items["test_view_roundtrip_spyre_float16"]
    assert it.id == "upstream_spec::test/test_fake_views.py::TestFakeViewsSPYRE::test_view_roundtrip_spyre_float16"
    assert it.upstream == "test/test_fake_views.py::TestFakeViews::test_view_roundtrip" and it.dtype == "float16"
    assert items["test_always_fails_spyre"].reason == "planted failure"
    assert items["test_needs_tolerance_spyre_float32"].tolerance.atol == 0.1

    ids = sorted(i.id for i in items.values())
    results = {r.id.rsplit("::", 1)[1]: r for r in
               run_items(ids, [spec], workdir=tmp_path / "w", upstream=root, reruns=0, timeout_s=60)}
    assert {k: r.outcome for k, r in results.items()} == {
        "test_always_fails_spyre": "xfailed",       # mode xfail
        "test_cpu_move_spyre_float32": "passed",    # cpu_move moved the device tensor
        "test_needs_tolerance_spyre_float32": "passed",  # the spec's atol 0.1 applied
        "test_view_roundtrip_spyre_float16": "passed",
        "test_view_roundtrip_spyre_float32": "passed",
    }
    assert results["test_view_roundtrip_spyre_float16"].upstream.endswith("TestFakeViews::test_view_roundtrip")
