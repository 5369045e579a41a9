"""``relay run --spec``: whole specs without selection (torch-spyre's run_test.sh), with an
upstream-style source tree, captured model-ops entries, JUnit XML and a JSON summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from relay.cli import app

UPSTREAM = '''
import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase


class TestTiny(TestCase):
    @dtypes(torch.float16, torch.float32)
    def test_roundtrip(self, device, dtype):
        x = torch.arange(4, dtype=dtype)
        self.assertEqual(x.to(device).cpu(), x)

    def test_broken(self, device):
        raise AssertionError("planted")

    def test_known_bad(self, device):
        raise AssertionError("planted xfail")

    def test_unlisted(self, device):
        raise AssertionError("never built")


instantiate_device_type_tests(TestTiny, globals())
'''

SPEC = """test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_tiny.py
      unlisted_test_mode: skip
      tests:
        - names: [TestTiny::test_roundtrip, TestTiny::test_broken]
        - names: [TestTiny::test_known_bad]
          mode: xfail  # planted
    - path: ${TORCH_DEVICE_ROOT}/tests/models/test_model_ops_v2.py
      tests:
        - names: [TestSpyreModelOps::test_model_ops_db]
          edits:
            ops:
              include:
                - name: torch.add
                  sample_inputs_func:
                    args:
                      - tensor: {shape: [3], dtype: torch.float16}
                      - tensor: {shape: [3], dtype: torch.float16}
  global:
    supported_dtypes: [half]
"""


def test_relay_run_whole_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("spyre_backend")
    root = tmp_path / "pytorch"
    (root / "test").mkdir(parents=True)
    (root / "test" / "test_tiny.py").write_text(UPSTREAM)
    spec = tmp_path / "tiny.yaml"
    spec.write_text(SPEC)
    monkeypatch.delenv("TORCH_DEVICE_ROOT", raising=False)
    junit = tmp_path / "out" / "junit.xml"
    res = CliRunner().invoke(app, ["run", "--spec", str(spec), "--upstream", str(root), "--json",
                                   "--junit", str(junit), "--workdir", str(tmp_path / "w")])
    assert res.exit_code == 1, res.output  # test_broken failed
    summary = json.loads(res.stdout)
    assert summary["counts"] == {"passed": 2, "failed": 1, "xfailed": 1}
    assert summary["total"] == 4 and Path(summary["junit"]) == junit and junit.exists()
    outcomes = {r["id"].rsplit("::", 1)[1]: r["outcome"] for r in summary["results"]}
    assert outcomes == {"test_broken_spyre": "failed", "test_known_bad_spyre": "xfailed",
                        "test_roundtrip_spyre_float16": "passed", "test_model_ops_db[torch.add#0]": "passed"}
    assert len(summary["problems"]) == 1 and "TORCH_DEVICE_ROOT} is unknown" in summary["problems"][0]
    assert summary["problems"][0].startswith(f"{spec.resolve()}:9:13: warning:")
    assert "test_roundtrip_spyre_float16" in junit.read_text()


def test_relay_run_bad_spec_is_a_message(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("test_suite_config:\n  files:\n    - path: x.py\n      mdoe: 1\n")
    res = CliRunner().invoke(app, ["run", "--spec", str(spec)])
    assert res.exit_code == 2 and "bad.yaml:4:7: unknown key 'mdoe'" in res.output
